package jitter

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/moq-export/moq-export/mux"
)

// DefaultDelay is the default bound on how long a lagging track holds the
// output back.
const DefaultDelay = 500 * time.Millisecond

// LatePolicy says what happens to a frame that arrives after frames with
// later timestamps were released.
type LatePolicy int

// Late frame policies.
const (
	// LateDrop drops late frames, and on video the frames that depend on
	// them up to the next keyframe. Counted in Stats.Dropped and Stats.Late.
	LateDrop LatePolicy = iota
	// LatePass releases late frames at once with their own timestamps.
	// Counted in Stats.Late.
	LatePass
)

// Options configures a Buffer.
type Options struct {
	// Delay bounds how long a lagging track holds output back, in media
	// time (and in wall time when no data flows). Zero means DefaultDelay;
	// negative means no waiting at all.
	Delay time.Duration
	// Late is the policy for late frames.
	Late LatePolicy
	// MaxDelay lets the delay grow, up to MaxDelay, for a track that lags
	// but still delivers (see "Growing delay" in the package doc): to its
	// lag plus Delay when it reaches the bound, or when one of its frames
	// arrives late; it stays there. A track that falls behind the others
	// by more than Delay (a link that carries one track's bigger frames
	// slower) is then waited for instead of dropped from then on. Zero,
	// not above Delay, or a negative Delay: the delay stays fixed.
	MaxDelay time.Duration
	// MediaTimeOnly drops the wall-clock part of the Delay bound: when no
	// data flows at all, the output waits for the lagging tracks as long
	// as it takes. A recorder writing a file uses it so that a network
	// outage, after which the missed frames arrive at once, makes nothing
	// late; a live output would rather move on.
	MediaTimeOnly bool
	// Now returns the wall-clock time; nil means time.Now. Tests set it.
	Now func() time.Time
	// Pending, when set, reports whether track id has data that arrived
	// but was not pushed yet. Such a track is not lagging, so it is never
	// declared idle: the buffer waits for the caller to push its data. (A
	// reader that drains tracks one after the other can otherwise see one
	// track far ahead of another whose data it simply has not read yet.)
	Pending func(id int) bool
}

// Item is one step of the merged output.
type Item struct {
	// Frame is the frame; its Discontinuity is set when the track's
	// timeline broke just before it (see PushDiscontinuity).
	Frame mux.Frame
	// Late is true for a late frame passed on by LatePass.
	Late bool
	// End is true for no frame but where the track's frame released
	// before it ends (PushEnd), at Frame.Timestamp: it leaves right
	// after that frame, in order.
	End bool
}

// Stats counts what a Buffer did.
type Stats struct {
	Released int64         // frames released
	Late     int64         // late frames (dropped or passed)
	Dropped  int64         // frames dropped: late ones, and on video what depends on them
	Idled    int64         // times a lagging track was declared idle
	Buffered int           // frames held now
	Delay    time.Duration // the delay now (grown from Options.Delay by late frames, see MaxDelay)
}

type entry struct {
	frame mux.Frame
	key   int64
	end   bool // a PushEnd
}

type track struct {
	id    int
	video bool
	queue []entry
	head  int
	peak  int // the most frames buffered since the queue last emptied

	lastKey int64 // key of the newest frame pushed (minKey before any)
	offset  int64 // added to timestamps after a backward discontinuity
	disc    bool  // the next frame follows a discontinuity
	// tailNewest: the newest frame pushed was kept (not dropped) and no
	// PushEnd came after it
	tailNewest bool
	rewound    int // the Buffer.rewind this track's offset follows
	// overlapping: the frames after its rewind still fall before its
	// last frame and are dropped
	overlapping bool
	frameDur    int64 // smallest step between its keys seen (0: none yet)
	idle        bool
	// sparse: a text track, whose cues come seconds apart; it never
	// holds the output back (it is always idle), so the media does not
	// wait for a cue that may not come.
	sparse   bool
	ended    bool
	dropping bool // video: dropping until the next keyframe

	pushedAt time.Time // when it last pushed a frame (kept with MaxDelay only)

	pendingPos int // position in Buffer.pending, -1 if not there
	waitingPos int // position in Buffer.waiting, -1 if not there
}

func (t *track) buffered() int { return len(t.queue) - t.head }

func (t *track) front() *entry { return &t.queue[t.head] }

