package model

import (
	"sync"
	"sync/atomic"
)

// ReadySet is the ready list of one reader that watches many consumers (an
// exporter). Producers put a consumer on it when its track changes; the
// reader takes the list and visits only those consumers. Each consumer is on
// the list at most once, and checking an empty list is one atomic load, so a
// poll that nothing woke costs the same for 1 or 1000 tracks.
type ReadySet struct {
	n      atomic.Int32
	mu     sync.Mutex
	list   []*Consumer
	wakeup chan struct{}
}

// NewReadySet returns an empty ready set.
func NewReadySet() *ReadySet { return &ReadySet{wakeup: make(chan struct{}, 1)} }

// Wakeup receives a value after consumers were put on the list; a reader
// that blocks waits on it.
func (r *ReadySet) Wakeup() <-chan struct{} { return r.wakeup }

// Wake makes a reader that waits on Wakeup look again, without marking any
// consumer (for work that finished outside the consumers, such as a
// background backfill).
func (r *ReadySet) Wake() {
	select {
	case r.wakeup <- struct{}{}:
	default:
	}
}

// Empty reports whether no consumer is ready.
func (r *ReadySet) Empty() bool { return r.n.Load() == 0 }

func (r *ReadySet) mark(c *Consumer) {
	if !c.queued.CompareAndSwap(false, true) {
		return
	}
	r.mu.Lock()
	r.list = append(r.list, c)
	r.n.Add(1)
	r.mu.Unlock()
	r.Wake()
}

// Take appends the ready consumers to dst, empties the list and returns dst.
// A consumer taken is marked not ready before Take returns, so a change that
// lands while the caller reads it puts it back on the list.
func (r *ReadySet) Take(dst []*Consumer) []*Consumer {
	if r.n.Load() == 0 {
		return dst
	}
	start := len(dst)
	r.mu.Lock()
	dst = append(dst, r.list...)
	clear(r.list)
	r.list = r.list[:0]
	r.n.Store(0)
	r.mu.Unlock()
	for _, c := range dst[start:] {
		c.queued.Store(false)
	}
	return dst
}
