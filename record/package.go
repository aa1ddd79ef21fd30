package record

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/hls"
)

// ErrPackage is wrapped by the refusal to write a package format (HLS) to
// an output that holds one stream or one file per recording.
var ErrPackage = errors.New("the format writes a package of files")

// PackageOutput is an Output that also holds packages of named files, what
// a format like HLS writes per recording (segments, playlists, a
// manifest). Files implements it; an object store implements it with
// objects under a prefix.
type PackageOutput interface {
	Output
	// CreatePackage opens (creates, or opens again to continue) the
	// package of broadcast, recorded from start. The broadcast name is
	// untrusted.
	CreatePackage(broadcast string, start time.Time) (Package, error)
}

// Package is where one recording's files go.
type Package interface {
	// WriteFile stores a complete file named name (a plain name, no
	// directories) atomically: readers see the old content or the new,
	// never a part. The package writes each segment before the playlists
	// that name it.
	WriteFile(name string, data []byte) error
	// ReadFile returns a file of the package; an error wrapping
	// fs.ErrNotExist when it has none (a new package).
	ReadFile(name string) ([]byte, error)
	// Playlist is the name of the package's main file (its multivariant
	// playlist), Name its full name in logs and events.
	Playlist() string
	Name() string
	// Close ends the writing of the package.
	Close() error
}

// PackageMuxOptions are what a package format's muxer is given.
type PackageMuxOptions struct {
	SegmentDuration time.Duration
	// Start is the wall clock of the first frame; zero: when it arrives.
	Start time.Time
	// WallClock maps a frame timestamp (µs) to wall-clock time when the
	// broadcast's catalog has a clock (catalog.Clock.At), nil otherwise:
	// EXT-X-PROGRAM-DATE-TIME follows it (hls.Options.Clock).
	WallClock func(ts int64) time.Time
	Logger    *slog.Logger
	// SegmentFiles: a file per segment even where the package's files
	// can grow (Options.HLSSegmentFiles).
	SegmentFiles bool
}

// CreatePackage opens the package directory of broadcast: the template
// expanded (segment 0) names the main playlist, ending in .m3u8 (or
// .mpd, whose stem names both manifests); a path without either names
// the directory, whose playlist is index.m3u8. An existing package is
// opened again, to be continued: a package is never overwritten.
func (f *files) CreatePackage(broadcast string, start time.Time) (Package, error) {
	p := f.t.String()
	if f.t.IsTemplate() {
		var err error
		if p, err = f.t.Expand(broadcast, 0, start); err != nil {
			return nil, err
		}
	}
	dir, playlist := packagePath(p)
	release, err := claimPackageDir(dir, playlist)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		release()
		return nil, fmt.Errorf("creating the package directory: %w; check the path and its permissions", err)
	}
	st, err := hls.OpenDirStore(dir)
	if err != nil {
		release()
		return nil, fmt.Errorf("opening the package directory: %w", err)
	}
	return &dirPackage{st: st, dir: dir, playlist: playlist, release: release}, nil
}

// packageDirs are the locations this process records a package into now
// (a directory's absolute path, an object store prefix's URL), each with
// its playlist: every output and Recorder of the process (a service's API
// starts each make their own) share it.
var packageDirs = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

// claimPackageDir claims directory dir for the package whose multivariant
// playlist is playlist, until release (see ClaimPackage): its files are
// the names of its regular entries and links. A package being recorded
// holds its manifests as links into its manifest directories
// (hls.DirStore): names, not only files.
func claimPackageDir(dir, playlist string) (release func(), err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("the package directory %s: %w", dir, err)
	}
	return claimPackage(abs, dir, playlist, func() ([]string, error) {
		ents, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("reading the package directory: %w; check the path and its permissions", err)
		}
		names := make([]string, 0, len(ents))
		for _, e := range ents {
			if !e.IsDir() {
				names = append(names, e.Name())
			}
		}
		return names, nil
	})
}

// ClaimPackage claims where, the location of a package that is not a local
// directory (an object store's prefix, as a URL: s3://BUCKET/rec), for the
// package whose multivariant playlist is playlist, until release. Every
// package names its files alike (v0.mp4, a0.mp4, v0.m3u8, .manifests), so
// a location holds one package: it is refused (a *PackageDirError) while
// this process records a package there (another, or the same one: two
// writers of one package), and when names, the names of the files directly
// at where (listed once where is claimed), hold another package's state
// (NAME.state.json of another NAME: a run before, another process). The
// same package's state is a package to continue (a restart), which is
// taken. A PackageOutput calls it in CreatePackage and release in the
// Package's Close, as Files does for directories.
func ClaimPackage(where, playlist string, names func() ([]string, error)) (release func(), err error) {
	return claimPackage(where, where, playlist, names)
}

