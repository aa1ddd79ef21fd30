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
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.groups) == 0 {
		return true
	}
	g := t.groups[len(t.groups)-1]
	for _, c := range t.consumers {
		if c.epoch != t.epoch || !c.started || c.readIn(g) < len(g.frames) {
			return false
		}
	}
	return true
}

// drainedLocked tells the producer a consumer read all there is. Called
// with t.mu held.
func (t *Track) drainedLocked() {
	if t.onDrained != nil {
		t.onDrained()
	}
}
