package model

import (
	"math"
	"sort"
	"sync/atomic"
	"time"
)

const (
	minTimestamp = math.MinInt64
	maxTimestamp = math.MaxInt64
)

// EventKind says what a consumer Event carries.
type EventKind uint8

// Event kinds.
const (
	// EventFrame carries the next frame of the track.
	EventFrame EventKind = iota + 1
	// EventDiscontinuity says the timeline broke before the next frame: a
	// group opened by a Marker, a rewind of the publisher, or a producer
	// Discontinuity.
	EventDiscontinuity
	// EventEnd says the track ended; Err says why (nil: a clean end). It is
	// the last event.
	EventEnd
)

// Event is one step of a track as a consumer reads it.
type Event struct {
	Kind  EventKind
	Frame Frame
	// Keyframe is true for a frame a decoder can start from: the first
	// frame of a group, unless its producer knew better (Frame.Sync). For
	// a Frame.Marker it says the marker opens its group (a discontinuity
	// marker; false: the end of the frame before it).
	Keyframe bool
	// Group is the sequence of the frame's group.
	Group uint64
	Err   error
	// Restart is set on the EventDiscontinuity that starts a new timeline
	// of the producer (Track.Discontinuity: a restarted publisher, a
	// resume on a new publisher session). Until the consumer delivers the
	// first frame of that timeline, groups a backfill adds before the one
	// it waits at are read first (see Track.Backfill).
	Restart bool
}

// Consumer reads one track. Next never blocks. A Consumer is used by one
// goroutine; it is woken by producers through its ReadySet.
type Consumer struct {
	track   *Track
	latency int64 // microseconds

	// Reader state, owned by the reading goroutine but read under track.mu.
	epoch       uint64
	cursor      uint64 // next sequence wanted
	started     bool   // cursor is meaningful
	cur         *Group
	idx         int
	liveEdge    int64 // highest timestamp delivered
	delivered   bool  // liveEdge is meaningful
	pendingDisc bool
	endSent     bool
	// restart: the pending discontinuity is a new timeline (Event.Restart);
	// fresh: nothing of the current timeline was delivered since one.
	restart bool
	fresh   bool
	// needKey is set while the frames read so far do not lead to the
	// next one (at the start, after a discontinuity, a skipped or cut
	// group): frames are dropped until a keyframe. Legacy groups always
	// open with one; CMAF groups need not.
	needKey bool

	// stallSince is when the reader, waiting at a missing or open group,
	// first found newer data running latency past it (zero: it has not,
	// since it last moved on); see gaveUpLocked.
	stallSince time.Time
	// waitSince is when Waiting first found the reader at a missing or
	// open group with newer data after it (zero: not since it last moved
	// on).
	waitSince time.Time

	// Readiness.
	ready  *ReadySet
	queued atomic.Bool

	// Stats.
	skipped uint64
	dropped uint64
}

// Track returns the consumed track.
func (c *Consumer) Track() *Track { return c.track }

// Skipped returns how many groups were abandoned for newer ones.
func (c *Consumer) Skipped() uint64 { return c.skipped }

// Dropped returns how many frames were dropped because no keyframe led to
// them (a group that opens with a delta frame, read first or after a gap).
func (c *Consumer) Dropped() uint64 { return c.dropped }

// Watch attaches the consumer to r: from now on every change of the track
// puts the consumer on r's ready list. The consumer is put there at once, so
// that what is already buffered gets read.
func (c *Consumer) Watch(r *ReadySet) {
	c.track.mu.Lock()
	c.ready = r
	c.track.mu.Unlock()
	c.wake()
}

func (c *Consumer) wake() {
	if r := c.ready; r != nil {
		r.mark(c)
	}
}

// Again puts the consumer back on its ready set's list, for a reader that
// stops before Next returned false (a bounded turn over a track that
// another goroutine fills faster than it is read): it is visited again.
func (c *Consumer) Again() {
	c.track.mu.Lock()
	defer c.track.mu.Unlock()
	c.wake()
}

// Pending reports whether the consumer is on its ready set's list: its track
// changed since the reader last took the list.
func (c *Consumer) Pending() bool { return c.queued.Load() }