// claimPackage is ClaimPackage of the location key names in this
// process's claims, dir in errors.
func claimPackage(key, dir, playlist string, names func() ([]string, error)) (release func(), err error) {
	packageDirs.Lock()
	if other, busy := packageDirs.m[key]; busy {
		packageDirs.Unlock()
		return nil, &PackageDirError{Dir: dir, Playlist: playlist, Other: other, Recording: true}
	}
	packageDirs.m[key] = playlist
	packageDirs.Unlock()
	var once sync.Once
	release = func() {
		once.Do(func() {
			packageDirs.Lock()
			delete(packageDirs.m, key)
			packageDirs.Unlock()
		})
	}
	// Read with the claim held, not the lock: a store's listing takes a
	// round trip or more, and other locations' claims need not wait.
	held, err := names()
	if err != nil {
		release()
		return nil, err
	}
	if other, ok := hls.OtherPackage(held, playlist); ok {
		release()
		return nil, &PackageDirError{Dir: dir, Playlist: playlist, Other: other}
	}
	return release, nil
}

// PackageTemplate is the template the packages are named by.
func (f *files) PackageTemplate() Template { return f.t }

// checkPackages refuses, before anything is recorded, a RecordAll whose
// HLS/DASH packages of different broadcasts would share a directory
// (Template.CheckPackages).
func (r *Recorder) checkPackages() error {
	if !r.opts.Format.Package() || r.opts.Container != nil {
		return nil
	}
	po, ok := r.opts.Output.(PackageTemplateOutput)
	if !ok {
		return nil
	}
	if err := po.PackageTemplate().CheckPackages(); err != nil {
		return fmt.Errorf("record: every broadcast: %w", err)
	}
	return nil
}

// dirPackage is a package in a directory, written through hls.DirStore
// (an os.Root, so nothing leaves the directory): a segment in place, a
// playlist swapped with its earlier version atomically.
type dirPackage struct {
	st       *hls.DirStore
	dir      string
	playlist string
	release  func() // the directory's claim (claimPackageDir)
}

func (d *dirPackage) Playlist() string { return d.playlist }
func (d *dirPackage) Name() string     { return filepath.Join(d.dir, d.playlist) }

func (d *dirPackage) WriteFile(name string, data []byte) error {
	if err := d.st.WriteFile(name, data); err != nil {
		return &WriteError{Path: filepath.Join(d.dir, name), Err: err}
	}
	return nil
}

// WriteNewFile writes a segment in place: no playlist names it before it
// is complete (hls.NewFileStore), so it needs no temporary name and swap.
func (d *dirPackage) WriteNewFile(name string, data []byte) error {
	if err := d.st.WriteNewFile(name, data); err != nil {
		return &WriteError{Path: filepath.Join(d.dir, name), Err: err}
	}
	return nil
}

func (d *dirPackage) ReadFile(name string) ([]byte, error) { return d.st.ReadFile(name) }

// Hold and Release make a directory package an hls.BatchStore: the
// manifests of a boundary show at once, swapped in one exchange.
func (d *dirPackage) Hold() { d.st.Hold() }

func (d *dirPackage) Release() error {
	if err := d.st.Release(); err != nil {
		return &WriteError{Path: d.dir, Err: err}
	}
	return nil
}

// WriteRange, TruncateRange and ReadRange make a directory package an
// hls.RangeStore: each rendition one media file, its segments appended
// and named by byte range.
func (d *dirPackage) WriteRange(name string, off int64, data []byte) error {
	if err := d.st.WriteRange(name, off, data); err != nil {
		return &WriteError{Path: filepath.Join(d.dir, name), Err: err}
	}
	return nil
}

func (d *dirPackage) TruncateRange(name string, size int64) error {
	if err := d.st.TruncateRange(name, size); err != nil {
		return &WriteError{Path: filepath.Join(d.dir, name), Err: err}
	}
	return nil
}

