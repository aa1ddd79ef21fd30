package model

// HandleDrained installs fn, which a consumer calls whenever it has read
// all the track holds (its Next finds nothing more). A producer that
// replays stored media as fast as it is read (an archive) writes its next
// part then, so no group waits unread long enough to be dropped (MaxLag).
// fn runs with the track locked: it must not call the track (a
// non-blocking channel send is what it is for).
func (t *Track) HandleDrained(fn func()) {
	t.mu.Lock()
	t.onDrained = fn
	t.mu.Unlock()
}

// Drained reports whether every consumer of the track has read all the
// track holds (true without consumers).
func (t *Track) Drained() bool {
	return t.ReadTo(maxTimestamp)
}

// ReadTo reports whether every consumer of the track has taken a frame at
// or after media time ts (µs) since its timeline last began, or has read
// all the track holds (true without consumers). When it reports false,
// the handler HandleDrained installed is also called the next time a
// consumer takes a frame at or after ts: a producer that stays a part
// ahead of its readers (an archive read as fast as it is taken) writes
// the next part once they reached the one before, so that they never
// wait for it.
func (t *Track) ReadTo(ts int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.groups) == 0 {
		return true
	}
	g := t.groups[len(t.groups)-1]
	for _, c := range t.consumers {
		if c.epoch == t.epoch && c.started && (c.delivered && c.liveEdge >= ts || c.readIn(g) >= len(g.frames)) {
			continue
		}
		if ts < maxTimestamp {
			t.readMark, t.readMarkSet = ts, true
		}
		return false
	}
	return true
}

// readLocked tells the producer, when a ReadTo waits for it, that a
// consumer took a frame at or after its mark. Called with t.mu held.
func (t *Track) readLocked(ts int64) {
	if t.readMarkSet && ts >= t.readMark {
		t.readMarkSet = false
		t.drainedLocked()
	}
}

// drainedLocked tells the producer a consumer read all there is. Called
// with t.mu held.
func (t *Track) drainedLocked() {
	if t.onDrained != nil {
		t.onDrained()
	}
}
