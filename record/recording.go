package record

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	live := live(r.opts.Output)
	maxDelay := r.opts.MaxDelay
	switch {
	case live || maxDelay < 0:
		maxDelay = 0
	case maxDelay == 0:
		maxDelay = DefaultMaxDelay
	}
	return export.Options{Delay: r.opts.Delay, MaxDelay: maxDelay, Video: r.opts.Video, Audio: r.opts.Audio, Text: r.opts.Text, Caps: r.caps(),
		MediaTimeOnly: !live, CheckPayloads: true}
}

// Record records broadcast path of src to the output until the broadcast
// ends, Duration is reached or ctx ends; cancelling ctx finishes the files
// (cues, duration, index) before Record returns. Before any file is
// created it checks that the broadcast has something the selection and
// the container allow (see Plan).
func (r *Recorder) Record(ctx context.Context, src Source, path string) error {
	return r.withProgress(func() error { return r.record(ctx, src, path) })
}

// record records broadcast path of src until it ends (see Record) and
// returns the outcome.
func (r *Recorder) record(ctx context.Context, src Source, path string) error {
	ended := make(chan error, 1)
	r.newRecording(ctx, src, path).run(func(err error) { ended <- err })
	return <-ended
}

// Start starts recording broadcast path of src and returns the recording
// at once: it waits for the broadcast's catalog, checks it (Plan), opens
// its first file and records until the broadcast ends, Duration is
// reached, it is stopped (Recording.Stop) or ctx ends, which all finish
// its files. Its outcome is Recording.Err once Recording.Done is closed.
func (r *Recorder) Start(ctx context.Context, src Source, path string) *Recording {
	rec := r.newRecording(ctx, src, path)
	go rec.run(func(error) {})
	return rec
}

// run records, and calls done with the outcome when the recording ended.
// It prepares the recording in the calling goroutine (the first catalog,
// the file, the export), then starts the export with export.Export.Go and
// returns once it waits: a recording whose broadcast sends nothing holds
// no goroutine (a goroutine blocked under this setup would keep the 8 KB
// of stack the setup grew). done runs in the goroutine that ended the
// recording, after Done is closed.
func (rec *Recording) run(done func(error)) {
	r, path, ctx := rec.r, rec.path, rec.parent
	finish := func(err error) {
		rec.finish(err)
		done(err)
	}
	// A limit cuts the recording by ending its context with the reason:
	// the files are finished as on any stop (limits.go).
	if err := r.lowOnSpace(r.outputDir()); err != nil {
		rec.cancel(nil)
		finish(fmt.Errorf("recording %q refused: %w", path, err))
		return
	}
	rctx := rec.ctx
	end := func(err error) {
		cause := context.Cause(rctx)
		switch {
		case errors.Is(cause, ErrLimit) && ctx.Err() == nil:
			r.log.Warn("recording cut", "broadcast", path, "publisher", peerOf(rec.src), "reason", cause)
			err = nil
		case errors.Is(cause, ErrStopped) && ctx.Err() == nil:
			if err != nil && errors.Is(err, context.Canceled) {
				err = nil
			}
			if err == nil {
				r.log.Info("recording stopped", "broadcast", path)
			}
		}
		rec.cancel(nil)
		finish(err)
	}
	if bo, ok := r.opts.Output.(BroadcastOutput); ok {
		end(r.writeBroadcast(rctx, rec, bo))
		return
	}
	err := r.prepare(rctx, rec)
	if err != nil {
		end(err)
		return
	}
	rec.ex.Go(rctx, func(err error) { end(rec.result(err)) })
}

// prepare waits for the first catalog of the recording's broadcast,
// checks that it has something to record (Plan), opens the first output
// and sets the recording's export, not started yet.
func (r *Recorder) prepare(ctx context.Context, rec *Recording) error {
	src := rec.src
	bc := src.Broadcast(rec.path)
	name := bc.Name()
	rec.mu.Lock()
	rec.bc, rec.name, rec.state = bc, name, StateWaiting
	rec.mu.Unlock()
	cat, err := r.waitCatalog(ctx, bc)
	if err != nil {
		if serr := endedWith(ctx, src); serr != nil {
			return fmt.Errorf("broadcast %q: %w", name, serr)
		}
		return err
	}
	if err := r.Plan(name, cat); err != nil {
		return err
	}
	if cat.Clock != nil {
		ts, ok := firstTimestamp(ctx, bc, cat, r.clockWait())
		rec.mu.Lock()
		rec.wall = cat.Clock.At
		rec.firstTS, rec.hasFirst = ts, ok
		rec.mu.Unlock()
	}
	opts := r.exportOptions()
	opts.MaxDuration = r.opts.Duration
	opts.Logger = r.log.With("broadcast", name)
	opts.Resolve = func(ref string) (*model.Broadcast, error) { return src.Resolve(bc, ref) }
	m, err := r.open(rec, 0)
	if err != nil {
		return err
	}
	// A late track the file cannot add starts the next one when the
	// template numbers them; a template that names files apart can start
	// the next one when asked (Recording.Split).
	split := r.numbersFiles()
	var seg *segment.Muxer
	if !r.opts.Format.Package() && (r.opts.Segment > 0 || r.namesFilesApart()) {
		so := segment.Options{Duration: r.opts.Segment, End: r.opts.Duration, SplitForLateTracks: split, Logger: opts.Logger,
			Next: func(n int) (mux.Muxer, error) { return r.open(rec, n) }}
		if r.splitsBySize() {
			// With {n}, MaxFileBytes starts the next file (at a keyframe)
			// instead of ending the recording: split by size.
			so.Full = func(f mux.Frame) bool { return rec.out != nil && rec.out.noRoomForGroup(f) }
		}
		seg = segment.New(m, so)
		m = seg
	}
	// Count the tracks accepted, for the stats of an ended recording (the
	// engine's own count drops to 0 as tracks end).
	first := &countTracks{Muxer: m}
	ex := export.New(bc, first, opts)
	rec.mu.Lock()
	rec.ex, rec.tracks, rec.seg, rec.state = ex, first, seg, StateRecording
	rec.mu.Unlock()
	r.started(name, ex)
	return nil
}