func (d *dirPackage) ReadRange(name string, off int64, n int) ([]byte, error) {
	return d.st.ReadRange(name, off, n)
}

func (d *dirPackage) Close() error {
	defer d.release()
	return d.st.Close()
}

// openPackage opens the package of recording rec with the format's
// muxer over it, as open does for a file.
func (r *Recorder) openPackage(rec *Recording, po PackageOutput) (mux.Muxer, error) {
	name := rec.name
	start := rec.fileStart(0)
	p, err := po.CreatePackage(name, start)
	if err != nil {
		return nil, err
	}
	pf := &packageFile{p: p}
	cw := &countWriter{w: pf}
	pf.count = cw
	rec.mu.Lock()
	wall := rec.wall
	rec.mu.Unlock()
	var store Package = countingPackage{Package: p, count: cw}
	if rp, ok := p.(rangePackage); ok {
		store = countingRangePackage{countingPackage: countingPackage{Package: p, count: cw}, r: rp}
	}
	m := muxers[r.opts.Format].pkg(store, PackageMuxOptions{
		SegmentDuration: r.opts.HLSSegmentDuration, SegmentFiles: r.opts.HLSSegmentFiles, WallClock: wall, Logger: r.log.With("output", p.Name())})
	info := FileInfo{Path: p.Name(), Broadcast: name, Format: string(r.opts.Format), Start: start.UTC()}
	r.log.Info("writing", "path", info.Path, "format", r.opts.Format, "broadcast", name)
	rec.fileOpened(info)
	if r.opts.OnFile != nil {
		r.opts.OnFile(FileEvent{File: info, Recording: rec})
	}
	return &output{Muxer: m, file: pf, count: cw, info: info, r: r, rec: rec, cut: rec.cancel}, nil
}

// countingPackage counts the bytes written into a package.
type countingPackage struct {
	Package
	count *countWriter
}

func (c countingPackage) WriteFile(name string, data []byte) error {
	err := c.Package.WriteFile(name, data)
	if err == nil {
		c.count.n += int64(len(data))
	}
	return err
}

// Hold and Release pass the Writer's publications on to a package that
// shows them at once (hls.BatchStore); to any other, each file shows when
// written.
func (c countingPackage) Hold() {
	if b, ok := c.Package.(hls.BatchStore); ok {
		b.Hold()
	}
}

func (c countingPackage) Release() error {
	if b, ok := c.Package.(hls.BatchStore); ok {
		return b.Release()
	}
	return nil
}

// WriteNewFile writes a file no playlist names yet in place when the
// package can (hls.NewFileStore), else as WriteFile does.
func (c countingPackage) WriteNewFile(name string, data []byte) error {
	nf, ok := c.Package.(interface {
		WriteNewFile(name string, data []byte) error
	})
	if !ok {
		return c.WriteFile(name, data)
	}
	err := nf.WriteNewFile(name, data)
	if err == nil {
		c.count.n += int64(len(data))
	}
	return err
}

// rangePackage is a Package whose files can grow in place
// (hls.RangeStore): a directory.
type rangePackage interface {
	WriteRange(name string, off int64, data []byte) error
	TruncateRange(name string, size int64) error
	ReadRange(name string, off int64, n int) ([]byte, error)
}

// countingRangePackage is a countingPackage over a rangePackage, which
// counts the bytes written into its media files too.
type countingRangePackage struct {
	countingPackage
	r rangePackage
}

func (c countingRangePackage) WriteRange(name string, off int64, data []byte) error {
	err := c.r.WriteRange(name, off, data)
	if err == nil {
		c.count.n += int64(len(data))
	}
	return err
}

func (c countingRangePackage) TruncateRange(name string, size int64) error {
	return c.r.TruncateRange(name, size)
}

func (c countingRangePackage) ReadRange(name string, off int64, n int) ([]byte, error) {
	return c.r.ReadRange(name, off, n)
}

// packageFile is a package seen as the File of a recording's output:
// closing it closes the package; its size is the bytes written into it.
type packageFile struct {
	p     Package
	count *countWriter
}

func (pf *packageFile) Write([]byte) (int, error) {
	return 0, fmt.Errorf("record: a package is written file by file: %w", ErrPackage)
}
func (pf *packageFile) Close() error { return pf.p.Close() }
func (pf *packageFile) Name() string { return pf.p.Name() }
func (pf *packageFile) Size() int64  { return pf.count.n }
