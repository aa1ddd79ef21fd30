package cli

import (
	"context"
	"runtime/debug"
	"sync"
	"time"

	"github.com/moq-export/moq-export/record"
)

// memoryReturner hands the memory a burst of recording starts left behind
// back to the operating system, once no recording has started for after:
// a process-wide act, so the command's and not the library's.
//
// A fleet that starts many recordings at once peaks its heap with what
// their starts allocate (TLS, catalogs, first groups); the Go runtime
// returns freed memory only as a collection lowers its goal, which an idle
// recorder runs at most every 2 minutes, and even then keeps 10% above
// its goal: 1,000 idle recordings held ~77 MB of such memory. So: one
// collection first (the runtime sizes new goroutines by the stacks it saw
// then: the waiting recordings', not the start's), then the sessions park
// their subscriptions' waits afresh on those smaller stacks
// (internal/moq/settle), then debug.FreeOSMemory returns what that
// freed too.
type memoryReturner struct {
	after   time.Duration
	free    func()           // debug.FreeOSMemory but in tests
	sources func() []settler // the sources recorded from now
	mu      sync.Mutex
	timer   resetter
	// afterFunc is time.AfterFunc but in tests.
	afterFunc func(time.Duration, func()) resetter
}

// resetter is the part of a *time.Timer the returner uses.
type resetter interface{ Reset(time.Duration) bool }

// settler is a source whose waits can be parked afresh.
type settler interface{ Settle(context.Context) }

// settleTimeout bounds how long the sources are given to settle.
const settleTimeout = 5 * time.Second

// started notes a recording start: the memory is returned after the
// newest start, one timer for all recordings.
func (m *memoryReturner) started() {
	if m == nil || m.after <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.timer == nil {
		after := m.afterFunc
		if after == nil {
			after = func(d time.Duration, f func()) resetter { return time.AfterFunc(d, f) }
		}
		m.timer = after(m.after, m.run)
		return
	}
	m.timer.Reset(m.after)
}

// onRecording is record.Options.OnRecording: starts push the return back.
func (m *memoryReturner) onRecording(rec *record.Recording) {
	if rec.State() == record.StateStarting {
		m.started()
	}
}

func (m *memoryReturner) run() {
	m.free()
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	for _, s := range m.sources() {
		s.Settle(ctx)
	}
	m.free()
}

// newMemoryReturner returns the command's returner over its sources.
func (a *app) newMemoryReturner() *memoryReturner {
	return &memoryReturner{after: returnMemoryAfter, free: debug.FreeOSMemory, sources: func() []settler {
		a.mu.Lock()
		defer a.mu.Unlock()
		var out []settler
		for src := range a.sources {
			if s, ok := src.(settler); ok {
				out = append(out, s)
			}
		}
		return out
	}}
}
