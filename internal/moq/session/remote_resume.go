package session

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/moq-export/moq-export/model"
)

// Bounds of the gap fill after a reconnect: at most this many missed
// groups are fetched (about 87 s of 47 audio groups a second: a minute-long
// outage of a relay that keeps its groups costs nothing), this many at
// once, each such window (and the probe, and each cut group) within this
// time. The time bounds a stall, not the fill: a minute of audio is 176
// windows, more than 10 s of round trips on a loaded machine (a 20 s
// outage under -race lost the last 1.4 s of a fill cut at 10 s).
const (
	resumeMaxGroups = 4096
	resumeWindow    = 16
	resumeTimeout   = 10 * time.Second
)

// Filling the gap a lost connection left.
//
// When the connection drops, the group streams it cut short stay open in
// the model (interrupt) and the track is held (model.Track.Hold), so that
// the export waits for what comes back instead of moving past it. The
// resumed subscription's SUBSCRIBE_OK names the publisher's newest group:
//
//   - sequences that go on from the last group received are the same
//     publisher session: the groups in between are FETCHed and inserted in
//     order, the cut groups are completed (FETCH for the older ones, the
//     live stream for the one SUBSCRIBE_OK names), and the live groups wait
//     until that is done (see Subscription.WaitStarted); nothing is lost
//     while the relay still holds the groups;
//   - a group the relay no longer serves ends the fill: it and the groups
//     after it up to the live ones are marked lost (model.Track.MarkLost),
//     so readers see one discontinuity, and the log says how many groups
//     were lost;
//   - sequences that restart are a new publisher session: a new timeline
//     (model.Track.Discontinuity).
//
// On lite-06 (frame ranges) nothing the track holds is sent again but one
// frame: before resubscribing, a FETCH of the newest held frame of a cut
// newest group checks the publisher (FloorOfCut), and SUBSCRIBE asks from
// that group's first missing frame; the FETCHes that complete cut groups
// ask only their missing frames (fetchFrom).

// interrupt keeps group g, cut short by the loss of the connection, open
// for the resumed subscription to complete.
func (rt *Remote) interrupt(seq uint64, g *model.Group) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.interrupted == nil {
		rt.interrupted = map[uint64]*model.Group{}
	}
	rt.interrupted[seq] = g
}

// hold holds the track (once) until release.
func (rt *Remote) hold() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.holdGen++
	if !rt.holding {
		rt.holding = true
		rt.Track.Hold()
	}
}

func (rt *Remote) release() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.releaseLocked()
}

func (rt *Remote) releaseLocked() {
	if rt.holding {
		rt.holding = false
		rt.Track.Release()
	}
}

// releaseAtLive ends the hold of a resumed subscription once the track
// holds a frame of group first or later (where the subscription resumed)
// and every group stream that landed while the gap was filled made its
// group (burstDone), or after the request timeout. Those streams,
// released together, become groups in any order, and a reader that saw the
// newest of them before the oldest would skip those as stalled (a
// second's audio after a blip of a few seconds, with several broadcasts
// filling at once) were the track not held until all of them are in. Until then the export waits for this
// track: released earlier, with nothing to read while its first live group
// is on its way, the track would look idle, the other tracks would run
// ahead, and its first frames would come late and be dropped.
func (rt *Remote) releaseAtLive(first uint64, burstDone func() bool) {
	rt.mu.Lock()
	gen := rt.holdGen
	rt.mu.Unlock()
	// Group first may be one the switch cut, already holding its first
	// frames: live is a frame of it beyond those (or its end), which only
	// the new subscription brings. Releasing on those, or on a newer group
	// that landed first (groups travel newest first), would let the export
	// move past the rest of the cut group before it arrives.
	base := 0
	if g := rt.Track.Group(first); g != nil {
		frames, _, _ := g.Frames(0)
		base = len(frames)
	}
	c := rt.Track.Subscribe(0)
	rs := model.NewReadySet()
	c.Watch(rs)
	live := func() bool {
		for {
			if _, ok := c.Next(); !ok {
				break
			}
		}
		if burstDone != nil && !burstDone() {
			return false
		}
		if g := rt.Track.Group(first); g != nil {
			frames, finished, _ := g.Frames(0)
			return len(frames) > base || finished
		}
		g := rt.Track.NewestGroup()
		if g == nil || g.Sequence() < first {
			return false
		}
		frames, _, _ := g.Frames(0)
		return len(frames) > 0
	}
	rt.Host.Go(func() {
		defer c.Close()
		t := time.NewTimer(rt.Host.Config().RequestTimeout)
		defer t.Stop()
		for !live() {
			select {
			case <-rs.Wakeup():
				continue
			case <-t.C:
			case <-rt.Host.Context().Done():
			}
			break
		}
		rt.mu.Lock()
		defer rt.mu.Unlock()
		if rt.holdGen == gen { // not held again by a later loss
			rt.releaseLocked()
		}
	})
}