// Waiting reports whether the reader waits at a group that has not come,
// or is open with nothing more to read, while newer groups of the track
// hold data, and has waited for less than waitSpan latencies of wall
// time: the group is on its way (a stream its goroutine has not read yet,
// a packet being retransmitted) and the reader delivers it, then the
// newer ones, when it comes, or gives up on it (Skipped) once the newer
// data ran its latency past it and has for its latency of wall time,
// about two latencies on a live track. A merge
// of tracks (the export's jitter buffer) waits for such a track as for
// one with data not read yet, instead of taking it for a silent one and
// running the other tracks past the frames it is about to deliver, which
// would then come late and be dropped.
func (c *Consumer) Waiting() bool {
	t := c.track
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended || c.endSent || c.epoch != t.epoch || !c.started || c.latency <= 0 {
		return false
	}
	gs := t.groups
	i := c.groupIndex(c.cursor)
	if i < len(gs) && gs[i].seq == c.cursor {
		if g := gs[i]; g.finished || c.readIn(g) < len(g.frames) {
			return false // it has more to read, or moves on
		}
		i++
	}
	newer := false
	for _, g := range gs[i:] {
		if g.media > 0 {
			newer = true
			break
		}
	}
	if !newer {
		return false
	}
	now := t.now()
	if c.waitSince.IsZero() {
		c.waitSince = now
	}
	return now.Sub(c.waitSince) < waitSpan*time.Duration(c.latency)*time.Microsecond
}

// waitSpan bounds Waiting, in latencies: past the two a live track takes
// to give a group up, with room to spare, so that a merge waiting for the
// track does not run the others past it just before it gives up (its next
// frames would come late), yet a track whose newer data stops short of
// its latency ahead does not hold a merge back for ever.
const waitSpan = 3

// Close detaches the consumer from its track.
func (c *Consumer) Close() { c.track.unsubscribe(c) }

// Next returns the next event, or false when nothing is available now.
func (c *Consumer) Next() (Event, bool) {
	ev, ok := c.next()
	if ok {
		c.stallSince, c.waitSince = time.Time{}, time.Time{}
	}
	return ev, ok
}

// NextFrames appends to dst what Next would return, call after call, for
// as long as it cannot be anything but a frame of the group being read:
// the next event, then, while that was a frame (not a Marker) and the
// group holds more frames that nothing stands before (a marker, a
// discontinuity, a frame to drop while waiting for a keyframe, a frame let
// go of), the frames after it, up to cap(dst); all under one lock of the
// track. An empty result is Next's false. A reader that takes a whole
// group per call pays the lock once per group, not per frame, and what it
// sees between two events (Skipped, Held) is what Next would have shown
// it: a run never crosses into another group.
func (c *Consumer) NextFrames(dst []Event) []Event {
	t := c.track
	t.mu.Lock()
	n := len(dst)
	for len(dst) < cap(dst) {
		if len(dst) > n && !c.plainFrameNextLocked() {
			break
		}
		ev, ok := c.nextLocked()
		if !ok {
			break
		}
		dst = append(dst, ev)
		if ev.Kind != EventFrame || ev.Frame.Marker {
			break
		}
	}
	t.mu.Unlock()
	if len(dst) > n {
		c.stallSince, c.waitSince = time.Time{}, time.Time{}
	}
	return dst
}

// plainFrameNextLocked reports whether nextLocked would return the next
// frame of the current group as it is, with nothing before it. Called
// with track.mu held.
func (c *Consumer) plainFrameNextLocked() bool {
	g := c.cur
	if g == nil || c.endSent || c.pendingDisc || c.needKey || c.epoch != c.track.epoch ||
		c.idx == 0 || c.idx < g.released || c.idx >= len(g.frames) {
		return false
	}
	return !g.frames[c.idx].Marker
}

func (c *Consumer) next() (Event, bool) {
	t := c.track
	t.mu.Lock()
	defer t.mu.Unlock()
	return c.nextLocked()
}

