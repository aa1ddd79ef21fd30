package model

// A wait for a track's first frame, without a poll: a reader that needs a
// track to hold a frame before it acts (a late track's backfill goes back
// from its oldest group; a publisher picks a track's packaging from the
// catalog's first frame) selects on the channel FirstFrame returns.

// FirstFrame returns a channel closed once the track holds a frame a new
// consumer would start at (OldestTimestamp reports ok from then on, unless
// a Discontinuity empties the track again), or once the track ended. Every
// call returns the same channel: the wait costs one channel per track,
// whatever the number of waiters, and no goroutine.
func (t *Track) FirstFrame() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.first == nil {
		t.first = make(chan struct{})
		if t.ended || t.holdsFrameLocked() {
			close(t.first)
			t.firstDone = true
		}
	}
	return t.first
}

// adoptFirstLocked makes c, a channel handed out by Broadcast.FirstFrame
// before the track existed, close with the track's FirstFrame. Called with
// t.mu held, on a track just made part of a broadcast.
func (t *Track) adoptFirstLocked(c chan struct{}) {
	switch {
	case t.firstDone || t.ended || t.holdsFrameLocked():
		t.firstFrameLocked()
		close(c)
	case t.first == nil:
		t.first = c
	default:
		// Waited for before it joined the broadcast (a request's
		// track): both channels close at its first frame.
		t.firstAlso = append(t.firstAlso, c)
	}
}

// holdsFrameLocked reports whether a group holds a frame a consumer would
// start at (as OldestGroup). Called with t.mu held.
func (t *Track) holdsFrameLocked() bool {
	for _, g := range t.groups {
		if g.media > 0 && !g.frames[0].Marker {
			return true
		}
	}
	return false
}

// firstFrameLocked closes FirstFrame's channel, once. Called with t.mu held
// when a group gets a frame a consumer would start at, or the track ends.
func (t *Track) firstFrameLocked() {
	if t.firstDone {
		return
	}
	t.firstDone = true
	if t.first == nil {
		t.first = closedChan
	} else {
		close(t.first)
	}
	for _, c := range t.firstAlso {
		close(c)
	}
	t.firstAlso = nil
}

// closedChan is a closed channel: FirstFrame of a track that got its
// frame before anyone asked.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// FirstFrame returns a channel closed once track name of the broadcast holds
// a frame (see Track.FirstFrame), or the broadcast ended. Unlike Track, it
// neither creates nor requests the track: a track not held yet takes the
// channel when it is created or its request returns it. Every call for a
// name returns the same channel.
func (b *Broadcast) FirstFrame(name string) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.tracks[name]; ok {
		return t.FirstFrame()
	}
	if b.ended {
		return closedChan
	}
	c, ok := b.firstWaits[name]
	if !ok {
		if b.firstWaits == nil {
			b.firstWaits = map[string]chan struct{}{}
		}
		c = make(chan struct{})
		b.firstWaits[name] = c
	}
	return c
}

// addTrackLocked makes t the broadcast's track name, handing it the
// channel FirstFrame gave out for the name. Called with b.mu held.
func (b *Broadcast) addTrackLocked(name string, t *Track) {
	b.tracks[name] = t
	if c, ok := b.firstWaits[name]; ok {
		delete(b.firstWaits, name)
		t.mu.Lock()
		t.adoptFirstLocked(c)
		t.mu.Unlock()
	}
}
