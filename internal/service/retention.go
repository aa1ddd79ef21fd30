package service

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/moq-export/moq-export/mux/hls"
)

// Retention bounds what the finished recordings under the root keep.
// It deletes two kinds of unit, and nothing else:
//
//   - A finished recording file (.flv, .mkv, .webm, .ts, .mp4) outside a
//     package, by its modification time. Other names and hidden names
//     (an MP4 being finished) are never looked at.
//   - An HLS/DASH package whose recording has ended, whole: its own
//     files in its directory (or object-store prefix), those mux/hls
//     names for it (hls.InPackage: its playlists, MPD and state, each
//     rendition's media playlist, media file, init segments and
//     segments), and its manifest directories (.manifests,
//     .manifests.tmp, with the links into them a killed recording
//     leaves), then the directory once empty, by the age of its newest
//     file. Its playlists go first and its state (NAME.state.json, which
//     marks a directory as a package) last, so nothing is left naming a
//     file that is gone. A package being recorded is never touched: its
//     media files and init segments are .mp4 files its playlists keep
//     naming, some written for its whole recording. Other files beside a
//     package (in the root, or a directory shared with other recordings)
//     are not its: a recording there is a unit of its own, anything else
//     is left alone. Packages that share a directory share their
//     rendition files, so they are one unit.
//
// Units whose newest file is older than Age are deleted, then the oldest
// units until all hold at most Size bytes (the units being recorded
// count in the total). "Being recorded" is known for the recordings of
// this service (its Hooks); another process's recordings on the same
// root are kept only by the age of their newest file.
type Retention struct {
	Age  time.Duration // 0: no bound
	Size int64         // 0: no bound
	// Every is how often the root is swept (default 1 minute).
	Every time.Duration
	// Store is where the recordings are (nil: the files under Root); an
	// object store's bucket prefix, for example.
	Store RetentionStore
}

// RetentionStore lists and deletes recordings for the retention.
type RetentionStore interface {
	// List lists the recordings, each named as FileEvents name it (a
	// path, a URL); one that cannot list yet returns an error and the
	// sweep is skipped.
	List(ctx context.Context) ([]Kept, error)
	Delete(ctx context.Context, name string) error
}

// Kept is a recording a RetentionStore holds.
type Kept struct {
	Name     string
	Size     int64
	Modified time.Time
}

// rootFiles is the RetentionStore of the files under a directory.
type rootFiles string

func (r rootFiles) List(context.Context) ([]Kept, error) {
	var files []Kept
	err := filepath.WalkDir(string(r), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		files = append(files, Kept{Name: path, Size: info.Size(), Modified: info.ModTime()})
		return nil
	})
	return files, err
}

func (rootFiles) Delete(_ context.Context, name string) error { return os.Remove(name) }

// removeDir removes what is left of a package whose files were deleted:
// the links and hidden directories in dir (its manifests), then dir
// when that leaves it empty (a package in a package's subdirectory
// keeps it); never the root.
func (r rootFiles) removeDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			errs = append(errs, os.Remove(p))
		case e.IsDir() && slices.Contains(manifestDirs, e.Name()):
			errs = append(errs, os.RemoveAll(p))
		}
	}
	if filepath.Clean(dir) != filepath.Clean(string(r)) {
		if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrExist) { // not empty
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Enabled reports whether any bound is set.
func (r Retention) Enabled() bool { return r.Age > 0 || r.Size > 0 }

// recordingExts are the files retention may delete outside a package.
var recordingExts = []string{".flv", ".mkv", ".webm", ".ts", ".mp4"}

// stateSuffix ends the name of a package's state, which every package
// (HLS/DASH, mux/hls) holds from its first segment on and keeps.
const stateSuffix = hls.StateSuffix

// unit is what retention keeps or deletes as one: a recording file, or
// a package with every file in it.
type unit struct {
	dir    string // the package's directory or prefix; "" for a file
	files  []Kept
	size   int64
	newest time.Time
}

// splitName splits a file's path, or an object's URL, into its
// directory and its base name.
func splitName(name string) (dir, base string) {
	i := strings.LastIndexAny(name, "/"+string(filepath.Separator))
	if i < 0 {
		return "", name
	}
	return name[:i], name[i+1:]
}

// manifestDirs are the hidden directories a package's manifests are
// written through while it is recorded (mux/hls, manifests.go); a package
// killed while recording keeps them, its playlists links into them.
var manifestDirs = []string{".manifests", ".manifests.tmp"}

// owner returns the directory a file in dir belongs to: dir itself, or,
// for a package's manifest directory, the package's; hidden reports the
// latter.
func owner(dir string) (d string, hidden bool) {
	if parent, base := splitName(dir); parent != "" && slices.Contains(manifestDirs, base) {
		return parent, true
	}
	return dir, false
}

// norm names a file as the listing does: a local path made absolute, a
// URL as it is.
func norm(name string) string {
	if strings.Contains(name, "://") {
		return name
	}
	if abs, err := filepath.Abs(name); err == nil {
		return abs
	}
	return name
}

// runningPackages returns the directories of the packages this service
// records now, each with the names of their states (hls.InPackage).
func (s *Service) runningPackages() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	pkgs := map[string][]string{}
	for p := range s.writing {
		if s.packages[p] <= 0 {
			continue
		}
		d, base := splitName(norm(p))
		d, _ = owner(d)
		// The playlist names the package (NAME.m3u8, or NAME.mpd): its
		// state is NAME.state.json.
		pkgs[d] = append(pkgs[d], strings.TrimSuffix(base, path.Ext(base))+hls.StateSuffix)
	}
	return pkgs
}