// nextLocked is next with track.mu held.
func (c *Consumer) nextLocked() (Event, bool) {
	t := c.track
	if c.endSent {
		return Event{}, false
	}
	if c.epoch != t.epoch {
		// The producer restarted the track: start over on the new groups.
		// Whether anything was delivered is read before it is reset.
		allowed := c.pendingDiscAllowed()
		c.epoch, c.started, c.cur, c.delivered = t.epoch, false, nil, false
		c.needKey = true
		c.liveEdge = minTimestamp
		if allowed {
			c.pendingDisc, c.restart, c.fresh = true, true, true
		}
	}
	for {
		if c.cur == nil && !c.pickGroup() {
			if t.ended && !c.hasNewer() {
				c.endSent = true
				return Event{Kind: EventEnd, Err: t.err}, true
			}
			t.pruneLocked()
			t.drainedLocked()
			return Event{}, false
		}
		g := c.cur
		if c.idx < g.released {
			// Let go of (SetReleaseRead) before this reader joined: what
			// follows needs a keyframe.
			c.dropped += uint64(g.released - c.idx)
			c.idx, c.needKey = g.released, true
		}
		if c.idx < len(g.frames) {
			if c.idx == 0 && c.delivered && !g.frames[0].Marker && g.frames[0].Timestamp < c.liveEdge && g.frames[0].Sync != SyncDelta {
				// A newer group that starts before what was already
				// delivered: the publisher rewound. (A group that opens
				// with a delta frame is not a new timeline: a publisher
				// that sends each frame as a group, its B-frames going
				// back in time.)
				c.pendingDisc = true
			}
			if c.pendingDisc {
				restart := c.restart
				c.pendingDisc, c.restart = false, false
				c.liveEdge = minTimestamp
				c.delivered = false
				c.needKey = true
				return Event{Kind: EventDiscontinuity, Group: g.seq, Restart: restart}, true
			}
			f := g.frames[c.idx]
			if f.Marker {
				// hang's empty-payload marker: delivered as it is
				// (a relay passes it on, a muxer takes an end from
				// it), and, opening its group, a discontinuity
				// before the next group. It leaves the keyframe
				// state and the live edge alone.
				c.idx++
				if c.idx == 1 && c.delivered {
					c.pendingDisc = true
				}
				if c.needKey && c.idx > 1 {
					continue // it ends a frame that was dropped
				}
				if t.releaseRead {
					t.releaseLocked(g)
				}
				return Event{Kind: EventFrame, Frame: f, Keyframe: c.idx == 1, Group: g.seq}, true
			}
			key := f.Sync == SyncKey || (f.Sync == SyncGroup && c.idx == 0)
			c.idx++
			if !key && c.needKey {
				c.dropped++
				continue
			}
			c.needKey = false
			ev := Event{Kind: EventFrame, Frame: f, Keyframe: key, Group: g.seq}
			c.delivered, c.fresh = true, false
			if f.Timestamp > c.liveEdge {
				c.liveEdge = f.Timestamp
			}
			t.readLocked(f.Timestamp)
			if t.releaseRead {
				t.releaseLocked(g)
			}
			return ev, true
		}
		if g.finished {
			// An empty group means nothing (hang: a discontinuity is a
			// group holding one empty payload, a Marker).
			if g.err != nil {
				c.needKey = true // cut short: the next group may not follow
			}
			c.advance(g.seq + 1)
			continue
		}
		// The cursor group is open and drained: give up on it only when a
		// newer group is latency ahead.
		if next := c.skipTarget(g); next != nil {
			c.skipped++
			c.needKey = true
			c.advance(next.seq)
			continue
		}
		// Read up: the groups read past can go now, not only when the
		// next group comes (a paused broadcast sends none).
		t.pruneLocked()
		t.drainedLocked()
		return Event{}, false
	}
}

// readIn returns how many frames of group g (of the track's current
// timeline) the consumer has read. Called with track.mu held.
func (c *Consumer) readIn(g *Group) int {
	switch {
	case c.epoch != c.track.epoch || !c.started:
		return 0 // it starts over, maybe at g
	case c.cur == g:
		return c.idx
	case c.cursor > g.seq:
		return len(g.frames)
	}
	return 0
}

// pendingDiscAllowed says whether a restart is worth reporting: only after
// something was delivered.
func (c *Consumer) pendingDiscAllowed() bool { return c.delivered || c.cursor > 0 }

func (c *Consumer) advance(seq uint64) {
	c.cur, c.idx, c.cursor = nil, 0, seq
	c.stallSince, c.waitSince = time.Time{}, time.Time{}
}

// groupIndex returns the position of the first group with sequence >= seq.
func (c *Consumer) groupIndex(seq uint64) int {
	gs := c.track.groups
	return sort.Search(len(gs), func(i int) bool { return gs[i].seq >= seq })
}

