package record

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux/segment"
)

// Recording is one broadcast being recorded: a value a service holds. It
// tells its progress (Stats, Files, Tracks) and is stopped, split or
// marked alone (Stop, Split, Chapter). Recorder.Start returns one; Record
// and RecordAll make them too, and Recorder.Recordings lists those
// running. It is safe for concurrent use.
type Recording struct {
	id     string
	seq    int64
	path   string
	r      *Recorder
	src    Source
	start  time.Time
	parent context.Context // the ctx the recording was started with
	ctx    context.Context // parent, ended by Stop or a limit
	cancel context.CancelCauseFunc
	done   chan struct{}

	mu     sync.Mutex
	state  State
	name   string
	bc     *model.Broadcast
	ex     *export.Export
	tracks *countTracks
	seg    *segment.Muxer
	// wall maps media time to wall time: the first catalog's clock (nil
	// without one). Set before the first output opens.
	wall func(ts int64) time.Time
	// firstTS is the media time of the first frame, when hasFirst: what the
	// clock dates the first output by (clock.go).
	firstTS  int64
	hasFirst bool
	out      *output // the output being written (the export's goroutine only)
	// largestGroup is the estimated size of the largest group written
	// (MaxFileBytes; the export's goroutine only).
	largestGroup int64
	files        []FileInfo  // finished, in order
	current      *FileInfo   // being written
	chapters     []string    // asked for, not yet written (Chapter)
	asked        atomic.Bool // chapters is not empty: a frame need not lock to know
	err          error
	end          time.Time
	final        Stats       // once ended
	trackLog     []TrackInfo // once ended
}

// State is where a Recording is in its life.
type State string

// The states of a Recording, in order.
const (
	StateStarting  State = "starting"  // checking the output
	StateWaiting   State = "waiting"   // for the broadcast's catalog
	StateRecording State = "recording" // its files are being written
	StateEnded     State = "ended"     // its files are finished; see Err
)

// ErrStopped is the cause a Recording stopped by Stop ends with (its
// context's cause); Err is nil for such a recording.
var ErrStopped = errors.New("record: recording stopped")

// ErrCannotSplit is returned by Split when the output cannot start a next
// file: a Stream, or a template without {n} or {time}.
var ErrCannotSplit = errors.New("the output has one name per recording: a template with {n} or {time} can start a next file")

// ErrNotRecording is returned by Split and Chapter before a recording has
// a file, and after it ended.
var ErrNotRecording = errors.New("the recording has no file open")

// newRecording makes the value of a recording of broadcast path of src,
// not started yet, and lists it in the Recorder until it ends.
func (r *Recorder) newRecording(ctx context.Context, src Source, path string) *Recording {
	rctx, cancel := context.WithCancelCause(ctx)
	rec := &Recording{path: path, r: r, src: src, start: time.Now(), parent: ctx, ctx: rctx, cancel: cancel,
		done: make(chan struct{}), state: StateStarting, name: path}
	r.mu.Lock()
	r.nextRecording++
	rec.seq = r.nextRecording
	rec.id = strconv.FormatInt(rec.seq, 10)
	r.recordings[rec] = struct{}{}
	r.mu.Unlock()
	if r.opts.OnRecording != nil {
		r.opts.OnRecording(rec)
	}
	return rec
}

// finish records the outcome of the recording and closes Done.
func (rec *Recording) finish(err error) {
	r := rec.r
	rec.mu.Lock()
	rec.err, rec.state, rec.end = err, StateEnded, time.Now()
	if rec.ex != nil {
		rec.final = recordingStats(rec.ex, rec.tracks.n)
		for _, ts := range rec.ex.TrackStats() {
			rec.trackLog = append(rec.trackLog, trackInfo(rec.name, ts))
		}
	}
	rec.ex, rec.seg, rec.chapters = nil, nil, nil
	rec.mu.Unlock()
	r.mu.Lock()
	delete(r.recordings, rec)
	r.mu.Unlock()
	close(rec.done)
	if r.opts.OnRecording != nil {
		r.opts.OnRecording(rec)
	}
}

// recordingStats are the counters of one recording's export.
func recordingStats(ex *export.Export, tracks int) Stats {
	st := ex.Stats()
	s := Stats{Recorded: 1, Media: st.MediaTime, Tracks: tracks, Frames: st.Frames, Bytes: st.Bytes, Late: st.Late, Dropped: st.Dropped, Skipped: st.NotExported}
	for _, ts := range ex.TrackStats() {
		s.Lost = max(s.Lost, ts.LostToGaps)
	}
	return s
}

