package record

import (
	"context"
	"errors"
	"fmt"

	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/segment"
	"github.com/moq-export/moq-export/subscribe"
)

// exportOptions are the engine options of a recording.
func (r *Recorder) exportOptions() export.Options {
	// Files wait out a network outage, so the groups a reconnect fetches
	// are not late; a player on a Stream gets what there is.
	_, live := r.opts.Output.(*stream)
	maxDelay := r.opts.MaxDelay
	switch {
	case live || maxDelay < 0:
		maxDelay = 0
	case maxDelay == 0:
		maxDelay = DefaultMaxDelay
	}
	return export.Options{Delay: r.opts.Delay, MaxDelay: maxDelay, Video: r.opts.Video, Audio: r.opts.Audio, Caps: r.opts.Format.Caps(),
		MediaTimeOnly: !live}
}

// Record records broadcast path of src to the output until the broadcast
// ends, Duration is reached or ctx ends; cancelling ctx finishes the files
// (cues, duration, index) before Record returns. Before any file is
// created it checks that the broadcast has something the selection and
// the container allow (see Plan).
func (r *Recorder) Record(ctx context.Context, src Source, path string) error {
	defer r.recordingFrom(src)()
	return r.withProgress(ctx, func() error { return r.record(ctx, src, path) })
}

// record records broadcast path of src until it ends (see Record) and
// returns the outcome.
func (r *Recorder) record(ctx context.Context, src Source, path string) error {
	ended := make(chan error, 1)
	r.startRecording(ctx, src, path, func(err error) { ended <- err })
	return <-ended
}

// startRecording records broadcast path of src, and calls done with the
// outcome when the recording ended. It prepares the recording in the
// calling goroutine (the first catalog, the file, the export), then starts
// the export with export.Export.Go and returns once it waits: a recording
// whose broadcast sends nothing holds no goroutine (a goroutine blocked
// under this setup would keep the 8 KB of stack the setup grew). done runs
// in the goroutine that ended the recording.
func (r *Recorder) startRecording(ctx context.Context, src Source, path string, done func(error)) {
	// A limit cuts the recording by ending its context with the reason:
	// the files are finished as on any stop (limits.go).
	if err := r.lowOnSpace(r.outputDir()); err != nil {
		done(fmt.Errorf("recording %q refused: %w", path, err))
		return
	}
	rctx, cut := context.WithCancelCause(ctx)
	end := func(err error) {
		if cause := context.Cause(rctx); errors.Is(cause, ErrLimit) && ctx.Err() == nil {
			r.log.Warn("recording cut", "broadcast", path, "publisher", peerOf(src), "reason", cause)
			err = nil
		}
		cut(nil)
		done(err)
	}
	rec, err := r.prepare(rctx, src, path, cut)
	if err != nil {
		end(err)
		return
	}
	rec.ex.Go(rctx, func(err error) { end(rec.result(err)) })
}

// recording is a recording prepared and running: its export, and what
// its end accounts for.
type recording struct {
	r      *Recorder
	src    Source
	bc     *model.Broadcast
	name   string
	ex     *export.Export
	tracks *countTracks
}

// prepare waits for the first catalog of broadcast path, checks that it
// has something to record (Plan), opens the first output and returns the
// recording with its export, not started yet.
func (r *Recorder) prepare(ctx context.Context, src Source, path string, cut func(error)) (*recording, error) {
	bc := src.Broadcast(path)
	name := bc.Name()
	cat, err := r.waitCatalog(ctx, bc)
	if err != nil {
		return nil, err
	}
	if err := r.Plan(name, cat); err != nil {
		return nil, err
	}
	opts := r.exportOptions()
	opts.MaxDuration = r.opts.Duration
	opts.Logger = r.log.With("broadcast", name)
	opts.Resolve = func(ref string) (*model.Broadcast, error) { return src.Resolve(bc, ref) }
	m, err := r.open(name, 0, cut)
	if err != nil {
		return nil, err
	}
	// A late track the file cannot add starts the next one when the
	// template numbers them.
	split := r.numbersFiles()
	if r.opts.Segment > 0 || split {
		m = segment.New(m, segment.Options{Duration: r.opts.Segment, SplitForLateTracks: split, Logger: opts.Logger,
			Next: func(n int) (mux.Muxer, error) { return r.open(name, n, cut) }})
	}
	// Count the tracks accepted, for the stats of an ended recording (the
	// engine's own count drops to 0 as tracks end).
	first := &countTracks{Muxer: m}
	ex := export.New(bc, first, opts)
	r.started(name, ex)
	return &recording{r: r, src: src, bc: bc, name: name, ex: ex, tracks: first}, nil
}

// result accounts for the ended recording and returns its outcome, given
// what its export returned.
func (rec *recording) result(err error) error {
	defer rec.r.ended(rec.name, rec.ex, rec.tracks.n)
	name := rec.name
	if err != nil {
		if we, ok := errors.AsType[*WriteError](err); ok {
			return fmt.Errorf("recording %q: %w", name, we)
		}
		return fmt.Errorf("recording %q: %w", name, err)
	}
	if berr := rec.bc.Err(); berr != nil {
		return fmt.Errorf("broadcast %q ended with an error: %w (what arrived before is in the output)", name, berr)
	}
	// A session that gave up ends its tracks before it closes their
	// broadcast with its error: ask the session too.
	if se, ok := rec.src.(interface{ Err() error }); ok {
		if serr := se.Err(); serr != nil && !errors.Is(serr, subscribe.ErrClosed) {
			return fmt.Errorf("broadcast %q ended with its connection: %w (what arrived before is in the output)", name, serr)
		}
	}
	return nil
}

// numbersFiles reports whether the output is files named with {n}, so
// that a late track the current file cannot add can start the next one.
func (r *Recorder) numbersFiles() bool {
	f, ok := r.opts.Output.(*files)
	return ok && f.t.Has("n")
}

// countTracks counts the tracks its muxer accepted.
type countTracks struct {
	mux.Muxer
	n int
}

func (c *countTracks) AddTrack(t mux.Track) error {
	err := c.Muxer.AddTrack(t)
	if err == nil {
		c.n++
	}
	return err
}
