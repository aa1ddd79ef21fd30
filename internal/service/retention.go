package service

import (
	"context"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Retention bounds what the finished recordings under the root keep:
// files older than Age are deleted, then the oldest until they hold at
// most Size bytes. A file being written is never deleted, and only files
// of the recording formats (.flv, .mkv, .webm, .ts, .mp4) are looked at.
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

// Enabled reports whether any bound is set.
func (r Retention) Enabled() bool { return r.Age > 0 || r.Size > 0 }

// recordingExts are the files retention may delete.
var recordingExts = []string{".flv", ".mkv", ".webm", ".ts", ".mp4"}

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
	var files []Kept
	for _, f := range all {
		if slices.Contains(recordingExts, strings.ToLower(path.Ext(f.Name))) {
			files = append(files, f)
		}
	}
	// Oldest (by the time it was last written) first.
	slices.SortFunc(files, func(a, b Kept) int { return a.Modified.Compare(b.Modified) })
	var total int64
	for _, f := range files {
		total += f.Size
	}
	deleted := 0
	remove := func(f Kept, reason string) bool {
		if s.isWriting(f.Name) {
			return false
		}
		if err := st.Delete(ctx, f.Name); err != nil {
			s.log.Warn("retention: cannot delete", "path", f.Name, "err", err)
			return false
		}
		total -= f.Size
		deleted++
		s.metrics.retDeleted.WithLabelValues(reason).Inc()
		s.metrics.retBytes.Add(float64(f.Size))
		s.log.Info("retention: deleted", "path", f.Name, "reason", reason, "size", f.Size, "age", now.Sub(f.Modified).Round(time.Second))
		return true
	}
	kept := files[:0]
	for _, f := range files {
		if ret.Age > 0 && now.Sub(f.Modified) > ret.Age && remove(f, "age") {
			continue
		}
		kept = append(kept, f)
	}
	for _, f := range kept {
		if ret.Size <= 0 || total <= ret.Size {
			break
		}
		remove(f, "size")
	}
	return deleted
}
