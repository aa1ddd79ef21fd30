package export

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
)

// startGate holds the first tracks of an export unread until each holds a
// frame (or the deadline passed), so that the audio can be backfilled to
// the video's first keyframe before any consumer starts.
type startGate struct {
	tracks   []*trackState
	waiting  int // gated tracks without a frame
	deadline time.Time
	// backfilling is set once the backfills run (in goroutines, so no poll
	// blocks); pending counts those still running, cancel stops them.
	backfilling bool
	pending     atomic.Int32
	cancel      context.CancelFunc
}

// lateFill is the backfill of a late track (see startLateFill).
type lateFill struct {
	ts     *trackState
	cancel context.CancelFunc
	// key, for an audio track rejoining after a restart (startRejoin),
	// takes the video's restart keyframe time; keyed says it was given.
	key   chan int64
	keyed bool
}

// gateCheck notes whether gated track ts holds a frame now.
func (e *Export) gateCheck(ts *trackState) {
	if ts.hasFirst {
		return
	}
	if _, ok := ts.consumer.Track().OldestTimestamp(); ok || ts.ended {
		ts.hasFirst = true
		e.gate.waiting--
	}
}

// startWait is how long the start gate waits for a track's first frame:
// Delay, or MaxDelay where the delay may grow (files). A track whose first
// group comes after the others started (a loaded machine, a slow relay)
// would otherwise find the output past it and lose that group as late.
func (e *Export) startWait() time.Duration {
	if e.opts.Delay >= 0 && e.opts.MaxDelay > e.opts.Delay {
		return e.opts.MaxDelay
	}
	return e.opts.Delay
}

// maxBackfill bounds how long opening the gate waits for backfills.
const maxBackfill = time.Second

// startBackfills starts, in the background, the backfill of every gated
// audio track that starts after the earliest video keyframe K, back to K,
// and gives them min(Delay, maxBackfill) more before the gate opens (files:
// MaxDelay, as startWait). A failed backfill is only logged: that track
// starts at its first live group.
func (e *Export) startBackfills() {
	g := e.gate
	g.backfilling = true
	wait := min(e.opts.Delay, maxBackfill)
	if w := e.startWait(); w > e.opts.Delay {
		// A file can wait: a backfill slowed by a loaded machine still
		// aligns the audio with the first keyframe.
		wait = w
	}
	g.deadline = e.opts.Now().Add(wait)
	var k int64
	haveK := false
	for _, ts := range g.tracks {
		if ts.track.Kind != mux.Video || ts.ended {
			continue
		}
		if first, ok := ts.consumer.Track().OldestTimestamp(); ok && (!haveK || first < k) {
			k, haveK = first, true
		}
	}
	if !haveK {
		return
	}
	ctx, cancel := context.WithDeadline(e.ctx, g.deadline)
	g.cancel = cancel
	for _, ts := range g.tracks {
		if ts.track.Kind != mux.Audio || ts.ended {
			continue
		}
		t := ts.consumer.Track()
		if first, ok := t.OldestTimestamp(); !ok || first <= k {
			continue
		}
		g.pending.Add(1)
		name := ts.track.Name
		go func() {
			if err := t.Backfill(ctx, k); err != nil {
				e.log.Debug("backfill failed; the track starts at its first live group", "track", name, "err", err)
			}
			if g.pending.Add(-1) == 0 {
				e.ready.Wake() // let Run open the gate now
			}
		}()
	}
}

// startLateFill backfills a late audio track (a rendition a catalog update
// added) back to the newest timestamp written, in the background and for
// at most maxBackfill (files: MaxDelay, as the start gate and a restart's
// rejoin wait), before it is read: it joined at the newest group when it
// was subscribed, which may be some frames after the rendition began.
// Meanwhile the jitter buffer waits for it (pending), so its frames from
// that point on are not late. Video starts at its newest keyframe as it
// does when joining.
func (e *Export) startLateFill(ts *trackState) {
	if ts.track.Kind != mux.Audio || !e.haveFirst {
		return
	}
	t, target := ts.consumer.Track(), e.newest
	wait := maxBackfill
	if w := e.startWait(); w > e.opts.Delay {
		// A file can wait: a FETCH slowed by a loaded machine (the
		// CLI's loopback demo under two busy loops and a test suite)
		// took longer than maxBackfill, and the late audio lost its
		// first 170 ms, the frames before its subscription's group.
		wait = max(wait, w)
	}
	ctx, cancel := context.WithTimeout(e.ctx, wait)
	ts.filling = true
	ts.aligning.Store(true)
	e.fills = append(e.fills, lateFill{ts: ts, cancel: cancel})
	name := ts.track.Name
	go func() {
		// A backfill fetches the groups before the oldest one the track
		// holds: asked before the subscription brought its first frame
		// (a loaded machine, a slow relay), it has nothing to go back
		// from and ends at once, and the audio started at the
		// subscription's group (2.767 s for a rendition of 2 s under the
		// whole test suite). So it waits for that frame first, within
		// the same bound.
		if awaitFirstFrame(ctx, t) {
			if err := t.Backfill(ctx, target); err != nil {
				e.log.Debug("backfill of a late track failed; it starts at its first live group", "track", name, "err", err)
			}
		} else {
			e.log.Debug("no backfill of a late track: no frame came within the wait", "track", name)
		}
		ts.filled.Store(true)
		e.ready.Wake()
	}()
}

// awaitFirstFrame reports whether t holds a frame, waiting for one until
// ctx ends or t ends (model.Track.FirstFrame: no poll).
func awaitFirstFrame(ctx context.Context, t *model.Track) bool {
	select {
	case <-ctx.Done():
	case <-t.FirstFrame():
	}
	_, ok := t.OldestTimestamp()
	return ok
}

// endLateFills reads the late tracks whose backfill is done. The fills
// still running are kept before any track is read: a read can start a
// new fill (an audio track's next event is a publisher's restart, which
// came while its backfill ran), which goes on the list, not lost with
// the ones that ended.
func (e *Export) endLateFills() error {
	var done []*trackState
	keep := e.fills[:0]
	for _, f := range e.fills {
		if !f.ts.filled.Load() {
			keep = append(keep, f)
			continue
		}
		f.cancel()
		f.ts.filling = false
		f.ts.aligning.Store(false)
		if !f.ts.ended {
			done = append(done, f.ts)
		}
	}
	clear(e.fills[len(keep):])
	e.fills = keep
	for _, ts := range done {
		if ts.filling || ts.ended {
			continue
		}
		if err := e.readTrack(ts); err != nil {
			return err
		}
	}
	return nil
}

// openGate ends the start gate: every gated track is read from its oldest
// group, backfilled ones included.
func (e *Export) openGate() error {
	g := e.gate
	e.gate = nil
	if g.cancel != nil {
		g.cancel()
	}
	for _, ts := range g.tracks {
		ts.gated = false
		if ts.ended {
			continue
		}
		if err := e.readTrack(ts); err != nil {
			return err
		}
	}
	return nil
}
