package model

import (
	"context"
	"sort"
)

// HandleBackfill installs the function Backfill calls: the producer's way
// to fetch groups older than those it holds (package subscribe uses moq-lite
// FETCH). fn must add the groups that precede the oldest group the track
// holds, newest first or in any order, as finished groups, back to the
// first one whose first frame is at or before target (microseconds); it
// stops quietly, returning nil, when the source has no older group. It
// returns when it is done or ctx ends.
func (t *Track) HandleBackfill(fn func(ctx context.Context, target int64) error) {
	t.mu.Lock()
	t.backfill = fn
	t.mu.Unlock()
}

// Backfill asks the producer to add the groups that precede the oldest one
// the track holds, back to the first whose first frame is at or before
// target (microseconds). A consumer that has not read anything yet starts at
// the oldest group with a frame, so it sees them; so does one whose last
// event was the Restart discontinuity of a new timeline, with no frame of
// it read yet (a reader aligning a restarted track with the others); one
// that has started reading does not go back. Without a handler (see HandleBackfill) it does nothing and
// returns nil.
func (t *Track) Backfill(ctx context.Context, target int64) error {
	t.mu.Lock()
	fn := t.backfill
	t.mu.Unlock()
	if fn == nil {
		return nil
	}
	return fn(ctx, target)
}

// OldestGroup returns the sequence and the first frame's timestamp of the
// oldest group the track holds that has a frame: where a new consumer
// starts, unless an older group is open with its first frame still on its
// way (the consumer waits at that one). ok is false when no group has a
// frame.
func (t *Track) OldestGroup() (seq uint64, timestamp int64, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, g := range t.groups {
		if g.media > 0 && !g.frames[0].Marker {
			return g.seq, g.frames[0].Timestamp, true
		}
	}
	return 0, 0, false
}

// OldestTimestamp returns the timestamp of the first frame a new consumer
// would read (the first frame of the oldest group with a frame), without
// consuming anything. ok is false when no group has a frame.
func (t *Track) OldestTimestamp() (int64, bool) {
	_, ts, ok := t.OldestGroup()
	return ts, ok
}

// Group returns group seq of the track's current timeline, or nil when the
// track does not hold it (never created, dropped, or before a
// Discontinuity). A publisher uses it to serve a FETCH of one past group.
func (t *Track) Group(seq uint64) *Group {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := sort.Search(len(t.groups), func(i int) bool { return t.groups[i].seq >= seq })
	if i < len(t.groups) && t.groups[i].seq == seq {
		return t.groups[i]
	}
	return nil
}

// Frames returns the group's frames from index from on, whether the group
// is finished, and why it ended early (non-nil: truncated). The frames must
// not be modified. A reader of an unfinished group waits for a change of
// the track (a Consumer on a ReadySet) and calls it again.
func (g *Group) Frames(from int) (frames []Frame, finished bool, err error) {
	t := g.track
	t.mu.Lock()
	defer t.mu.Unlock()
	if from < len(g.frames) {
		frames = g.frames[from:len(g.frames):len(g.frames)]
	}
	return frames, g.finished, g.err
}
