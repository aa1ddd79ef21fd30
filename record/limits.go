package record

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/moq-export/moq-export/mux"
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

// reserve takes a place for a new recording (MaxRecordings) when Admit
// lets it and the disk has room (MinFreeBytes); release gives it back.
func (r *Recorder) reserve() (release func(), err error) {
	if r.opts.Admit != nil {
		if err := r.opts.Admit(); err != nil {
			return nil, &LimitError{Limit: LimitOverload, Err: err}
		}
	}
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
	if opts.MinFreeBytes > 0 && o.count.n-o.checkedAt >= freeCheckEvery {
		o.checkedAt = o.count.n
		if err := o.r.lowOnSpace(o.info.Path); err != nil {
			o.cut(err)
		}
	}
}

// The size limit (Options.MaxFileBytes) is kept before a frame is written,
// not after: a file never passes it. What writing a frame and then
// finishing the file would bring the file to is estimated generously
// (frameCost: the payload, 1/16 more for the container's packets, 32
// bytes of headers; the frames a muxer holds back, as MP4 does until a
// fragment is whole; the header still to come; what the finish adds, cues
// or an index, sizeReserve). A frame that would pass the limit is not
// written: without {n} in the template the recording ends there; with it
// the next file is started at a keyframe (split by size, as OBS does): at
// each keyframe that may cut, the next file starts when the largest group
// so far would not fit any more, and if a group still outgrows its
// estimate, its frames past the limit are dropped (counted, warned once)
// until the keyframe that starts the next file.

// sizeGuard is an output's bookkeeping for the size limit.
type sizeGuard struct {
	held    int64 // estimated bytes of frames the muxer holds, not yet in count
	group   int64 // the file's bytes (written and held) when the current group started
	inGroup bool  // a group started in this file
	frames  int64 // frames written
	full    bool  // a frame was refused: nothing more is written to this file
	dropped int64 // frames refused in split mode
}

type trackKind struct {
	id   int
	kind mux.Kind
}

// frameCost estimates the bytes frame f takes in a file.
func frameCost(f mux.Frame) int64 { return int64(len(f.Payload))*17/16 + 32 }

// headerReserve is room for a container's header, written with the first
// frame (MKV keeps 4 KiB in it for tracks added later).
const headerReserve = 8 << 10

// sizeReserve is what finishing the file may still add: cues, an index,
// a moov.
func (o *output) sizeReserve() int64 {
	perFrame := int64(16) // MKV cues
	if o.info.Format == string(MP4) {
		perFrame = 48 // the moov's sample tables
	}
	r := 2048 + perFrame*o.size.frames
	if o.count.n == 0 {
		r += headerReserve
	}
	return r
}

// splitsBySize reports whether MaxFileBytes starts the next file rather
// than ending the recording: the template numbers the files.
func (r *Recorder) splitsBySize() bool { return r.opts.MaxFileBytes > 0 && r.numbersFiles() }

// cutsGroups reports whether a keyframe of track id starts a group (may
// cut): a video keyframe, or any keyframe without video.
func (o *output) cutsGroups(f mux.Frame) bool {
	if !f.Keyframe {
		return false
	}
	if !o.hasVideo {
		return true
	}
	for _, k := range o.kinds {
		if k.id == f.TrackID {
			return k.kind == mux.Video
		}
	}
	return false
}

// estimate is the file's size if f were written and the file finished.
func (o *output) estimate(f mux.Frame) int64 {
	return o.count.n + o.size.held + frameCost(f) + o.sizeReserve()
}

// noRoomForGroup reports, at keyframe f, whether the group it starts
// would not fit in the file: the next file should start with it.
func (o *output) noRoomForGroup(f mux.Frame) bool {
	max := o.r.opts.MaxFileBytes
	return max > 0 && o.size.frames > 0 && (o.size.full || o.estimate(f)+o.rec.largestGroup > max)
}

// sizeCapped reports whether f must not be written: it would take the file
// past MaxFileBytes. Without {n} that ends the recording.
func (o *output) sizeCapped(f mux.Frame) bool {
	max := o.r.opts.MaxFileBytes
	if max <= 0 {
		return false
	}
	if !o.size.full && o.estimate(f) <= max {
		return false
	}
	if !o.size.full {
		o.size.full = true
		if !o.r.splitsBySize() {
			o.cut(&LimitError{Limit: LimitFileBytes, Have: o.count.n, Max: max, Path: o.info.Path})
		} else {
			o.r.log.Warn("a group outgrew the room left before the size limit: its frames up to the next keyframe are dropped, the next file starts there",
				"output", o.info.Path, "max_bytes", max)
		}
	}
	if o.r.splitsBySize() {
		o.size.dropped++
	}
	return true
}

// noteSize accounts for f, written when the output held before bytes.
func (o *output) noteSize(f mux.Frame, before int64) {
	if o.r.opts.MaxFileBytes <= 0 {
		return
	}
	if o.cutsGroups(f) {
		// The largest group of the recording, not of this file: the
		// next file predicts its groups from the ones before. A group is
		// what the file grew by from its keyframe to the next, with a
		// quarter more for a group larger than those seen.
		if o.size.inGroup {
			o.rec.largestGroup = max(o.rec.largestGroup, (before+o.size.held-o.size.group)*5/4)
		}
		o.size.group, o.size.inGroup = before+o.size.held, true
	}
	o.size.frames++
	if o.count.n != before {
		o.size.held = 0 // the muxer wrote what it held
	} else {
		o.size.held += frameCost(f)
	}
}

// Stats counts, besides the muxer's, the frames the size limit refused in
// split mode as dropped.
func (o *output) Stats() mux.Stats {
	st := o.Muxer.Stats()
	st.Dropped += o.size.dropped
	return st
}
