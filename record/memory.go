package record

import (
	"context"
	"time"
)

// returnMemory hands the memory freed since the recordings started back
// to the operating system (Options.ReturnMemoryAfter).
//
// First the sources that can settle do (subscribe.Session.Settle parks its
// subscriptions' waits afresh, on the smaller stacks new goroutines get
// once the start is over), so that the stacks they leave are returned too.
// The runtime sizes new goroutines at a collection, by the stacks it saw:
// one runs first, so that the size is the waiting recordings' and not the
// start's.
func (r *Recorder) returnMemory() {
	r.log.Debug("recordings started: returning the memory their start left to the system")
	r.freeMemory()
	r.mu.Lock()
	srcs := make([]Source, 0, len(r.sources))
	for _, src := range r.sources {
		srcs = append(srcs, src)
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	for _, src := range srcs {
		if st, ok := src.(interface{ Settle(context.Context) }); ok {
			st.Settle(ctx)
		}
	}
	r.freeMemory()
}

// settleTimeout bounds how long returnMemory waits for the sources to
// settle.
const settleTimeout = 5 * time.Second

// recordingFrom notes that src is recorded from until the returned func
// runs (returnMemory settles it).
func (r *Recorder) recordingFrom(src Source) (done func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sources == nil {
		r.sources = map[int]Source{}
	}
	id := r.nextSource
	r.nextSource++
	r.sources[id] = src
	return func() {
		r.mu.Lock()
		delete(r.sources, id)
		r.mu.Unlock()
	}
}
