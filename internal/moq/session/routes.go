package session

import (
	"context"
	"sync"
	"time"
)

// Routes are the subscriptions of one connection that its group streams
// name, by the family's key: moq-lite's subscribe id, moq-transport's
// track alias. Both families route through it; a session asks the current
// connection's family for Routed (its settle parks their waits afresh).
// The zero value is empty and ready.
type Routes struct {
	mu      sync.Mutex
	subs    map[uint64]*Sub
	changed chan struct{} // closed and replaced when a key is added
}

// Add routes the group streams of key to sub; false when key is routed
// already (the caller decides whether that is a violation).
func (r *Routes) Add(key uint64, sub *Sub) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.subs[key]; dup {
		return false
	}
	if r.subs == nil {
		r.subs = map[uint64]*Sub{}
	}
	r.subs[key] = sub
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
	return true
}

// Remove stops routing key to sub (a key routed to another subscription
// since stays): later streams naming it are refused, and none joins
// sub.Groups after Remove returns.
func (r *Routes) Remove(key uint64, sub *Sub) {
	r.mu.Lock()
	if r.subs[key] == sub {
		delete(r.subs, key)
	}
	r.mu.Unlock()
}

// Join returns the subscription of key and counts the caller in its group
// streams (sub.Groups; the caller calls Done), nil when none is routed.
func (r *Routes) Join(key uint64) *Sub {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.joinLocked(key)
}

func (r *Routes) joinLocked(key uint64) *Sub {
	sub := r.subs[key]
	if sub != nil {
		sub.Groups.Add(1)
	}
	return sub
}

// Await is Join, waiting up to d (or until ctx ends) for key to be
// routed: a data stream may overtake the answer that names its key.
func (r *Routes) Await(ctx context.Context, key uint64, d time.Duration) *Sub {
	var t *time.Timer
	for {
		r.mu.Lock()
		sub := r.joinLocked(key)
		if sub != nil {
			r.mu.Unlock()
			return sub
		}
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		ch := r.changed
		r.mu.Unlock()
		if t == nil {
			t = time.NewTimer(d)
			defer t.Stop()
		}
		select {
		case <-ch:
		case <-t.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// Routed returns the subscriptions routed now.
func (r *Routes) Routed() []*Sub {
	r.mu.Lock()
	defer r.mu.Unlock()
	subs := make([]*Sub, 0, len(r.subs))
	for _, sub := range r.subs {
		subs = append(subs, sub)
	}
	return subs
}
