package model

// TrackState is a snapshot of a track and of where its readers stand. A
// recorder logs it for a track that receives nothing while the others of
// its broadcast do: no groups since a restart points at the subscription,
// groups piling up past a reader's cursor at the reader.
type TrackState struct {
	// Groups is how many groups of the current timeline the track holds,
	// Oldest and Newest their sequences (when Groups > 0).
	Groups         int
	Oldest, Newest uint64
	// NewestTimestamp is the newest frame's timestamp of the current
	// timeline (µs); NoTimestamp before any.
	NewestTimestamp int64
	// Timelines counts the timelines the producer started after the
	// first (Discontinuity: a restarted publisher, a resume on a new
	// session).
	Timelines uint64
	// Held says the producer holds the track (Hold: a gap being filled).
	Held bool
	// Ended says the track ended (Close).
	Ended   bool
	Readers []ReaderState
}

// NoTimestamp is TrackState.NewestTimestamp of a timeline with no frame.
const NoTimestamp = minTimestamp

// ReaderState is where one consumer of a track stands.
type ReaderState struct {
	// Started says the reader chose the group it begins with; Cursor is
	// the group it reads or waits for, then.
	Started bool
	Cursor  uint64
	// Stale says the reader has not yet seen the track's newest timeline
	// (it reads no further until it calls Next).
	Stale bool
	// Waiting says the group at the cursor is not there: the reader waits
	// for it (or for newer data to run far enough past it to give it up).
	Waiting bool
}

// State returns the track's state now. Safe for concurrent use.
func (t *Track) State() TrackState {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := TrackState{Groups: len(t.groups), NewestTimestamp: t.newestTS, Timelines: t.epoch,
		Held: t.holds > 0, Ended: t.ended}
	if n := len(t.groups); n > 0 {
		s.Oldest, s.Newest = t.groups[0].seq, t.groups[n-1].seq
	}
	for _, c := range t.consumers {
		r := ReaderState{Started: c.started, Cursor: c.cursor, Stale: c.epoch != t.epoch}
		if c.started && !r.Stale && c.cur == nil {
			i := c.groupIndex(c.cursor)
			r.Waiting = i == len(t.groups) || t.groups[i].seq != c.cursor
		}
		s.Readers = append(s.Readers, r)
	}
	return s
}

// NewestTimestamp returns the newest frame's timestamp of the track's
// current timeline (µs), held groups included (a gap being filled):
// NoTimestamp before any. It is State's NewestTimestamp without the
// readers. Safe for concurrent use.
func (t *Track) NewestTimestamp() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.newestTS
}
