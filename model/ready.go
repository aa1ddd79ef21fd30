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
//
// A reader that would otherwise keep a goroutine blocked on Wakeup can
// Park instead: the next wakeup then calls its resume function, and no
// goroutine waits meanwhile.
type ReadySet struct {
	n      atomic.Int32
	mu     sync.Mutex
	list   []*Consumer
	wakeup chan struct{}
	resume func() // set by Park, called by the next wake; under mu
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
	r.mu.Lock()
	resume := r.wakeLocked()
	r.mu.Unlock()
	if resume != nil {
		resume()
	}
}

// wakeLocked wakes the reader: it returns the resume function of a parked
// one (to call once mu is released), or leaves a value on Wakeup.
func (r *ReadySet) wakeLocked() (resume func()) {
	if resume = r.resume; resume != nil {
		r.resume = nil
		return resume
	}
	select {
	case r.wakeup <- struct{}{}:
	default:
	}
	return nil
}

// Park arranges for resume to be called, once, by the next wakeup (a
// consumer put on the list, or Wake), from the goroutine that wakes, and
// reports true; the caller then returns instead of waiting on Wakeup, so
// that no goroutine (and no stack) is held while nothing happens. When a
// wakeup is pending already, Park takes it and reports false without
// keeping resume: the caller looks again at once. A reader parks at most
// once at a time. resume runs in the waker's goroutine, which may be a
// producer holding its track's lock: it must not block or read the set;
// it starts the goroutine that goes on reading.
func (r *ReadySet) Park(resume func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.wakeup:
		return false
	default:
	}
	r.resume = resume
	return true
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
	resume := r.wakeLocked()
	r.mu.Unlock()
	if resume != nil {
		resume()
	}
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