// push appends e to the queue. A full queue whose front half or more was
// popped already slides its frames down instead of growing: a track that
// always has a frame buffered (one that runs ahead of the others) never
// empties its queue, and the popped entries before head would otherwise
// be copied along and kept at every growth, 56 bytes per frame for as long
// as the recording runs.
func (t *track) push(e entry) {
	if len(t.queue) == cap(t.queue) && t.head > 0 && 2*t.head >= len(t.queue) {
		n := copy(t.queue, t.queue[t.head:])
		clear(t.queue[n:])
		t.queue, t.head = t.queue[:n], 0
	}
	t.queue = append(t.queue, e)
	t.peak = max(t.peak, t.buffered())
}

func (t *track) pop() entry {
	e := t.queue[t.head]
	t.queue[t.head] = entry{}
	t.head++
	n, room := t.buffered(), cap(t.queue)
	// The room of a burst goes once the frames since the queue last
	// emptied needed less than a quarter of it.
	spare := room > keptQueue && room > 4*t.peak
	switch {
	case n == 0 && spare:
		t.queue, t.head, t.peak = nil, 0, 0
	case n == 0:
		t.queue, t.head, t.peak = t.queue[:0], 0, 0
	case spare && 8*n <= room:
		q := make([]entry, n, max(2*n, 4))
		copy(q, t.queue[t.head:])
		t.queue, t.head = q, 0
	}
	return e
}

// keptQueue is the most entries a track's queue keeps room for beyond
// what it needs: the room a burst made (a start, a catch-up after a
// stall: often a whole group) is let go once the queue empties, or holds
// an eighth of it, after frames that needed less than a quarter of it
// (peak), so a recording that waits for media does not keep it. A queue
// whose bursts come back alike, or that stays within keptQueue as steady
// live media does, never allocates again.
const keptQueue = 16

const minKey = math.MinInt64

// rewind is the newest backward jump of the publisher's clock (a restarted
// publisher starts its timestamps afresh). Every track of the broadcast
// jumps with it, so they share one offset and stay in sync: the first
// track to jump sets it, the others take it when their own discontinuity
// lands near the same new time.
type rewind struct {
	n      int   // how many rewinds so far (tracks compare their rewound)
	raw    int64 // the publisher's earliest timestamp after it
	offset int64 // what every track adds to the new timestamps
	first  int64 // the key raw got: every key of the new timeline is >= first
}

// rewindWindow is how far apart, in the publisher's new clock, the first
// frames of two tracks may be and still belong to the same rewind.
const rewindWindow = 10 * int64(time.Second/time.Microsecond)

// maxFrameStep bounds the frame duration the rewind leaves room for.
const maxFrameStep = int64(time.Second / time.Microsecond)

// Buffer is the cross-track jitter buffer. It is not safe for concurrent
// use: the export engine drives it from one goroutine.
type Buffer struct {
	delay    int64 // microseconds; < 0: never wait
	base     int64 // the delay Options gave, microseconds
	maxDelay int64 // microseconds: how far late frames may grow delay
	opts     Options

	tracks map[int]*track
	// sparse are the text tracks (see track.sparse), not ended.
	sparse   []*track
	flushing bool // in Flush: nothing waits
	// pending holds tracks with buffered frames, by their front key.
	pending trackHeap
	// waiting holds live tracks that have nothing buffered, by lastKey:
	// the ones that can still produce a frame with a smaller key.
	waiting trackHeap
	late    []Item // LatePass frames, released before anything else
	spare   []*track

	// pushedAt is when any track last pushed a frame; quietFrom and
	// resumedAt bound the newest silence of every track at once that
	// lasted the delay or more (a network outage the connection survived):
	// from the last push before it to the first after it. Kept with
	// MaxDelay only, as track.pushedAt.
	pushedAt, quietFrom, resumedAt time.Time

	released     int64 // key of the newest frame released (minKey before any)
	maxKey       int64 // newest key pushed on any track
	maxFrameDur  int64 // the largest track.frameDur
	rewind       rewind
	blockedSince time.Time
	// onPending is set while the output waits only for tracks that
	// Options.Pending reports: their producer wakes the caller, so no
	// deadline applies.
	onPending bool
	stats     Stats
}