// ID names the recording among those of its Recorder ("1", "2", ...).
func (rec *Recording) ID() string { return rec.id }

// Broadcast is the name of the broadcast recorded.
func (rec *Recording) Broadcast() string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.name
}

// Source is where the broadcast comes from.
func (rec *Recording) Source() Source { return rec.src }

// State says where the recording is in its life.
func (rec *Recording) State() State {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.state
}

// Started is when the recording was started; Ended when it ended (zero
// while it runs).
func (rec *Recording) Started() time.Time { return rec.start }

// Ended is when the recording ended (zero while it runs).
func (rec *Recording) Ended() time.Time {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.end
}

// Done is closed when the recording ended and its files are finished.
func (rec *Recording) Done() <-chan struct{} { return rec.done }

// Err is the outcome of an ended recording: nil when its broadcast ended,
// Duration was reached, it was stopped or cut at a limit, or its context
// ended.
func (rec *Recording) Err() error {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.err
}

// Stats are the recording's counters (Recordings is 1 while it runs).
func (rec *Recording) Stats() Stats {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.ex == nil {
		s := rec.final
		s.Recorded = 1
		return s
	}
	s := recordingStats(rec.ex, rec.ex.Stats().Tracks)
	s.Recordings = 1
	s.Behind = rec.ex.Behind()
	if s.Behind > behindAfter {
		s.RecordingsBehind = 1
	}
	return s
}

// Files returns the recording's finished files, then the one being
// written (Size, Frames and Media so far).
func (rec *Recording) Files() []FileInfo {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := slices.Clone(rec.files)
	if rec.current != nil {
		out = append(out, *rec.current)
	}
	return out
}

// Tracks returns the accounting of the recording's tracks.
func (rec *Recording) Tracks() []TrackInfo {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.ex == nil {
		return slices.Clone(rec.trackLog)
	}
	var out []TrackInfo
	for _, ts := range rec.ex.TrackStats() {
		out = append(out, trackInfo(rec.name, ts))
	}
	return out
}

// Stop ends the recording and finishes its files, as the end of its
// broadcast would; the other recordings go on. It returns at once: Done
// is closed when the files are finished.
func (rec *Recording) Stop() { rec.cancel(ErrStopped) }

// Split finishes the current file at the next keyframe (of the video, when
// there is video) and goes on in the next one (output number n+1). It
// needs files named apart by the template ({n} or {time}): ErrCannotSplit
// otherwise.
func (rec *Recording) Split() error {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !rec.r.namesFilesApart() {
		return ErrCannotSplit
	}
	if rec.seg == nil {
		return ErrNotRecording
	}
	rec.seg.Split()
	return nil
}

// Chapter marks the media time of the next frame written with a chapter
// named name, in the file being written: MKV and WebM as a chapter, MP4 as
// a Nero chapter (chpl), an HLS package as an EXT-X-DATERANGE. A
// *ChapterError for a format without chapters.
func (rec *Recording) Chapter(name string) error {
	if !rec.r.chapters() {
		return &ChapterError{Format: rec.r.opts.Format}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.ex == nil {
		return ErrNotRecording
	}
	rec.chapters = append(rec.chapters, name)
	rec.asked.Store(true)
	return nil
}

// takeChapters returns the chapters asked for since the last call.
func (rec *Recording) takeChapters() []string {
	if !rec.asked.Load() {
		return nil
	}
	rec.mu.Lock()
	rec.asked.Store(false)
	defer rec.mu.Unlock()
	c := rec.chapters
	rec.chapters = nil
	return c
}

// fileOpened and fileFinished keep the recording's list of files.
func (rec *Recording) fileOpened(info FileInfo) {
	rec.mu.Lock()
	rec.current = &info
	rec.mu.Unlock()
}

func (rec *Recording) fileProgress(size, frames int64, media float64) {
	rec.mu.Lock()
	if rec.current != nil {
		rec.current.Size, rec.current.Frames, rec.current.Media = size, frames, media
	}
	rec.mu.Unlock()
}

func (rec *Recording) fileFinished(info FileInfo) {
	rec.mu.Lock()
	rec.files = append(rec.files, info)
	if rec.current != nil && rec.current.Path == info.Path {
		rec.current = nil
	}
	rec.mu.Unlock()
}

// Recordings returns the recordings running now (starting, waiting or
// recording), in the order they were started.
func (r *Recorder) Recordings() []*Recording {
	r.mu.Lock()
	out := make([]*Recording, 0, len(r.recordings))
	for rec := range r.recordings {
		out = append(out, rec)
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b *Recording) int { return int(a.seq - b.seq) })
	return out
}
