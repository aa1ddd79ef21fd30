package subscribe

import (
	"context"
	"sync"
)

// stopSet stops the streams registered with it when a context ends: one
// context.AfterFunc per context (a connection, a subscription) instead of
// one per stream, which cost three allocations per group stream (per frame
// of hang's audio, one group each). Its zero value is ready; the first add
// fixes the context and the stop function.
type stopSet[S any] struct {
	mu      sync.Mutex
	armed   bool // the AfterFunc is registered
	fired   bool // the context ended: streams added now stop at once
	stop    func(S)
	release func() bool
	next    uint64
	live    map[uint64]S
}

// add registers s until remove(id): when ctx ends, stop(s) runs. After it
// ended, stop(s) runs at once, before add returns.
func (ss *stopSet[S]) add(ctx context.Context, s S, stop func(S)) (id uint64) {
	ss.mu.Lock()
	if !ss.armed {
		ss.armed, ss.stop, ss.live = true, stop, map[uint64]S{}
		ss.release = context.AfterFunc(ctx, ss.fire)
	}
	if ss.fired {
		ss.mu.Unlock()
		ss.stop(s)
		return 0
	}
	ss.next++
	id = ss.next
	ss.live[id] = s
	ss.mu.Unlock()
	return id
}

// remove forgets the stream add registered as id.
func (ss *stopSet[S]) remove(id uint64) {
	ss.mu.Lock()
	delete(ss.live, id)
	ss.mu.Unlock()
}

// fire stops every registered stream.
func (ss *stopSet[S]) fire() {
	ss.mu.Lock()
	ss.fired = true
	live := make([]S, 0, len(ss.live))
	for _, s := range ss.live {
		live = append(live, s)
	}
	ss.mu.Unlock()
	for _, s := range live {
		ss.stop(s)
	}
}

// close stops watching the context (the streams are not stopped).
func (ss *stopSet[S]) close() {
	ss.mu.Lock()
	release := ss.release
	ss.mu.Unlock()
	if release != nil {
		release()
	}
}