// New returns an empty Buffer.
func New(opts Options) *Buffer {
	b := &Buffer{opts: opts, tracks: map[int]*track{}, released: minKey, maxKey: minKey}
	switch {
	case opts.Delay == 0:
		b.delay = DefaultDelay.Microseconds()
	case opts.Delay < 0:
		b.delay = -1
	default:
		b.delay = opts.Delay.Microseconds()
	}
	b.base, b.maxDelay = b.delay, b.delay
	if b.delay >= 0 {
		b.maxDelay = max(b.delay, opts.MaxDelay.Microseconds())
	}
	if b.opts.Now == nil {
		b.opts.Now = time.Now
	}
	b.pending = trackHeap{
		pos: func(t *track) *int { return &t.pendingPos },
		less: func(x, y *track) bool {
			kx, ky := x.front().key, y.front().key
			return kx < ky || kx == ky && x.id < y.id
		},
	}
	b.waiting = trackHeap{
		pos:  func(t *track) *int { return &t.waitingPos },
		less: func(x, y *track) bool { return x.lastKey < y.lastKey },
	}
	return b
}

// AddTrack registers a track. Until its first frame, or until it is
// declared idle, it holds the output back; a text track (mux.Text) only
// for a short slack (see sparseSlack): its cues leave in order with the
// frames that are there, and one that comes after the output passed its
// time is late and passed on at once (LatePass, whatever the policy).
func (b *Buffer) AddTrack(id int, kind mux.Kind) error {
	if _, ok := b.tracks[id]; ok {
		return fmt.Errorf("jitter: track %d added twice", id)
	}
	t := &track{id: id, video: kind == mux.Video, lastKey: minKey, pendingPos: -1, waitingPos: -1}
	b.tracks[id] = t
	if kind == mux.Text {
		t.sparse, t.idle = true, true
		b.sparse = append(b.sparse, t)
		return nil
	}
	b.waiting.push(t)
	return nil
}

// EndTrack says track id will push nothing more. Its buffered frames still
// leave in order; it no longer holds anything back.
func (b *Buffer) EndTrack(id int) {
	t, ok := b.tracks[id]
	if !ok || t.ended {
		return
	}
	t.ended = true
	b.waiting.remove(t)
	b.sparse = slices.DeleteFunc(b.sparse, func(s *track) bool { return s == t })
	if t.buffered() == 0 {
		delete(b.tracks, id)
	}
}

// PushDiscontinuity marks a break in track id's timeline before its next
// frame.
func (b *Buffer) PushDiscontinuity(id int) {
	if t, ok := b.tracks[id]; ok {
		t.disc = true
	}
}

// PushEnd says where the newest frame pushed for track id ends: at ts, on
// the timeline Push takes (hang's end marker). It leaves as an Item with
// End right after that frame, whether the frame is still buffered or left
// already; after a frame that was dropped, or a discontinuity, it is
// ignored.
func (b *Buffer) PushEnd(id int, ts int64) {
	t, ok := b.tracks[id]
	if !ok || t.ended || t.disc || !t.tailNewest {
		return
	}
	t.tailNewest = false
	wasEmpty := t.buffered() == 0
	t.push(entry{frame: mux.Frame{TrackID: id, Timestamp: ts + t.offset}, key: t.lastKey, end: true})
	if wasEmpty {
		b.waiting.remove(t)
		b.pending.push(t)
	}
	b.stats.Buffered++
}

