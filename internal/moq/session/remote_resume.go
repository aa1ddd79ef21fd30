package session

import (
	"context"
	"errors"
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
	// Where one FETCH names a range of groups (moq-transport), it asks at
	// most resumeRange of them, and resumeRangeWindow such FETCHes run at
	// once: a minute of 47 audio groups a second is 45 requests, not
	// 2,820 (the reconnect's burst of streams overloaded a recorder).
	resumeRange       = 64
	resumeRangeWindow = 4
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
//     order (a FETCH per run of groups on moq-transport, per group on
//     moq-lite), the cut groups are completed (FETCH for the older ones,
//     the live stream for the one SUBSCRIBE_OK names), and the live groups
//     wait until that is done (see Subscription.WaitStarted); nothing is
//     lost while the relay still holds the groups;
//   - a group the relay no longer serves ends the fill: it and the groups
//     after it up to the live ones are marked lost (model.Track.MarkLost),
//     so readers see one discontinuity, and the log says how many groups
//     were lost;
//   - a fill that the loss of this connection cuts loses nothing: the
//     groups still missing stay so, the track stays held, and the next
//     connection's resume fetches them with its own gap (fill);
//   - sequences that restart are a new publisher session: a new timeline
//     (model.Track.Discontinuity), whose groups before the live one that
//     the publisher still holds are fetched and inserted first
//     (fillRestart);
//   - a peer that serves no FETCH (it refuses the probe) is asked, where
//     the sequences go on (moq-lite-05+, moq-transport), the newest group held and the
//     ones after it by a span subscription (spanCheck): a group of that
//     number starting elsewhere in time is a restarted publisher whose new
//     numbers passed the old ones, a new timeline as above; the same start
//     is the same publisher, and the span's groups fill the gap.
//
// On lite-06 (frame ranges) nothing the track holds is sent again but one
// frame: before resubscribing, a FETCH of the newest held frame of a cut
// newest group checks the publisher (FloorOfCut), and SUBSCRIBE asks from
// that frame (its group reader skips it); the FETCHes that complete cut
// groups ask only their missing frames (fetchFrom).

// setStart starts the track at group first, the first its subscription
// delivers (model.Track.SetStart), and remembers it for a resume.
func (rt *Remote) setStart(first uint64) {
	rt.Track.SetStart(first)
	rt.mu.Lock()
	rt.start, rt.startKnown = first, true
	rt.mu.Unlock()
}

// started returns the track's start (setStart), ok false when none was
// named.
func (rt *Remote) started() (first uint64, ok bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.start, rt.startKnown
}

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
		rt.holding, rt.heldAt = true, time.Now()
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
	gen, cut := rt.holdGen, rt.fillPending
	rt.mu.Unlock()
	if cut {
		// The loss of the connection cut the fill: the track stays held
		// for the next connection's resume, which fills the rest.
		return
	}
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
	rt.fillPending = false
	rt.startKnown = false // the discontinuity forgets the start
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
	log.Debug("moq: resuming after the connection's loss", "first", first)
	rt.mu.Lock()
	cut := rt.interrupted
	rt.interrupted = nil
	// The groups from pendingFrom on that a fill cut by the last loss
	// left missing.
	pending, pendingFrom := rt.fillPending, rt.fillFrom
	rt.fillPending = false
	rt.mu.Unlock()
	newest := rt.newestWithFrames()
	if newest == nil {
		newest = rt.Track.NewestGroup()
	}
	if start, named := rt.started(); newest == nil && (!named || first >= start) {
		// Nothing came before the loss (a machine stalled past the
		// idle timeout right after the publisher accepted the track):
		// there is nothing to compare with the publisher. Taken for a
		// restart, the fill would reach back over the whole resume
		// window: seconds of media from before the recording began.
		if !named {
			// The publisher named no group either: the track starts
			// where the resumed subscription does, as a first one.
			log.Debug("moq: nothing came before the loss and no group was named: starting at the resumed subscription's", "first", first)
			rt.setStart(first)
			return
		}
		// The sequence went on: the same publisher. The groups from
		// where the subscription started are fetched, as the gap after
		// any loss.
		if pending {
			start = min(start, pendingFrom)
		}
		rt.fill(ctx, c, timescale, start, first)
		return
	}
	verified := false
	rt.mu.Lock()
	if rt.verifiedOK && newest != nil && rt.verified == newest.Sequence() {
		verified = true
	}
	rt.verifiedOK = false
	rt.mu.Unlock()
	fillCtx := ctx
	ctx, cancel := withTimeout(ctx, resumeTimeout, "the resume's FETCHes")
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
	// spanned: groups newest, newest+1, ... of the same publisher, from
	// the span subscription that told it (spanCheck).
	var spanned [][]model.Frame
	switch {
	case newest == nil || first < newest.Sequence():
	case verified && first == newest.Sequence():
		// The cut group goes on in the live stream, from its newest
		// frame held (the floor FloorOfCut asked, checked there).
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
		if len(have) == 0 {
			// Nothing to compare (the track holds only groups the loss
			// cut before their first frame; older ones were read and
			// dropped): the sequence goes by, as without FETCH.
			same = first > newest.Sequence()
			break
		}
		probeFrom = len(have) - 1
		pctx, pcancel := withTimeout(ctx, rt.Host.Config().RequestTimeout, "the FETCH that checks the publisher")
		var err error
		if c.FrameRanges() && first == newest.Sequence() {
			// The live group: its one frame is all the check needs (the
			// whole of it would be served as it is written).
			probe, err = rt.FetchFrames(pctx, c, timescale, newest.Sequence(), uint64(probeFrom), uint64(probeFrom), true)
		} else {
			probe, err = rt.fetchFrom(pctx, c, timescale, newest.Sequence(), probeFrom)
		}
		pcancel()
		switch {
		case err == nil:
			same = len(have) > 0 && len(probe) > 0 && probe[0].Timestamp == have[probeFrom].Timestamp
		case LostWith(fillCtx, c, err):
			// The check went with the connection: it tells nothing of
			// the publisher. The next connection's resume checks again
			// and fills the gap, which stays held meanwhile.
			rt.mu.Lock()
			rt.interrupted = cut
			rt.fillPending = true
			rt.fillFrom = newest.Sequence() + 1
			if pending {
				rt.fillFrom = min(rt.fillFrom, pendingFrom)
			}
			rt.mu.Unlock()
			log.Info("moq: the connection was lost while the publisher was checked: the next connection resumes", "err", err)
			return
		case mayBeRefused(err) && first > newest.Sequence() && first-newest.Sequence() <= resumeMaxGroups && c.SpanSubscribes():
			// A peer that serves no FETCH: the sequence alone would take
			// a restarted publisher whose new numbers passed the old ones
			// for the old one going on. A span subscription asks the
			// newest group held again, and the ones after it.
			var told bool
			if same, told, spanned = rt.spanCheck(ctx, c, have, newest.Sequence(), first); !told {
				same = true // the sequence goes by
			}
			if same && len(spanned) > 0 {
				probe = spanned[0][probeFrom:]
			}
		default:
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
		rt.setStart(first)
		rt.fillRestart(fillCtx, c, timescale, first)
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
		if err != nil && (fillCtx.Err() != nil || LostWith(fillCtx, c, err)) {
			rt.interrupt(seq, g) // lost again: the next connection completes it
			continue
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

	// The groups after it that the span subscription brought.
	for i, frames := range spanned[min(1, len(spanned)):] {
		if err := InsertGroup(rt.Track, last+1+uint64(i), frames); err != nil && !errors.Is(err, model.ErrDuplicateGroup) {
			log.Debug("moq: a group the span subscription brought not inserted", "group", last+1+uint64(i), "err", err)
		}
	}
	if len(spanned) > 1 {
		log.Info("moq: subscribed the groups missed while the connection was down", "groups", len(spanned)-1, "from", last+1, "to", last+uint64(len(spanned))-1)
	}

	// The groups never received, and those a fill that the loss of the
	// last connection cut left missing: FETCH them, oldest first, a
	// window at a time, and insert them in order. Those the span brought
	// are not among them, though a reader may have taken them already
	// (the track would no longer hold them).
	from := last + uint64(max(1, len(spanned)))
	if pending && pendingFrom < from {
		from = pendingFrom
	}
	rt.fill(fillCtx, c, timescale, from, first)
}

// spanCheck tells, for a peer that serves no FETCH, whether the publisher
// is the one whose group newest the track holds (have, its frames): a span
// subscription asks groups newest to first-1 (first, where the resumed
// subscription starts, is past newest), and the publisher's group newest
// must start with the same timestamps. A restarted publisher's new
// timeline numbers its groups afresh: once they pass the old ones, the
// sequence alone took it for the old one going on (it asked FETCH for the
// groups in between, was refused, and lost what the new publisher sent
// before the recorder came back); its group of that number lies elsewhere
// in time (a clock that starts afresh, or the wall clock's later time).
// told is false when the span did not bring group newest (the peer
// refused it, holds no more, or the connection went): nothing is known
// then. For the same publisher, spanned holds groups newest, newest+1,
// ... as far as they came without a gap: what FETCH would have filled.
func (rt *Remote) spanCheck(ctx context.Context, c Family, have []model.Frame, newest, first uint64) (same, told bool, spanned [][]model.Frame) {
	got, err := rt.subscribeSpan(ctx, c, GroupSpan{From: newest, To: first - 1, MaxAge: rt.fillBudget()})
	if uint64(len(got)) < first-newest {
		rt.logger().Debug("moq: the span subscription did not bring the newest group held: the sequence tells the publisher", "group", newest, "err", err)
		return false, false, nil
	}
	spanned = got[:first-newest]
	slices.Reverse(spanned) // oldest first: newest, newest+1, ...
	held := spanned[0]
	same = len(held) >= len(have)
	for i := 0; same && i < len(have); i++ {
		same = held[i].Timestamp == have[i].Timestamp
	}
	if !same {
		rt.logger().Info("moq: the publisher's group of the newest number held starts elsewhere in time: it restarted",
			"group", newest, "held", have[0].Timestamp, "now", held[0].Timestamp)
		return false, true, nil
	}
	return true, true, spanned
}

// spanFill asks groups [from, first) of a peer that refused FETCH by a
// span subscription and inserts those that came, oldest first: groups
// first-n to first-1, n returned. What it does not bring stays missing
// (fill marks it lost).
func (rt *Remote) spanFill(ctx context.Context, c Family, from, first uint64) int {
	if first <= from || first-from > resumeMaxGroups {
		return 0
	}
	sctx, cancel := withTimeout(ctx, resumeTimeout, "the span subscription")
	got, err := rt.subscribeSpan(sctx, c, GroupSpan{From: from, To: first - 1, MaxAge: rt.fillBudget()})
	cancel()
	if err != nil {
		rt.logger().Debug("moq: the groups missed not subscribed", "err", err)
	}
	for i := len(got) - 1; i >= 0; i-- {
		seq := first - 1 - uint64(i)
		if err := InsertGroup(rt.Track, seq, got[i]); err != nil && !errors.Is(err, model.ErrDuplicateGroup) {
			rt.logger().Debug("moq: a group the span subscription brought not inserted", "group", seq, "err", err)
		}
	}
	return len(got)
}

// fill fetches the groups of [from, first) the track does not hold, in
// runs of consecutive groups: one FETCH per run of up to resumeRange groups
// where the family's FETCH names a range of groups (moq-transport), one per
// group otherwise, at most resumeWindow FETCHes at once. Each group is
// inserted as it comes, oldest first. A group not served ends the fill:
// the rest is lost (model.Track.MarkLost). A fill that the loss of the
// connection cuts loses nothing: the track stays held (releaseAtLive) and
// the next connection's resume goes on from the first group still missing.
func (rt *Remote) fill(ctx context.Context, c Family, timescale, from, first uint64) {
	log := rt.logger()
	span, window := uint64(1), resumeWindow
	if c.GroupRanges() {
		span, window = resumeRange, resumeRangeWindow
	}
	runs := rt.missing(from, first, resumeMaxGroups)
	reqs := splitRuns(runs, span)
	if len(reqs) > 0 {
		log.Debug("moq: fetching the groups missed", "from", runs[0].from, "to", runs[len(runs)-1].to-1)
	}
	fetched := 0
	var failed error
	for len(reqs) > 0 && failed == nil {
		batch := reqs[:min(window, len(reqs))]
		reqs = reqs[len(batch):]
		res := rt.fetchRuns(ctx, c, timescale, batch)
	insert:
		for i, r := range batch {
			for j, f := range res[i] {
				seq := r.from + uint64(j)
				err := f.Err
				if err == nil {
					if err = InsertGroup(rt.Track, seq, f.Frames); errors.Is(err, model.ErrDuplicateGroup) {
						err = nil // came meanwhile
					}
				}
				if err != nil {
					log.Debug("moq: missed group not fetched", "group", seq, "err", err)
					failed, from = err, seq
					break insert
				}
				fetched++
			}
		}
	}
	if fetched > 0 {
		log.Info("moq: fetched the groups missed while the connection was down", "groups", fetched)
	}
	end := first // the groups from end on are in
	if errors.Is(failed, ErrFetchRefused) && c.SpanSubscribes() && ctx.Err() == nil {
		// The peer said it serves no FETCH (not that it lacks the
		// groups): the rest is asked by a span subscription, which
		// brings groups up to first-1 (a reader may take them at once).
		if n := rt.spanFill(ctx, c, from, first); n > 0 {
			end = first - uint64(n)
			log.Info("moq: subscribed the groups missed while the connection was down", "groups", n, "from", end, "to", first-1)
		}
	}
	if failed == nil {
		if len(runs) == 0 {
			return
		}
		// What resumeMaxGroups left out is lost without asking.
		from = runs[len(runs)-1].to
	}
	if failed != nil && (ctx.Err() != nil || LostWith(ctx, c, failed)) {
		rt.mu.Lock()
		rt.fillPending, rt.fillFrom = true, from
		rt.mu.Unlock()
		log.Info("moq: the connection was lost while the missed groups were fetched: the next connection goes on with them",
			"from", from, "to", first-1)
		return
	}
	lost := rt.missing(from, end, 0)
	var n uint64
	for _, r := range lost {
		n += r.to - r.from
		// Readers go on after these without waiting for them, and
		// report the gap before the next frame.
		rt.Track.MarkLost(r.from, r.to)
	}
	switch {
	case n > 0 && errors.Is(failed, ErrTimeout):
		// The connection stayed up: the publisher did not answer.
		rt.Host.AddLost(n)
		log.Warn("moq: the publisher did not answer the FETCH of the groups missed while the connection was down: a gap in the recording",
			"groups", n, "from", from, "to", first-1, "err", failed)
	case n > 0:
		rt.Host.AddLost(n)
		log.Warn("moq: groups missed while the connection was down are no longer served: a gap in the recording",
			"groups", n, "from", from, "to", first-1)
	}
}

// fillRestart fetches the groups that a restarted publisher's new
// timeline holds before group first, where the resumed subscription
// starts, and inserts them oldest first, before the live groups (which
// wait for resume). A publisher back at once has sent a few groups by the
// time the loss of the old connection is noticed (seconds later); without
// them the recording would lose the outage, that delay and the part of
// the live group before the join.
//
// The fill goes back, newest first, to the oldest group the publisher
// still serves, and no further in media time than the outage can hold:
// the time since the loss was noticed plus the track's resume window
// (2 ReconnectMax + ResumeGrace, 30 s by default), which covers the
// silence before the loss was noticed (QUIC's idle timeout, stretched by
// its PTO floor on a loaded machine) with room to spare. A restarted
// publisher holds nothing older than its restart; a timeline reaching
// further back is not one that restarted during this outage.
//
// A peer that serves no FETCH (the version has none, or it refuses the
// first one: the reference publisher) is asked for the same groups by a
// span subscription where the family has one (subscribeSpan: moq-lite's
// Group Start and End, moq-transport's absolute range), within the same
// bounds; elsewhere the track
// starts at group first.
func (rt *Remote) fillRestart(ctx context.Context, c Family, timescale, first uint64) {
	if first == 0 {
		return
	}
	budget := rt.fillBudget()
	lo := first - min(first, resumeMaxGroups)
	var got [][]model.Frame // got[i] is group first-1-i
	how := "fetched"
	var failed error
	if c.Fetches() {
		got, failed = rt.fetchRestart(ctx, c, timescale, lo, first, budget)
	}
	if len(got) == 0 && (!c.Fetches() || mayBeRefused(failed)) && c.SpanSubscribes() {
		sctx, cancel := withTimeout(ctx, resumeTimeout, "the span subscription")
		span, err := rt.subscribeSpan(sctx, c, GroupSpan{From: lo, To: first - 1, MaxAge: budget})
		cancel()
		if err != nil {
			rt.logger().Debug("moq: the restarted publisher's groups before the live one not subscribed", "err", err)
		}
		got, how = withinBudget(span, budget), "subscribed"
	}
	for i := len(got) - 1; i >= 0; i-- {
		if err := InsertGroup(rt.Track, first-1-uint64(i), got[i]); err != nil && !errors.Is(err, model.ErrDuplicateGroup) {
			rt.logger().Debug("moq: a group of the new timeline not inserted", "group", first-1-uint64(i), "err", err)
		}
	}
	if len(got) > 0 {
		rt.logger().Info("moq: "+how+" the restarted publisher's groups before the live one",
			"groups", len(got), "from", first-uint64(len(got)), "to", first-1)
	}
}

// fillBudget bounds how far back in media time a fill reaches from the
// newest group it gets: the time since the loss was noticed plus the
// track's resume window (see fillRestart).
func (rt *Remote) fillBudget() time.Duration {
	rt.mu.Lock()
	heldAt := rt.heldAt
	rt.mu.Unlock()
	budget := rt.resumeWindow()
	if !heldAt.IsZero() {
		budget += time.Since(heldAt)
	}
	return budget
}

// fetchRestart fetches groups first-1, first-2, ... down to lo, newest
// first, in windows, until one is not served (failed says why) or lies
// more than budget before group first-1; got[i] is group first-1-i.
func (rt *Remote) fetchRestart(ctx context.Context, c Family, timescale, lo, first uint64, budget time.Duration) (got [][]model.Frame, failed error) {
	span, window := uint64(1), resumeWindow
	if c.GroupRanges() {
		span, window = resumeRange, resumeRangeWindow
	}
	var top int64 // the first timestamp of group first-1
	for hi, done := first, false; hi > lo && !done; {
		var reqs []seqRun // newest first
		for len(reqs) < window && hi > lo {
			from := hi - min(span, hi-lo)
			reqs = append(reqs, seqRun{from, hi})
			hi = from
		}
		res := rt.fetchRuns(ctx, c, timescale, reqs)
	walk:
		for i := range reqs {
			for j := len(res[i]) - 1; j >= 0; j-- {
				f := res[i][j]
				if f.Err != nil || len(f.Frames) == 0 {
					failed, done = f.Err, true
					break walk
				}
				ts := f.Frames[0].Timestamp
				if len(got) == 0 {
					top = ts
				} else if pastBudget(top, ts, budget) {
					done = true
					break walk
				}
				got = append(got, f.Frames)
			}
		}
	}
	return got, failed
}

// withinBudget is groups (newest first) up to the first that starts more
// than budget before the newest.
func withinBudget(groups [][]model.Frame, budget time.Duration) [][]model.Frame {
	for i, frames := range groups {
		if i > 0 && pastBudget(groups[0][0].Timestamp, frames[0].Timestamp, budget) {
			return groups[:i]
		}
	}
	return groups
}

// pastBudget reports whether a group of the new timeline starting at ts
// (microseconds) lies more than budget before the newest one's start,
// newest: where a restart's fill stops, fetched or subscribed.
func pastBudget(newest, ts int64, budget time.Duration) bool {
	return newest-ts > budget.Microseconds()
}

// fetchRuns fetches the groups of each run at once: one FETCH per run
// (a run of more than one group needs Family.GroupRanges), within
// resumeTimeout; res[i][j] is group reqs[i].from+j.
func (rt *Remote) fetchRuns(ctx context.Context, c Family, timescale uint64, reqs []seqRun) [][]Fetched {
	res := make([][]Fetched, len(reqs))
	wctx, wcancel := withTimeout(ctx, resumeTimeout, "a window of FETCHes")
	defer wcancel()
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() {
			if r.to-r.from == 1 {
				f := Fetched{}
				f.Frames, f.Err = rt.Fetch(wctx, c, timescale, r.from)
				res[i] = []Fetched{f}
				return
			}
			res[i] = rt.FetchGroups(wctx, c, timescale, r.from, int(r.to-r.from))
		})
	}
	wg.Wait()
	return res
}

// seqRun is the group sequences [from, to).
type seqRun struct{ from, to uint64 }

// missing returns the runs of the group sequences in [from, to) that the
// track does not hold, oldest first, at most limit groups in all (0: no
// limit). Groups past the newest one held are all missing.
func (rt *Remote) missing(from, to uint64, limit uint64) []seqRun {
	var runs []seqRun
	held := uint64(0) // the sequences up to held-1 may be held
	if g := rt.Track.NewestGroup(); g != nil {
		held = g.Sequence() + 1
	}
	n := uint64(0)
	for seq := from; seq < to && (limit == 0 || n < limit); {
		if seq < held && rt.Track.Group(seq) != nil {
			seq++
			continue
		}
		end := to
		if seq < held {
			end = seq + 1
			for end < min(held, to) && rt.Track.Group(end) == nil {
				end++
			}
			if end == held {
				end = to
			}
		}
		if limit > 0 {
			end = min(end, seq+(limit-n))
		}
		if k := len(runs); k > 0 && runs[k-1].to == seq {
			runs[k-1].to = end
		} else {
			runs = append(runs, seqRun{seq, end})
		}
		n += end - seq
		seq = end
	}
	return runs
}

// splitRuns cuts runs into runs of at most span sequences.
func splitRuns(runs []seqRun, span uint64) []seqRun {
	var out []seqRun
	for _, r := range runs {
		for s := r.from; s < r.to; s += min(span, r.to-s) {
			out = append(out, seqRun{s, s + min(span, r.to-s)})
		}
	}
	return out
}

// newestWithFrames returns the newest group of the track that holds a
// frame, nil when none does (within resumeMaxGroups of the newest group).
// A group stream that the loss of a connection cut before its first frame
// made a group without one: it cannot tell whether the publisher is the
// same, and it is completed with the others the loss cut.
func (rt *Remote) newestWithFrames() *model.Group {
	g := rt.Track.NewestGroup()
	if g == nil {
		return nil
	}
	top := g.Sequence()
	for seq := top; top-seq < resumeMaxGroups; seq-- {
		if g := rt.Track.Group(seq); g != nil {
			if frames, _, _ := g.Frames(0); len(frames) > 0 {
				return g
			}
		}
		if seq == 0 {
			break
		}
	}
	return nil
}

// ResumeFloor is where a resumed lite-06 subscription asks to start: frame
// frame of group group, when ok.
type ResumeFloor struct {
	Group, Frame uint64
	OK           bool
}

// FloorOfCut returns the floor of a resumed lite-06 subscription: the
// newest group, when the lost connection cut it, at its newest frame
// received, so that the publisher sends only that frame again (the group
// reader skips it) and the rest. A FETCH of that frame first checks that
// the publisher still holds the group and is the same one: a floor above a
// restarted publisher's sequences would wait for a group it may never
// make. Without that, no floor (the live edge, as on other versions).
//
// The floor is the frame held, not the first one missing: a group cut
// after its last frame, before its end, has no frame there, and a
// publisher that cannot serve the frame asked starts at its next group
// (lite-06 section 3.6), sending SUBSCRIBE_OK only once that group exists.
// The resume, the fill of the groups missed and the cut group's end would
// wait for it: for ever on a track that writes nothing more (a sparse
// track, a paused publisher). A frame the publisher was just seen to hold
// starts the subscription in that group at once, and its stream's end
// completes the group.
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
	return ResumeFloor{Group: seq, Frame: n - 1, OK: true}
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
