package record

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/mux"
)

// Recorder records broadcasts as the Options say: one (Record) or every
// one a source announces (RecordAll), each to its own files. It is safe
// for concurrent use; Stats and Files can be read while it records.
type Recorder struct {
	opts Options
	log  *slog.Logger

	// catalogSlots bounds the first-catalog fetches running at once (see
	// Options.CatalogFetches); slotHold is catalogSlotHold but in tests.
	catalogSlots chan struct{}
	slotHold     time.Duration
	slotWaiters  atomic.Int64 // waiting for a place now
	// restarts counts the recordings RecordAll restarted after a failed
	// write ended them (Stats.Restarted).
	restarts atomic.Int64

	mu     sync.Mutex
	active map[*export.Export]string // running recordings: their broadcast
	done   Stats
	files  []FileInfo
	tracks []TrackInfo // of the ended recordings
	// reserved counts the recordings RecordAll runs (MaxRecordings).
	reserved int
	// recordings are those running (Recordings); nextRecording numbers
	// them.
	recordings    map[*Recording]struct{}
	nextRecording int64
	// stopWatch ends the watch of the running recordings (watchSilence)
	// the first one started; nil while none runs.
	stopWatch context.CancelFunc
}

// New checks the options and returns a Recorder.
func New(opts Options) (*Recorder, error) {
	if opts.Output == nil {
		return nil, errors.New("record: Options.Output is nil: use record.Files(template, ...) or record.Stream(w)")
	}
	if opts.Format == "" {
		opts.Format = opts.Output.DefaultFormat()
	}
	if err := checkFormat(opts); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Origin == "" {
		opts.Origin = "by the source"
	}
	if opts.CatalogFetches <= 0 {
		opts.CatalogFetches = DefaultCatalogFetches
	}
	return &Recorder{opts: opts, log: opts.Logger, active: map[*export.Export]string{},
		recordings:   map[*Recording]struct{}{},
		catalogSlots: make(chan struct{}, opts.CatalogFetches), slotHold: catalogSlotHold}, nil
}

// caps is what the recorder's container carries.
func (r *Recorder) caps() mux.Caps {
	if c := r.opts.Container; c != nil {
		return c.Caps
	}
	return r.opts.Format.Caps()
}

// newMuxer returns a muxer of the recorder's container writing to w.
func (r *Recorder) newMuxer(w io.Writer, o MuxOptions) (mux.Muxer, error) {
	if c := r.opts.Container; c != nil {
		return c.New(w, o)
	}
	return r.opts.Format.NewMuxer(w, o)
}

// chapters reports whether the recorder's files can hold chapters.
func (r *Recorder) chapters() bool {
	if c := r.opts.Container; c != nil {
		m, err := c.New(io.Discard, MuxOptions{})
		_, ok := m.(mux.Chapterer)
		return err == nil && ok
	}
	return r.opts.Format.Chapters()
}

// Options returns the options in use (with the defaults New filled in).
func (r *Recorder) Options() Options { return r.opts }

func (r *Recorder) notice(msg string) { r.log.Log(context.Background(), LevelNotice, msg) }

// Waiting is a wait that has lasted WaitNotice: for the catalog of
// Broadcast, or (Broadcast empty) for any broadcast to be announced, by
// Origin; Wait is Options.Wait (0: until the context ends).
type Waiting struct {
	Broadcast string
	Origin    string
	Wait      time.Duration
}

// waiting tells of a long wait: to Options.OnWait, or as a notice.
func (r *Recorder) waiting(w Waiting) {
	if r.opts.OnWait != nil {
		r.opts.OnWait(w)
		return
	}
	until := "until stopped"
	if w.Wait > 0 {
		until = fmt.Sprintf("giving up after %v", w.Wait)
	}
	if w.Broadcast == "" {
		r.notice("waiting for broadcasts to be announced " + w.Origin + " (" + until + ")")
		return
	}
	r.notice(fmt.Sprintf("waiting for broadcast %q to be announced %s (%s)", w.Broadcast, w.Origin, until))
}

func (r *Recorder) started(name string, ex *export.Export) {
	r.mu.Lock()
	r.active[ex] = name
	r.done.Recorded++
	if r.stopWatch == nil {
		// Whichever way it was started (Record, RecordAll, Start: the
		// service's API), a running recording is watched for tracks that
		// stop alone and for falling behind live, until none runs.
		ctx, cancel := context.WithCancel(context.Background())
		r.stopWatch = cancel
		go r.watchSilence(ctx)
	}
	r.mu.Unlock()
}

func (r *Recorder) ended(name string, ex *export.Export, tracks int) {
	st := ex.Stats()
	r.mu.Lock()
	delete(r.active, ex)
	if len(r.active) == 0 && r.stopWatch != nil {
		r.stopWatch()
		r.stopWatch = nil
	}
	for _, ts := range ex.TrackStats() {
		r.done.Lost = max(r.done.Lost, ts.LostToGaps)
		r.tracks = append(r.tracks, trackInfo(name, ts))
	}
	r.done.Tracks += tracks
	r.done.Frames += st.Frames
	r.done.Bytes += st.Bytes
	r.done.Late += st.Late
	r.done.Skipped += st.NotExported
	r.done.Dropped += st.Dropped
	r.done.Media = max(r.done.Media, st.MediaTime)
	r.mu.Unlock()
}

// withProgress runs fn, calling Options.Progress meanwhile.
func (r *Recorder) withProgress(fn func() error) error {
	if r.opts.Progress == nil {
		return fn()
	}
	interval := r.opts.ProgressInterval
	if interval <= 0 {
		interval = time.Second
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				r.opts.Progress(r.Stats())
			}
		}
	}()
	err := fn()
	close(stop)
	<-done
	r.opts.Progress(r.Stats())
	return err
}

// checkFormat checks that the output takes the format: a BroadcastOutput
// writes no container, and its Check judges the Format (Archive's, or
// none); the others need a container of the format table or
// Options.Container, and a package (HLS/DASH) a PackageOutput.
func checkFormat(opts Options) error {
	if _, whole := opts.Output.(BroadcastOutput); whole {
		return opts.Output.Check(opts)
	}
	_, builtIn := muxers[opts.Format]
	switch c := opts.Container; {
	case opts.Format == "":
		return fmt.Errorf("record: no Format, and the output does not tell one: end the path in .flv, .mkv, .webm, .ts or .mp4, or set Format")
	case c != nil && c.New == nil:
		return errors.New("record: Options.Container has no New")
	case c != nil && (builtIn || opts.Format == Archive):
		return fmt.Errorf("record: Options.Container needs a Format name of its own, not the built-in %q", opts.Format)
	case c == nil && opts.Format == Archive:
		return fmt.Errorf("record: Format %q is written by an ArchiveOutput", Archive)
	case c == nil && !builtIn:
		return fmt.Errorf("record: unknown format %q", opts.Format)
	case c == nil && opts.Format.Package():
		if _, ok := opts.Output.(PackageOutput); !ok {
			return fmt.Errorf("record: %s writes a directory of files (segments, playlists), not one stream: use Files with a path such as rec/{broadcast}/index.m3u8: %w", opts.Format, ErrPackage)
		}
		if opts.Segment > 0 {
			return fmt.Errorf("record: %s cuts its own segments: set HLSSegmentDuration, not Segment: %w", opts.Format, ErrPackage)
		}
		return nil
	}
	return opts.Output.Check(opts)
}