// Push adds the next frame (in decode order) of track f.TrackID.
func (b *Buffer) Push(f mux.Frame) error {
	t, ok := b.tracks[f.TrackID]
	if !ok || t.ended {
		return fmt.Errorf("jitter: frame for %w %d", mux.ErrUnknownTrack, f.TrackID)
	}
	t.tailNewest = false
	if t.disc {
		if f.Timestamp+t.offset <= t.lastKey && t.lastKey != minKey {
			b.rewound(t, f.Timestamp)
		}
		if f.Timestamp+t.offset <= t.lastKey && t.lastKey != minKey {
			// It overlaps what this track already gave: the shared offset
			// of the rewind puts its first frames before the track's last
			// one. Dropped (the discontinuity waits for the next frame).
			b.stats.Late++
			b.stats.Dropped++
			t.dropping, t.overlapping = t.video, true
			b.skipped(t, t.lastKey)
			return nil
		}
		t.disc, t.overlapping, f.Discontinuity = false, false, true
	}
	f.Timestamp += t.offset
	key := max(f.Timestamp, t.lastKey)
	if b.maxDelay > b.base {
		now := b.opts.Now()
		if !b.pushedAt.IsZero() && now.Sub(b.pushedAt).Microseconds() >= b.delay {
			b.quietFrom, b.resumedAt = b.pushedAt, now
		}
		t.pushedAt, b.pushedAt = now, now
	}

	if t.video && t.dropping {
		if !f.Keyframe {
			b.stats.Dropped++
			b.skipped(t, key)
			return nil
		}
		t.dropping = false
	}
	if key < b.released {
		// Late: the output already moved past this frame.
		b.stats.Late++
		if b.delay >= 0 && b.maxDelay > b.delay && !t.sparse {
			// Wait for this track again, with a delay that covers its lag.
			b.delay = min(b.maxDelay, max(b.delay, b.maxKey-key+b.base))
		}
		b.skipped(t, key)
		if b.opts.Late == LatePass || t.sparse {
			// A late cue is passed whatever the policy: a subtitle a
			// moment late is worth more than none, and a cue depends on
			// nothing.
			b.late = append(b.late, Item{Frame: f, Late: true})
			return nil
		}
		b.stats.Dropped++
		if t.video {
			t.dropping = true
		}
		return nil
	}

	if d := key - t.lastKey; !t.sparse && t.lastKey != minKey && d > 0 && d <= maxFrameStep && (t.frameDur == 0 || d < t.frameDur) {
		t.frameDur = d
		b.maxFrameDur = max(b.maxFrameDur, d)
	}
	wasEmpty := t.buffered() == 0
	t.push(entry{frame: f, key: key})
	t.tailNewest = true
	t.lastKey = key
	t.idle = t.sparse
	b.maxKey = max(b.maxKey, key)
	if wasEmpty {
		b.waiting.remove(t)
		b.pending.push(t)
	}
	b.stats.Buffered++
	return nil
}

// rewound sets track t's offset after its clock went back to raw: the
// offset of the rewind the other tracks already took when raw is near
// theirs, else a new rewind that continues one frame after the newest key
// seen on any track (the frame there still lasts a frame, and muxers with
// millisecond clocks must not see the same time twice).
func (b *Buffer) rewound(t *track, raw int64) {
	r := &b.rewind
	if (r.n > t.rewound || t.overlapping) && raw >= r.raw-rewindWindow && raw <= r.raw+rewindWindow {
		// The rewind the other tracks took (or the one this track took,
		// whose first frames after it overlap its past and are dropped).
		if raw < r.raw && !t.overlapping && b.released < r.first {
			// This track starts earlier in the new clock than the one
			// that set the offset (video from its keyframe, after audio
			// from its newest group): nothing of the new timeline left
			// yet, so move it all later, to start with this frame.
			b.shiftRewind(r.raw - raw)
		}
		t.offset, t.rewound = r.offset, r.n
		return
	}
	anchor := max(b.maxKey, b.released, t.lastKey) + max(b.maxFrameDur, int64(time.Millisecond/time.Microsecond))
	r.n++
	r.raw, r.offset, r.first = raw, anchor-raw, anchor
	t.offset, t.rewound = r.offset, r.n
}

// shiftRewind moves the newest rewind's timeline d later: the offset, and
// the buffered frames of the tracks that took it (their keys from
// rewind.first on; none of them has left yet).
func (b *Buffer) shiftRewind(d int64) {
	r := &b.rewind
	r.raw -= d
	r.offset += d
	for _, t := range b.tracks {
		if t.rewound != r.n {
			continue
		}
		t.offset = r.offset
		for i := t.head; i < len(t.queue); i++ {
			if e := &t.queue[i]; e.key >= r.first {
				e.key += d
				e.frame.Timestamp += d
			}
		}
		if t.lastKey >= r.first {
			t.lastKey += d
		}
		if t.pendingPos >= 0 {
			b.pending.fix(t.pendingPos)
		}
		if t.waitingPos >= 0 {
			b.waiting.fix(t.waitingPos)
		}
	}
	if b.maxKey >= r.first {
		b.maxKey += d
	}
}

// skipped records that track t delivered a frame with key that does not
// leave (late, or depending on a late one): the track is not silent. With
// a delay that may grow (MaxDelay), an idle track is waited for again.
func (b *Buffer) skipped(t *track, key int64) {
	t.lastKey = key
	switch {
	case t.waitingPos >= 0:
		b.waiting.fix(t.waitingPos)
	case t.idle && !t.sparse && t.buffered() == 0 && b.maxDelay > b.base:
		t.idle = false
		b.waiting.push(t)
	}
}

