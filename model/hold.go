package model

import "math"

// Hold says that the producer is about to add groups that belong before
// what it adds next (after a reconnect, the groups missed during the
// outage): until Release, Consumer.Held is true, so a reader that merges
// tracks (the export's jitter buffer) waits for this track instead of
// moving past it, and a consumer does not skip a missing or open group for
// newer ones (their data running ahead says nothing of a stall then).
// Holds nest; each Hold needs one Release. Close releases every hold.
// Groups created while the track is held lag (MaxLag) from the Release.
func (t *Track) Hold() {
	t.mu.Lock()
	t.holds++
	t.mu.Unlock()
}

// Release ends one Hold and wakes the consumers.
func (t *Track) Release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.holds > 0 {
		t.holds--
		if t.holds == 0 {
			for _, g := range t.groups {
				if g.bornTS == heldBorn {
					g.bornTS = t.newestTS
				}
			}
		}
		t.wakeLocked()
	}
}

// heldBorn is the Group.bornTS of a group created while its track is held:
// no lag until the Release.
const heldBorn = math.MaxInt64

// Held reports whether the consumer's track is held (see Track.Hold) and
// not ended.
func (c *Consumer) Held() bool {
	t := c.track
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.holds > 0 && !t.ended
}

// NewestGroup returns the group with the highest sequence of the track's
// current timeline, or nil when it holds none.
func (t *Track) NewestGroup() *Group {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.groups) == 0 {
		return nil
	}
	return t.groups[len(t.groups)-1]
}

// lostRange is a run of group sequences that will never arrive.
type lostRange struct{ from, to uint64 }

// MarkLost says that groups [from, to) of the current timeline will never
// arrive (a relay no longer had them after a reconnect): a reader that
// reaches them does not wait, it goes on at to and reports a
// discontinuity before the next frame.
func (t *Track) MarkLost(from, to uint64) {
	if to <= from {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lost = append(t.lost, lostRange{from, to})
	if len(t.lost) > 64 {
		t.lost = t.lost[len(t.lost)-64:]
	}
	t.wakeLocked()
}

// skipLost moves the cursor past the lost range it is in, if any, and says
// whether it did. Called with t.mu held.
func (c *Consumer) skipLost() bool {
	for _, r := range c.track.lost {
		if c.cursor >= r.from && c.cursor < r.to {
			c.cursor = r.to
			if c.delivered {
				c.pendingDisc = true
			}
			return true
		}
	}
	return false
}