// pickGroup sets c.cur to the group at the cursor, if there is one to read.
func (c *Consumer) pickGroup() bool {
	gs := c.track.groups
	if !c.started && c.track.startSet {
		// The producer said where its groups begin: wait for that one.
		c.started, c.cursor = true, c.track.start
	}
	if !c.started {
		// Start once a group has a frame: at the oldest such group, or
		// at an older one still open whose frame has not been written
		// yet. Each group's stream is read by a goroutine of its own:
		// a subscription creates its groups in order (session's
		// StreamOrder), but group 1's frame can land before group 0's,
		// and starting at group 1 would lose group 0. An empty
		// finished group means nothing. The reader waits at the open
		// one as at a missing group (skipTarget).
		open := -1
		for i, g := range gs {
			if len(g.frames) > 0 {
				if open >= 0 {
					g = gs[open]
				}
				c.started, c.cur, c.idx, c.cursor = true, g, 0, g.seq
				return true
			}
			if open < 0 && !g.finished {
				open = i
			}
		}
		return false
	}
	if c.cursor < c.track.floor {
		// The track dropped the groups this reader had not reached: it
		// lagged more than MaxLag. Go on with what is kept.
		c.skipped++
		c.needKey = true
		c.cursor = c.track.floor
	}
	for c.skipLost() {
	}
	i := c.groupIndex(c.cursor)
	if i == len(gs) {
		return false
	}
	g := gs[i]
	if g.seq == c.cursor {
		c.cur, c.idx = g, 0
		return true
	}
	// The cursor group has not arrived (or was evicted). Wait for it unless
	// the track ended or a newer group is latency ahead of what we
	// delivered.
	var next *Group
	for _, ng := range gs[i:] {
		if ng.media > 0 {
			next = ng
			break
		}
	}
	if next == nil {
		if c.track.ended {
			// Only empty or truncated groups are left: nothing to read.
			c.cursor = gs[len(gs)-1].seq + 1
		}
		return false
	}
	// How far the data already here runs past the missing group: from what
	// was delivered, or (nothing delivered yet) from the next group.
	from := c.liveEdge
	if !c.delivered {
		from = next.minTS
	}
	if c.track.ended || c.gaveUpLocked(c.newestTS(i)-from) {
		c.skipped++
		c.needKey = true
		c.cur, c.idx, c.cursor = next, 0, next.seq
		return true
	}
	return false
}

// newestTS returns the highest timestamp of the newest group at or after
// position i that has frames.
func (c *Consumer) newestTS(i int) int64 {
	gs := c.track.groups
	for j := len(gs) - 1; j >= i; j-- {
		if gs[j].media > 0 {
			return gs[j].maxTS
		}
	}
	return minTimestamp
}

// skipTarget returns the newer group to jump to when the open group g has
// stalled: newer groups run latency past its newest frame; or nil.
func (c *Consumer) skipTarget(g *Group) *Group {
	gs := c.track.groups
	i := c.groupIndex(g.seq + 1)
	var next *Group
	for _, ng := range gs[i:] {
		if ng.media > 0 {
			next = ng
			break
		}
	}
	if next == nil {
		return nil
	}
	// Measured from the newest frame g has: group streams travel side by
	// side, so the next group's first frames often land before the last
	// ones of g. Only data running latency past what g got means g stalled.
	newest := g.maxTS
	if g.media == 0 {
		// Nothing of g yet: measured from what was delivered, or (nothing
		// delivered yet) from the next group, as for a missing group.
		newest = c.liveEdge
		if !c.delivered {
			newest = next.minTS
		}
	}
	if c.gaveUpLocked(c.newestTS(i) - newest) {
		return next
	}
	return nil
}

// gaveUpLocked reports whether the reader gives up on the group it waits
// at (missing, or open with nothing more to read), given how far the newer
// data runs past it in media time: once that is the latency or more, and
// has been for the latency of wall time, unless the track is held. A
// group that really stalled makes no progress for that long. The groups
// a silence held back do not stall: once the connection is back they
// land at once (a second and more of media within milliseconds, one
// stream per group, each read by its own goroutine), and a newer group
// whose goroutine ran first says nothing of an older one whose goroutine
// has not run yet (a blackhole shorter than the idle timeout lost up to
// half a second of audio this way, and single frames). Called with
// track.mu held.
func (c *Consumer) gaveUpLocked(ahead int64) bool {
	if ahead < c.latency || c.heldLocked() {
		return false
	}
	if c.latency <= 0 {
		return true
	}
	now := c.track.now()
	if c.stallSince.IsZero() {
		c.stallSince = now
	}
	return now.Sub(c.stallSince) >= time.Duration(c.latency)*time.Microsecond
}

// heldLocked reports whether the track is held (Track.Hold): its producer
// is adding the groups a reader waits at, after newer ones that landed
// first (a resume's burst of group streams), so nothing is skipped as
// stalled. Called with track.mu held.
func (c *Consumer) heldLocked() bool { return c.track.holds > 0 && !c.track.ended }

// hasNewer reports whether groups past the cursor remain to be read.
func (c *Consumer) hasNewer() bool {
	if !c.started {
		for _, g := range c.track.groups {
			if len(g.frames) > 0 || !g.finished {
				return true
			}
		}
		return false
	}
	return c.groupIndex(c.cursor) < len(c.track.groups)
}
