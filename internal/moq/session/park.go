package session

import "sync"

// How a subscription waits for its publisher's next message: a moq-lite
// one for a response on its stream, a moq-transport one for a message its
// request's reader routes to it (each family's Wire.Wait).
//
// A subscription lives as long as its track is recorded, and an idle
// recording's tracks wait on theirs for as long as the broadcast pauses:
// for a fleet of paused recordings, these waits are most of what it holds.
// So the wait is parked: a new goroutine that does nothing but wait,
// while the goroutine that asked returns. A goroutine that never went
// deeper than the wait (768 B for a read) keeps the stack it started
// with, where the one that set the subscription up, had it waited, would
// keep the 8 KB its work grew (the runtime halves a stack only below a
// quarter used). The goroutine a message wakes goes on with the track's
// run.
//
// The stack a new goroutine starts with is the runtime's choice: the
// average depth it saw at its last collection, rounded up to a power of
// two. During a fleet's start, with every recording busy setting up, that
// is 4 KB; once the recordings wait, 2 KB. A 4 KB stack is never halved
// again (the read alone is more than a quarter of 2 KB), so a session's
// settle parks every wait afresh once a start is over (Settler).

// parking is what a subscription's parked wait shares with settle.
type parking struct {
	mu       sync.Mutex
	parked   bool            // a goroutine waits in the subscription's wait
	settling *sync.WaitGroup // settle woke the wait: Done once it parked again
}

// begin marks the wait parked, before its goroutine starts.
func (p *parking) begin() {
	p.mu.Lock()
	p.parked = true
	p.mu.Unlock()
}

// woke marks the wait over; it returns the WaitGroup of the settle that
// woke it, if one did (or tried to: its wake may have lost the race).
func (p *parking) woke() *sync.WaitGroup {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.parked = false
	settling := p.settling
	p.settling = nil
	return settling
}

// renew is settle's side: a parked wait, not woken yet, is woken with wake
// and counted in settled.
func (p *parking) renew(settled *sync.WaitGroup, wake func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.parked || p.settling != nil {
		return
	}
	settled.Add(1)
	p.settling = settled
	wake()
}

// A Settler is a subscription whose parked wait a session's settle can
// renew.
type Settler interface {
	// Settle wakes the parked wait, if there is one, to park it
	// afresh; settled.Done runs once it did.
	Settle(settled *sync.WaitGroup)
}
