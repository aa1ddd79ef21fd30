package subscribe

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// streamOrder makes the group streams of one connection create their model
// groups in order within a subscription. Each uni stream is read by its own
// goroutine, so the stream of group 1 can reach its model group before the
// stream of group 0, accepted just before it, has read its header; a reader
// that has not started then begins at group 1 and group 0, created a moment
// later, is behind it and lost (at the start of every subscription whose
// SUBSCRIBE_OK names no group: an IETF publisher that had nothing yet).
//
// A stream takes a ticket when it is accepted. Until its subscription
// made its first group, a stream waits, before it creates its own, for
// every stream accepted earlier to have read its header, and for the
// streams of the same subscription holding an older group to have created
// theirs. (Later on the order does not matter: a reader that started waits
// for a missing group; and waiting then would serialize a burst of
// streams, a frame each for audio, behind the scheduler.) An older group never waits for a newer one, so the wait
// cannot go round in a circle; it is bounded by orderWaitMax all the same,
// after which the stream goes on as before, and a stream whose header has
// not come orderWaitMax after it was accepted holds no one up any more.
type streamOrder struct {
	mu   sync.Mutex
	next uint64
	// open are the accepted streams that have not created their group
	// (nor turned out to be no group stream), in acceptance order.
	open []orderEntry
	// changed is closed (and replaced) whenever open changes while a
	// stream waits on it.
	changed chan struct{}
}

type orderEntry struct {
	n     uint64
	at    time.Time // accepted
	named bool      // the header was read
	key   uint64    // the subscription (moq-lite ID, moq-transport alias)
	seq   uint64    // the group
}

// orderWaitMax bounds how long a group stream waits for the streams before
// it. Their headers come with their first packet, so the wait is a
// goroutine's scheduling at most, unless a packet was lost.
const orderWaitMax = time.Second

// orderSpins is how many times a stream yields to the others before it
// waits on a channel: the streams it waits for are usually runnable
// goroutines that only need the processor.
const orderSpins = 4

// orderTicket is one stream's place in its connection's streamOrder. The
// zero ticket (a stream read outside serveStreams) orders nothing.
type orderTicket struct {
	o *streamOrder
	n uint64
}

// Test hooks: testHookGroupNamed runs when a group stream has read its
// header, testHookOrderWaiting when it starts waiting for an older group.
var testHookGroupNamed, testHookOrderWaiting atomic.Pointer[func(seq uint64)]

// take gives a stream just accepted its ticket.
func (o *streamOrder) take() orderTicket {
	if o == nil {
		return orderTicket{}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	n := o.next
	o.next++
	o.open = append(o.open, orderEntry{n: n, at: time.Now()})
	return orderTicket{o: o, n: n}
}

// pending reports how many streams accepted on the connection have not
// yet created their group (nor turned out to be no group stream).
func (o *streamOrder) pending() int {
	if o == nil {
		return 0
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.open)
}

// changedLocked wakes the waiters. Called with o.mu held.
func (o *streamOrder) changedLocked() {
	if o.changed != nil {
		close(o.changed)
		o.changed = nil
	}
}

// name records that the stream's header names group seq of subscription
// key.
func (t orderTicket) name(key, seq uint64) {
	if hook := testHookGroupNamed.Load(); hook != nil {
		defer (*hook)(seq)
	}
	if t.o == nil {
		return
	}
	o := t.o
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range o.open {
		if o.open[i].n == t.n {
			o.open[i].named, o.open[i].key, o.open[i].seq = true, key, seq
			o.changedLocked()
			return
		}
	}
}

// done takes the stream out of the order: it created its group, gave up,
// or is no group stream. Calling it again does nothing.
func (t orderTicket) done() {
	if t.o == nil {
		return
	}
	o := t.o
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range o.open {
		if o.open[i].n == t.n {
			o.open = append(o.open[:i], o.open[i+1:]...)
			o.changedLocked()
			return
		}
	}
}

// wait holds the stream, named earlier, until the streams accepted before
// it have read their headers and the older groups of its subscription
// were created, at most orderWaitMax or until ctx ends; or until made, the
// subscription's first group was created: a reader starts at that group,
// and the groups after it may come in any order (the reader waits for a
// missing one, up to its latency).
func (t orderTicket) wait(ctx context.Context, made *atomic.Bool) {
	if t.o == nil || made.Load() {
		return
	}
	o := t.o
	for i := 0; ; i++ {
		if made.Load() {
			return
		}
		o.mu.Lock()
		seq, blocked := o.blockedLocked(t.n)
		o.mu.Unlock()
		if !blocked {
			return
		}
		if hook := testHookOrderWaiting.Load(); hook != nil && i == 0 {
			(*hook)(seq)
		}
		if i == orderSpins {
			break
		}
		runtime.Gosched()
	}
	timer := time.NewTimer(orderWaitMax)
	defer timer.Stop()
	for {
		o.mu.Lock()
		_, blocked := o.blockedLocked(t.n)
		if !blocked || made.Load() {
			o.mu.Unlock()
			return
		}
		if o.changed == nil {
			o.changed = make(chan struct{})
		}
		ch := o.changed
		o.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// blockedLocked reports whether stream n must wait, and n's group. Called
// with o.mu held.
func (o *streamOrder) blockedLocked(n uint64) (uint64, bool) {
	var me *orderEntry
	for i := range o.open {
		if o.open[i].n == n {
			me = &o.open[i]
			break
		}
	}
	if me == nil || !me.named {
		return 0, false
	}
	var now time.Time
	for _, e := range o.open {
		if e.n < n && !e.named {
			if now.IsZero() {
				now = time.Now()
			}
			if now.Sub(e.at) >= orderWaitMax {
				continue
			}
		}
		if (e.n < n && !e.named) || (e.named && e.key == me.key && e.seq < me.seq) {
			return me.seq, true
		}
	}
	return me.seq, false
}