// units groups the listed files into what retention keeps or deletes as
// one, oldest (by its newest file) first.
func (s *Service) units(all []Kept) []*unit {
	// The packages by directory, each with its states' names: those this
	// service records, and those whose state is listed.
	pkgs := s.runningPackages()
	for _, f := range all {
		dir, base := splitName(f.Name)
		if strings.HasSuffix(base, stateSuffix) {
			d, _ := owner(dir)
			pkgs[d] = append(pkgs[d], base)
		}
	}
	ofPackage := func(d, base string) bool {
		return slices.ContainsFunc(pkgs[d], func(state string) bool { return hls.InPackage(state, base) })
	}
	byDir := map[string]*unit{}
	var out []*unit
	for _, f := range all {
		dir, base := splitName(f.Name)
		d, hidden := owner(dir)
		var u *unit
		switch {
		case len(pkgs[d]) > 0 && (hidden || ofPackage(d, base)):
			if u = byDir[d]; u == nil {
				u = &unit{dir: d}
				byDir[d] = u
				out = append(out, u)
			}
		case hidden || strings.HasPrefix(base, ".") || !slices.Contains(recordingExts, strings.ToLower(path.Ext(base))):
			continue
		default:
			u = &unit{}
			out = append(out, u)
		}
		u.files = append(u.files, f)
		u.size += f.Size
		if f.Modified.After(u.newest) {
			u.newest = f.Modified
		}
	}
	slices.SortFunc(out, func(a, b *unit) int { return a.newest.Compare(b.newest) })
	return out
}

// recording reports whether a recording of this service writes into u
// now: a package of its directory being recorded, a file being written.
func (s *Service) recording(u *unit) bool {
	if u.dir == "" {
		return s.isWriting(u.files[0].Name)
	}
	return len(s.runningPackages()[u.dir]) > 0
}

// deleteOrder is the order a package's files are deleted in: its
// playlists and manifests first (nothing then names a file gone), its
// state last (until then the rest is still known as a package).
func deleteOrder(name string) int {
	_, base := splitName(name)
	base = strings.ToLower(base)
	switch {
	case strings.HasSuffix(base, stateSuffix):
		return 2
	case strings.HasSuffix(base, ".m3u8"), strings.HasSuffix(base, ".mpd"):
		return 0
	}
	return 1
}

// dirRemover is a RetentionStore with directories (files on disk):
// what a package leaves beside its files (links, hidden directories)
// and its directory go with it.
type dirRemover interface {
	removeDir(dir string) error
}

// RunRetention sweeps the root every Retention.Every until ctx ends.
func (s *Service) RunRetention(ctx context.Context) {
	ret := s.opts.Retention
	if !ret.Enabled() {
		return
	}
	every := ret.Every
	if every <= 0 {
		every = time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.Sweep(time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep applies the retention once, as at time now, and returns how many
// files it deleted. Sweeps run one at a time: two at once would each list
// what the other is deleting and, counting a file already gone, delete
// more than the size bound asks.
func (s *Service) Sweep(now time.Time) int {
	s.sweepMu.Lock()
	defer s.sweepMu.Unlock()
	ret := s.opts.Retention
	st := ret.Store
	if st == nil {
		st = rootFiles(s.opts.Root)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	all, err := st.List(ctx)
	if err != nil {
		s.log.Debug("retention: cannot list the recordings; trying at the next sweep", "err", err)
		return 0
	}
	units := s.units(all)
	var total int64
	for _, u := range units {
		total += u.size
	}
	deleted := 0
	remove := func(u *unit, reason string) bool {
		if s.recording(u) {
			return false
		}
		files := u.files
		if u.dir != "" {
			files = slices.Clone(files)
			slices.SortStableFunc(files, func(a, b Kept) int { return deleteOrder(a.Name) - deleteOrder(b.Name) })
		}
		var gone, bytes int64
		for _, f := range files {
			// Asked again before each file: a recording may have
			// opened the package again (to continue it) meanwhile.
			if gone > 0 && s.recording(u) {
				s.log.Warn("retention: a recording opened the package being deleted; the rest is kept", "package", u.dir)
				break
			}
			if err := st.Delete(ctx, f.Name); err != nil {
				s.log.Warn("retention: cannot delete", "path", f.Name, "err", err)
				continue
			}
			gone++
			bytes += f.Size
			total -= f.Size
			deleted++
			s.metrics.retDeleted.WithLabelValues(reason).Inc()
			s.metrics.retBytes.Add(float64(f.Size))
			if u.dir == "" {
				s.log.Info("retention: deleted", "path", f.Name, "reason", reason, "size", f.Size, "age", now.Sub(f.Modified).Round(time.Second))
			}
		}
		if u.dir == "" {
			return gone > 0
		}
		if dr, ok := st.(dirRemover); ok && int(gone) == len(files) {
			if err := dr.removeDir(u.dir); err != nil {
				s.log.Warn("retention: cannot remove what is left of the package", "package", u.dir, "err", err)
			}
		}
		s.log.Info("retention: deleted a package", "package", u.dir, "reason", reason, "files", gone, "size", bytes, "age", now.Sub(u.newest).Round(time.Second))
		return gone > 0
	}
	kept := units[:0]
	for _, u := range units {
		if ret.Age > 0 && now.Sub(u.newest) > ret.Age && remove(u, "age") {
			continue
		}
		kept = append(kept, u)
	}
	for _, u := range kept {
		if ret.Size <= 0 || total <= ret.Size {
			break
		}
		remove(u, "size")
	}
	return deleted
}