// result accounts for the ended recording and returns its outcome, given
// what its export returned.
func (rec *Recording) result(err error) error {
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
	var written, malformed int64
	for _, ts := range rec.ex.TrackStats() {
		written += ts.Written
		malformed += ts.DroppedMalformed
	}
	if written == 0 && malformed > 0 {
		return &MalformedError{Broadcast: name, Dropped: malformed}
	}
	// A session that gave up ends its tracks before it closes their
	// broadcast with its error: ask the session too.
	if se, ok := rec.src.(EndingSource); ok {
		if serr := se.Err(); serr != nil && !errors.Is(serr, subscribe.ErrClosed) {
			return fmt.Errorf("broadcast %q ended with its connection: %w (what arrived before is in the output)", name, serr)
		}
	}
	return nil
}

// endedWith returns why src ended, when it is an EndingSource that ended
// with an error: a session refused for good ends its broadcasts' tracks
// (a catalog wait sees its end, EOF) a moment before it records why, so
// the wait for that is bounded by endedWithin.
func endedWith(ctx context.Context, src Source) error {
	se, ok := src.(EndingSource)
	if !ok || ctx.Err() != nil {
		return nil
	}
	deadline := time.Now().Add(endedWithin)
	for {
		if err := se.Err(); err != nil && !errors.Is(err, subscribe.ErrClosed) {
			return err
		}
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// endedWithin bounds how long a failed catalog wait looks for the reason
// its source ended.
const endedWithin = 500 * time.Millisecond

// namesFilesApart reports whether the output is files whose template
// gives each output of a recording its own name ({n} or {time}), so that
// a recording can go on in a next file.
func (r *Recorder) namesFilesApart() bool {
	t, ok := templateOf(r.opts.Output)
	return ok && (t.Has("n") || t.Has("time"))
}

// numbersFiles reports whether the output is files named with {n}, so
// that a late track the current file cannot add can start the next one.
func (r *Recorder) numbersFiles() bool {
	t, ok := templateOf(r.opts.Output)
	return ok && t.Has("n")
}

// countTracks counts the tracks its muxer accepted.
type countTracks struct {
	mux.Muxer
	n int
}

// EndFrame passes hang's end marker on (mux.FrameEnder).
func (c *countTracks) EndFrame(id int, end int64) error { return endFrame(c.Muxer, id, end) }

func (c *countTracks) AddTrack(t mux.Track) error {
	err := c.Muxer.AddTrack(t)
	if err == nil {
		c.n++
	}
	return err
}

// writeBroadcast hands the recording's broadcast to a BroadcastOutput
// until it ends or ctx does (Duration ends it too).
func (r *Recorder) writeBroadcast(ctx context.Context, rec *Recording, out BroadcastOutput) error {
	bc := rec.src.Broadcast(rec.path)
	name := bc.Name()
	rec.mu.Lock()
	rec.bc, rec.name, rec.state = bc, name, StateRecording
	rec.mu.Unlock()
	if d := r.opts.Duration; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	r.mu.Lock()
	r.done.Recorded++
	r.mu.Unlock()
	err := out.WriteBroadcast(ctx, BroadcastWrite{Name: name, Broadcast: bc, Logger: r.log,
		Wrote: func(frames int, bytes int64, end time.Duration) {
			r.mu.Lock()
			r.done.Frames += int64(frames)
			r.done.Bytes += bytes
			r.done.Media = max(r.done.Media, end)
			r.mu.Unlock()
			rec.mu.Lock() // the recording's own Stats
			rec.final.Frames += int64(frames)
			rec.final.Bytes += bytes
			rec.final.Media = max(rec.final.Media, end)
			rec.mu.Unlock()
		}})
	if err != nil {
		return err
	}
	if berr := bc.Err(); berr != nil {
		return fmt.Errorf("broadcast %q ended with an error: %w (what arrived before is in the output)", name, berr)
	}
	return nil
}
