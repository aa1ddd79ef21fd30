package model

// LatestGroup returns the sequence of the newest group the track holds
// (ok false when it holds none). A publisher uses it to start a new
// subscriber at the live edge, as moq-lite's SUBSCRIBE without a start
// group asks.
func (t *Track) LatestGroup() (seq uint64, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.groups) == 0 {
		return 0, false
	}
	return t.groups[len(t.groups)-1].seq, true
}
