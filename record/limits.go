package record

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// What one publisher (or a crowd of them) can cost a recorder: the number
// of recordings at once (Options.MaxRecordings), the size of one output
// file (Options.MaxFileBytes) and the free space left on the output's
// file system (Options.MinFreeBytes). A refused recording never opens a
// file; a cut one is finished like a recording whose context ended, so
// its files stay playable.

// ErrLimit is wrapped by the reasons a recording was refused or cut.
var ErrLimit = errors.New("record: limit reached")

// freeCheckEvery is how many bytes an output writes between two looks at
// the free space (a statfs each): no timer, nothing while idle.
var freeCheckEvery int64 = 4 << 20

// FreeSpace returns the bytes available to this user on the file system
// holding path (its nearest existing parent when path does not exist
// yet). It is the default of Options.FreeSpace.
func FreeSpace(path string) (int64, error) {
	dir := path
	for {
		var st unix.Statfs_t
		err := unix.Statfs(dir, &st)
		if err == nil {
			return int64(st.Bavail) * int64(st.Bsize), nil
		}
		parent := filepath.Dir(dir)
		if !errors.Is(err, os.ErrNotExist) || parent == dir {
			return 0, fmt.Errorf("free space of %s: %w", path, err)
		}
		dir = parent
	}
}

// outputDir is the directory the Output writes under ("" for a stream).
func (r *Recorder) outputDir() string {
	if t, ok := templateOf(r.opts.Output); ok {
		if d := t.Dir(); d != "" {
			return d
		}
		return "."
	}
	return ""
}

// lowOnSpace returns why the output's file system is below
// Options.MinFreeBytes (nil when it is not, or nothing is checked).
func (r *Recorder) lowOnSpace(path string) error {
	if r.opts.MinFreeBytes <= 0 || path == "" {
		return nil
	}
	free, err := r.freeSpace(path)
	if err != nil {
		r.log.Warn("cannot tell the free disk space; going on", "path", path, "err", err)
		return nil
	}
	if free < r.opts.MinFreeBytes {
		return &LimitError{Limit: LimitFreeBytes, Have: free, Max: r.opts.MinFreeBytes, Path: path}
	}
	return nil
}

func (r *Recorder) freeSpace(path string) (int64, error) {
	if r.opts.FreeSpace != nil {
		return r.opts.FreeSpace(path)
	}
	return FreeSpace(path)
}

// reserve takes a place for a new recording (MaxRecordings) when the disk
// has room (MinFreeBytes); release gives it back.
func (r *Recorder) reserve() (release func(), err error) {
	if err := r.lowOnSpace(r.outputDir()); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.opts.MaxRecordings > 0 && r.reserved >= r.opts.MaxRecordings {
		return nil, &LimitError{Limit: LimitRecordings, Have: int64(r.reserved), Max: int64(r.opts.MaxRecordings)}
	}
	r.reserved++
	return func() {
		r.mu.Lock()
		r.reserved--
		r.mu.Unlock()
	}, nil
}

// checkOutput is called after each frame an output wrote: it cuts the
// recording (cut) once the file reached MaxFileBytes, or the disk fell
// below MinFreeBytes (looked at every freeCheckEvery bytes).
func (o *output) checkOutput() {
	opts := &o.r.opts
	if o.cut == nil {
		return
	}
	if rf, ok := o.file.(RemoteFile); ok {
		if err := rf.Cut(); err != nil {
			o.cut(err)
			return
		}
	}
	if opts.MaxFileBytes > 0 && o.count.n >= opts.MaxFileBytes {
		o.cut(&LimitError{Limit: LimitFileBytes, Have: o.count.n, Max: opts.MaxFileBytes, Path: o.info.Path})
		return
	}
	if opts.MinFreeBytes > 0 && o.count.n-o.checkedAt >= freeCheckEvery {
		o.checkedAt = o.count.n
		if err := o.r.lowOnSpace(o.info.Path); err != nil {
			o.cut(err)
		}
	}
}

// byteSize formats n for people: 1.5 GiB, 300 MiB, 12 KiB, 512 B.
func byteSize(n int64) string {
	const k = 1024
	switch {
	case n >= k*k*k:
		return fmt.Sprintf("%.3g GiB", float64(n)/(k*k*k))
	case n >= k*k:
		return fmt.Sprintf("%.3g MiB", float64(n)/(k*k))
	case n >= k:
		return fmt.Sprintf("%.3g KiB", float64(n)/k)
	}
	return fmt.Sprintf("%d B", n)
}
