package subscribe

import (
	"context"
	"sync"

	"github.com/moq-export/moq-export/internal/moq/settle"
)

// How a subscription waits for its publisher's next message: a moq-lite
// one (liteSubscription) for a response on its stream, a moq-transport one
// (ietfSubscription) for a message its request's reader routes to it.
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
// again (the read alone is more than a quarter of 2 KB), so settle parks
// every wait afresh once a start is over. The parked wait itself is the
// session core's (internal/moq/session: parking, Settler); a session's
// settle here reaches it through each subscription's Waits.

// settle parks afresh every subscription of the session that waits for its
// publisher's next response, and returns once they did (or ctx ended).
// Waits parked during a busy start took the bigger stacks the runtime gave
// new goroutines then; parked again once the start is over they take the
// smallest (2 KB instead of 4 for each track of a paused broadcast). A
// recorder does it when its recordings stopped starting, before it
// returns their start's memory to the system: the command decides when
// (internal/cli/memory.go), through internal/moq/settle, so it is no
// public API.
func init() {
	settle.Register(func(ctx context.Context, x any) bool {
		s, ok := x.(*Session)
		if ok {
			s.settle(ctx)
		}
		return ok
	})
}

func (s *Session) settle(ctx context.Context) {
	var settled sync.WaitGroup
	f, ok := s.links.Current()
	if !ok {
		return
	}
	for _, sub := range f.Routed() {
		if sub.Waits != nil {
			sub.Waits.Settle(&settled)
		}
	}
	done := make(chan struct{})
	go func() {
		settled.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