// adopt returns the cut group seq that the live subscription delivers
// again, and how many of its frames the track already has.
func (rt *Remote) adopt(seq uint64) (*model.Group, int, bool) {
	rt.mu.Lock()
	g, ok := rt.adoptable[seq]
	delete(rt.adoptable, seq)
	rt.mu.Unlock()
	if !ok {
		return nil, 0, false
	}
	frames, _, _ := g.Frames(0)
	return g, len(frames), true
}

// WaitCutGroups holds the group stream of seq until the cut groups older
// than seq that the resumed subscription completes are complete (or
// closed), at most the request timeout: a newer group landing first
// (groups travel newest first) would otherwise let readers move past the
// rest of a cut group before its live stream brings it.
func (rt *Remote) WaitCutGroups(ctx context.Context, seq uint64) {
	deadline := time.Now().Add(rt.Host.Config().RequestTimeout)
	for {
		rt.mu.Lock()
		pending := false
		kept := rt.cutBefore[:0]
		for _, g := range rt.cutBefore {
			if _, finished, _ := g.Frames(1 << 30); finished {
				continue
			}
			kept = append(kept, g)
			pending = pending || g.Sequence() < seq
		}
		clear(rt.cutBefore[len(kept):])
		rt.cutBefore = kept
		rt.mu.Unlock()
		if !pending || ctx.Err() != nil || time.Now().After(deadline) {
			return
		}
		// Rare (a reconnect that cut a group) and short: a poll.
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// newTimeline ends the groups the lost connection cut short and starts a
// new timeline on the track; a gap after something was received counts as
// lost (its size is unknown).
func (rt *Remote) newTimeline() {
	rt.mu.Lock()
	cut := rt.interrupted
	rt.interrupted = nil
	rt.mu.Unlock()
	for seq, g := range cut {
		g.Close(fmt.Errorf("group %d of %q: %w: the connection was lost", seq, rt.Name, ErrTruncated))
	}
	if rt.Track.NewestGroup() != nil {
		rt.Host.AddLost(1)
	}
	rt.Track.Discontinuity()
}

// resume fills the gap between what the track received before the
// connection was lost and group first, where the resumed subscription
// starts (see above). It returns when the missed groups are in the track.
func (rt *Remote) resume(ctx context.Context, c Family, timescale, first uint64) {
	log := rt.logger()
	rt.mu.Lock()
	cut := rt.interrupted
	rt.interrupted = nil
	rt.mu.Unlock()
	newest := rt.Track.NewestGroup()
	verified := false
	rt.mu.Lock()
	if rt.verifiedOK && newest != nil && rt.verified == newest.Sequence() {
		verified = true
	}
	rt.verifiedOK = false
	rt.mu.Unlock()
	fillCtx := ctx
	ctx, cancel := context.WithTimeout(ctx, resumeTimeout)
	defer cancel()
	// The same publisher session goes on with the same groups: the newest
	// group we hold must still start with the same frame. A peer that
	// serves no FETCH leaves only the sequence to go by.
	// The probe asks from the newest frame we hold: on lite-06 that frame
	// and the ones we miss are all it carries (a frame range), elsewhere
	// the whole group is fetched and cut there.
	var probe []model.Frame
	probeFrom := 0
	same := false
	switch {
	case newest == nil || first < newest.Sequence():
	case verified && first == newest.Sequence():
		// The cut group goes on in the live stream, from its first
		// missing frame (the floor FloorOfCut asked, checked there).
		same = true
	case verified:
		// Checked before SUBSCRIBE: fetch only the frames it misses.
		have, _, _ := newest.Frames(0)
		probeFrom = len(have)
		if p, err := rt.fetchFrom(ctx, c, timescale, newest.Sequence(), probeFrom); err == nil {
			probe = p
		}
		same = true
	default:
		have, _, _ := newest.Frames(0)
		probeFrom = max(0, len(have)-1)
		pctx, pcancel := context.WithTimeout(ctx, rt.Host.Config().RequestTimeout)
		var err error
		if c.FrameRanges() && first == newest.Sequence() {
			// The live group: its one frame is all the check needs (the
			// whole of it would be served as it is written).
			probe, err = rt.FetchFrames(pctx, c, timescale, newest.Sequence(), uint64(probeFrom), uint64(probeFrom), true)
		} else {
			probe, err = rt.fetchFrom(pctx, c, timescale, newest.Sequence(), probeFrom)
		}
		pcancel()
		if err == nil {
			same = len(have) > 0 && len(probe) > 0 && probe[0].Timestamp == have[probeFrom].Timestamp
		} else {
			probe = nil
			same = first > newest.Sequence()
		}
	}
	if !same {
		rt.mu.Lock()
		rt.interrupted = cut // newTimeline ends them
		rt.mu.Unlock()
		if newest != nil {
			log.Info("moq: resumed on a new timeline: the publisher restarted, what it sent during the outage is lost",
				"last", newest.Sequence(), "first", first)
		}
		rt.newTimeline()
		rt.Track.SetStart(first)
		return
	}
	last := newest.Sequence()

	// The cut groups: complete the older ones with FETCH; the one the
	// subscription starts at comes again on its live stream.
	for _, seq := range slices.Sorted(maps.Keys(cut)) {
		g := cut[seq]
		if seq >= first {
			rt.mu.Lock()
			if rt.adoptable == nil {
				rt.adoptable = map[uint64]*model.Group{}
			}
			rt.adoptable[seq] = g
			rt.cutBefore = append(rt.cutBefore, g)
			rt.mu.Unlock()
			continue
		}
		// Only the frames the cut left out are fetched (lite-06), from
		// the newest held one when the probe brought them.
		have, _, _ := g.Frames(0)
		frames, from, err := probe, probeFrom, error(nil)
		if seq != last || probe == nil {
			from = len(have)
			frames, err = rt.fetchFrom(ctx, c, timescale, seq, from)
		}
		if err != nil || from+len(frames) < len(have) {
			log.Info("moq: a group cut by the connection loss cannot be completed", "group", seq, "err", err)
			g.Close(fmt.Errorf("group %d of %q: %w: the connection was lost", seq, rt.Name, ErrTruncated))
			continue
		}
		for _, f := range frames[len(have)-from:] {
			_ = g.WriteFrame(f)
		}
		g.Close(nil)
	}

	// The groups never received: FETCH them, oldest first, a window at
	// a time, and insert them in order.
	from := last + 1
	end := min(first, from+resumeMaxGroups)
	seq := from
	for seq < end {
		n := int(min(uint64(resumeWindow), end-seq))
		res := make([]Fetched, n)
		wctx, wcancel := context.WithTimeout(fillCtx, resumeTimeout)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { res[i].Frames, res[i].Err = rt.Fetch(wctx, c, timescale, seq+uint64(i)) })
		}
		wg.Wait()
		wcancel()
		for _, r := range res {
			if r.Err != nil || InsertGroup(rt.Track, seq, r.Frames) != nil {
				log.Debug("moq: missed group not fetched", "group", seq, "err", r.Err)
				end = seq
				break
			}
			seq++
		}
	}
	if fetchedN := seq - from; fetchedN > 0 {
		log.Info("moq: fetched the groups missed while the connection was down", "groups", fetchedN)
	}
	if seq < first {
		lost := first - seq
		rt.Host.AddLost(lost)
		log.Warn("moq: groups missed while the connection was down are no longer served: a gap in the recording",
			"groups", lost, "from", seq, "to", first-1)
		// Readers go on at first without waiting for these, and report
		// the gap before the next frame.
		rt.Track.MarkLost(seq, first)
	}
}