// Pop returns the next item that may leave now, or false.
func (b *Buffer) Pop() (Item, bool) {
	b.onPending = false
	if n := len(b.late); n > 0 {
		it := b.late[0]
		copy(b.late, b.late[1:])
		b.late[n-1] = Item{}
		b.late = b.late[:n-1]
		b.stats.Released++
		return it, true
	}
	for b.pending.len() > 0 {
		t := b.pending.min()
		key := t.front().key
		if b.waiting.len() > 0 && b.waiting.min().lastKey < key && b.delay >= 0 {
			// A live track may still produce an earlier frame.
			now := b.opts.Now()
			if b.blockedSince.IsZero() {
				b.blockedSince = now
			}
			if b.maxKey-key < b.delay && (b.opts.MediaTimeOnly || now.Sub(b.blockedSince).Microseconds() < b.delay) {
				return Item{}, false
			}
			if b.growForLagging(key, now) {
				return Item{}, false
			}
			if b.idleWaitingBefore(key, true) {
				b.onPending = true
				return Item{}, false
			}
			continue
		}
		if b.sparseBefore(key) {
			b.onPending = true
			return Item{}, false
		}
		if b.sparseSlack(key) {
			return Item{}, false
		}
		return b.release(t), true
	}
	return Item{}, false
}

// sparseBefore reports whether a text track that has data its reader has
// not pushed yet (Options.Pending) may still push a cue before key: the
// output waits for it then, though a text track never holds it back
// otherwise. (A reader that catches up on a backlog reads the media before
// the cues of the same time.)
func (b *Buffer) sparseBefore(key int64) bool {
	if b.opts.Pending == nil {
		return false
	}
	for _, t := range b.sparse {
		if t.lastKey < key && t.buffered() == 0 && b.opts.Pending(t.id) {
			return true
		}
	}
	return false
}

// maxSparseSlack bounds how long, in media time, the output leaves a text
// track to deliver a cue of the time it releases (sparseSlack).
const maxSparseSlack = int64(time.Second / time.Microsecond)

// sparseSlack reports whether a frame at key waits for the text tracks:
// until the newest key pushed is min(Delay, 1 s) past it (or, unless
// MediaTimeOnly, that much wall time passed), a cue of that time may
// still come. A cue travels on its own stream and may arrive a moment
// after the media of its time; without this slack it would find the
// output past it, late. Flush does not wait.
func (b *Buffer) sparseSlack(key int64) bool {
	if b.flushing || b.delay < 0 || len(b.sparse) == 0 {
		return false
	}
	slack := min(b.base, maxSparseSlack)
	if b.maxKey-key >= slack {
		return false
	}
	for _, t := range b.sparse {
		if t.lastKey < key {
			now := b.opts.Now()
			if b.blockedSince.IsZero() {
				b.blockedSince = now
			}
			return b.opts.MediaTimeOnly || now.Sub(b.blockedSince).Microseconds() < slack
		}
	}
	return false
}

// growForLagging grows the delay (up to MaxDelay) when the track that holds
// key back is lagging, not silent: it pushed a frame within the current
// delay of wall time (a silent track reaches the media-time bound about
// that long after its last frame, so the delay does not grow for it; a
// file still waits for it, see fileWaits). It reports whether the output
// still waits for it.
func (b *Buffer) growForLagging(key int64, now time.Time) bool {
	if b.maxDelay <= b.delay {
		return false
	}
	w := b.waiting.min()
	if w.lastKey == minKey || now.Sub(b.deliveredAt(w)).Microseconds() >= b.delay {
		return false // it has not started, or it went silent
	}
	b.delay = min(b.maxDelay, max(b.delay, b.maxKey-w.lastKey+b.base))
	b.blockedSince = now
	return b.maxKey-key < b.delay
}

// deliveredAt returns when track t last delivered, for telling a lagging
// track from a silent one. A track that went quiet with every other one
// (within the delay of the last push before a silence of them all: a
// network outage the connection survived) counts from the first push
// after the silence: its frames come as late as everyone's, in the burst
// the outage held back, and which track's land first is the network's
// and the scheduler's choice (after a 1.5 s blackhole the audio's burst
// ran 0.6 s past the video's last frame before the video's came, and a
// GOP of video was dropped as late).
func (b *Buffer) deliveredAt(t *track) time.Time {
	if t.pushedAt.Before(b.resumedAt) && !t.pushedAt.Before(b.quietFrom.Add(-time.Duration(b.delay)*time.Microsecond)) {
		return b.resumedAt
	}
	return t.pushedAt
}