// ResumeFloor is where a resumed lite-06 subscription asks to start: frame
// frame of group group, when ok.
type ResumeFloor struct {
	Group, Frame uint64
	OK           bool
}

// FloorOfCut returns the floor of a resumed lite-06 subscription: the
// newest group, when the lost connection cut it, at its first frame not
// received, so that the publisher sends only the rest of it. A FETCH of
// the frame before that first checks that the publisher still holds the
// group and is the same one: a floor above a restarted publisher's
// sequences would wait for a group it may never make. Without that, no
// floor (the live edge, as on other versions).
func (rt *Remote) FloorOfCut(ctx context.Context, c Family, timescale uint64) ResumeFloor {
	newest := rt.Track.NewestGroup()
	if newest == nil {
		return ResumeFloor{}
	}
	seq := newest.Sequence()
	rt.mu.Lock()
	_, cut := rt.interrupted[seq]
	rt.mu.Unlock()
	have, finished, _ := newest.Frames(0)
	if !cut || finished || len(have) == 0 {
		return ResumeFloor{}
	}
	n := uint64(len(have))
	pctx, cancel := context.WithTimeout(ctx, rt.Host.Config().RequestTimeout)
	defer cancel()
	frames, err := rt.FetchFrames(pctx, c, timescale, seq, n-1, n-1, true)
	if err != nil || len(frames) != 1 || frames[0].Timestamp != have[n-1].Timestamp {
		return ResumeFloor{}
	}
	rt.mu.Lock()
	rt.verified, rt.verifiedOK = seq, true
	rt.mu.Unlock()
	return ResumeFloor{Group: seq, Frame: n, OK: true}
}

// fetchFrom returns the frames of past group seq from index from on. On a
// version with frame ranges (lite-06) the FETCH asks for those frames
// only; elsewhere the whole group is fetched and cut.
func (rt *Remote) fetchFrom(ctx context.Context, c Family, timescale, seq uint64, from int) ([]model.Frame, error) {
	if c.FrameRanges() {
		return rt.FetchFrames(ctx, c, timescale, seq, uint64(from), 0, false)
	}
	frames, err := rt.Fetch(ctx, c, timescale, seq)
	if err != nil {
		return nil, err
	}
	if len(frames) < from {
		return nil, fmt.Errorf("%w: group %d has %d frames, %d were held", ErrNoFetch, seq, len(frames), from)
	}
	return frames[from:], nil
}