// idleWaitingBefore declares idle every waiting track that still holds key
// back: it has lagged for the whole delay. Tracks with pending data, and
// in a file the tracks it still waits for (fileWaits), are kept waiting;
// it reports whether any such track still holds key back.
func (b *Buffer) idleWaitingBefore(key int64, honorPending bool) (stillBlocked bool) {
	keep := b.spare[:0]
	for b.waiting.len() > 0 && b.waiting.min().lastKey < key {
		w := b.waiting.min()
		b.waiting.remove(w)
		if honorPending && (b.opts.Pending != nil && b.opts.Pending(w.id) || b.fileWaits(w, key)) {
			keep = append(keep, w)
			continue
		}
		w.idle = true
		b.stats.Idled++
	}
	for _, w := range keep {
		b.waiting.push(w)
	}
	clear(keep)
	b.spare = keep[:0]
	return len(keep) > 0
}

// fileWaits reports whether, in a file (MediaTimeOnly with a MaxDelay),
// waiting track w, which has started, is still waited for at key: the
// newest key pushed is less than MaxDelay ahead of key. A file waits that
// long for a track whether it lags or looks silent: a track that pushed
// nothing for the delay of wall time may have its next frames on their
// way (on a loaded recorder the audio, a stream per frame, fell 0.6 s
// behind the video, one stream; it was declared idle, and its frames came
// late and were dropped). A track that never started is the start gate's
// (package export) to wait for; one that stopped for good holds the
// others back by MaxDelay of media time, once.
func (b *Buffer) fileWaits(w *track, key int64) bool {
	return b.opts.MediaTimeOnly && b.maxDelay > b.base && w.lastKey != minKey && b.maxKey-key < b.maxDelay
}

func (b *Buffer) release(t *track) Item {
	e := t.pop()
	b.stats.Buffered--
	if !e.end {
		b.stats.Released++
		// Its end marker came while it waited: the frame carries its
		// duration too, for a muxer that writes it with the frame (MKV's
		// BlockDuration). The End item still follows.
		if t.buffered() > 0 && t.front().end && e.frame.Duration == 0 && t.front().frame.Timestamp > e.frame.Timestamp {
			e.frame.Duration = t.front().frame.Timestamp - e.frame.Timestamp
		}
	}
	b.released = max(b.released, e.key)
	b.blockedSince = time.Time{}
	if t.buffered() > 0 {
		b.pending.fix(t.pendingPos)
	} else {
		b.pending.remove(t)
		switch {
		case t.ended:
			delete(b.tracks, t.id)
		case !t.idle:
			b.waiting.push(t)
		}
	}
	return Item{Frame: e.frame, End: e.end}
}

// Flush returns the next buffered item regardless of lagging tracks, or
// false when the buffer is empty. Call it until false at the end of an
// export.
func (b *Buffer) Flush() (Item, bool) {
	b.flushing = true
	defer func() { b.flushing = false }()
	if it, ok := b.Pop(); ok {
		return it, true
	}
	if b.pending.len() == 0 {
		return Item{}, false
	}
	b.idleWaitingBefore(math.MaxInt64, false)
	return b.Pop()
}

// Deadline returns when the wall-clock bound will release a blocked output,
// or false when nothing is blocked or only tracks that Options.Pending
// reports hold it back (their producer wakes the caller).
func (b *Buffer) Deadline() (time.Time, bool) {
	if b.blockedSince.IsZero() || b.pending.len() == 0 || b.delay < 0 || b.onPending || b.opts.MediaTimeOnly {
		return time.Time{}, false
	}
	return b.blockedSince.Add(time.Duration(b.delay) * time.Microsecond), true
}

// Holds reports whether track id is registered and not yet both ended and
// drained.
func (b *Buffer) Holds(id int) bool {
	_, ok := b.tracks[id]
	return ok
}

// Stats returns the counters.
func (b *Buffer) Stats() Stats {
	st := b.stats
	st.Delay = time.Duration(max(b.delay, 0)) * time.Microsecond
	return st
}
