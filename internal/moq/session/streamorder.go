package session

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// StreamOrder makes the group streams of one connection create their model
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
//
// Over WebTransport the acceptance order is not the peer's: webtransport-go
// reads each uni stream's header on a goroutine of its own before it hands
// the stream over, so group 1's stream can be accepted before group 0's,
// opened just before it, and nothing tells the order a stream is missing.
// A stream that knows its QUIC stream ID (TakeID) is ordered by it
// instead; one accepted past a gap in the IDs leaves a placeholder for
// each stream of the gap, which the later streams wait for as for an
// accepted stream whose header has not come (at most orderWaitMax).
type StreamOrder struct {
	mu   sync.Mutex
	next uint64
	// hi is the highest stream ID taken (byID: one was taken).
	hi   uint64
	byID bool
	// open are the accepted streams that have not created their group
	// (nor turned out to be no group stream), in acceptance order.
	open []orderEntry
	// changed is closed (and replaced) whenever open changes while a
	// stream waits on it.
	changed chan struct{}
}

type orderEntry struct {
	n     uint64    // the acceptance number, or the stream ID (TakeID)
	at    time.Time // accepted
	ghost bool      // a stream ID below one taken, not taken itself yet
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

// OrderTicket is one stream's place in its connection's StreamOrder. The
// zero ticket (a stream read outside AcceptStreams) orders nothing.
type OrderTicket struct {
	o *StreamOrder
	n uint64
}

// Test hooks: HookGroupNamed runs when a group stream has read its
// header, HookOrderWaiting when it starts waiting for an older group.
var HookGroupNamed, HookOrderWaiting atomic.Pointer[func(seq uint64)]

// Take gives a stream just accepted its ticket.
func (o *StreamOrder) Take() OrderTicket {
	if o == nil {
		return OrderTicket{}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	n := o.next
	o.next++
	o.open = append(o.open, orderEntry{n: n, at: time.Now()})
	return OrderTicket{o: o, n: n}
}

// uniStep is the distance between two stream IDs the peer opens of one
// kind (RFC 9000 2.1: the low two bits are the initiator and the kind).
const uniStep = 4

// maxGhosts bounds the placeholders one stream leaves for a gap before it.
const maxGhosts = 64

// TakeID gives a stream just accepted its ticket, ordered by its QUIC
// stream ID: a stream accepted before one with a lower ID, which the peer
// opened first, waits for it as for a stream accepted before it. The
// first ID taken sets where the order starts (the IDs below it may be
// another protocol's streams, HTTP/3's on a WebTransport connection).
func (o *StreamOrder) TakeID(id uint64) OrderTicket {
	if o == nil {
		return OrderTicket{}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	kept := o.open[:0]
	for _, e := range o.open {
		if e.ghost && e.n == id {
			continue // taken now
		}
		if e.ghost && now.Sub(e.at) >= orderWaitMax {
			continue // never came: it holds no one up any more
		}
		kept = append(kept, e)
	}
	o.open = kept
	if o.byID && id > o.hi+uniStep {
		from := o.hi + uniStep
		if id-from > maxGhosts*uniStep {
			from = id - maxGhosts*uniStep
		}
		for g := from; g < id; g += uniStep {
			o.open = append(o.open, orderEntry{n: g, at: now, ghost: true})
		}
	}
	if !o.byID || id > o.hi {
		o.hi, o.byID = id, true
	}
	o.open = append(o.open, orderEntry{n: id, at: now})
	o.changedLocked()
	return OrderTicket{o: o, n: id}
}

// Pending reports how many streams accepted on the connection have not
// yet created their group (nor turned out to be no group stream).
func (o *StreamOrder) Pending() int {
	if o == nil {
		return 0
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, e := range o.open {
		if !e.ghost {
			n++
		}
	}
	return n
}

// changedLocked wakes the waiters. Called with o.mu held.
func (o *StreamOrder) changedLocked() {
	if o.changed != nil {
		close(o.changed)
		o.changed = nil
	}
}

// Name records that the stream's header names group seq of subscription
// key.
func (t OrderTicket) Name(key, seq uint64) {
	if hook := HookGroupNamed.Load(); hook != nil {
		defer (*hook)(seq)
	}
	if t.o == nil {
		return
	}
	o := t.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if i := o.indexLocked(t.n); i >= 0 {
		o.open[i].named, o.open[i].key, o.open[i].seq = true, key, seq
		o.changedLocked()
	}
}

// Done takes the stream out of the order: it created its group, gave up,
// or is no group stream. Calling it again does nothing.
func (t OrderTicket) Done() {
	if t.o == nil {
		return
	}
	o := t.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if i := o.indexLocked(t.n); i >= 0 {
		o.open = append(o.open[:i], o.open[i+1:]...)
		o.changedLocked()
	}
}

// Wait holds the stream, named earlier, until the streams accepted before
// it have read their headers and the older groups of its subscription
// were created, at most orderWaitMax or until ctx ends; or until made, the
// subscription's first group was created: a reader starts at that group,
// and the groups after it may come in any order (the reader waits for a
// missing one, up to its latency).
func (t OrderTicket) Wait(ctx context.Context, made *atomic.Bool) {
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
		if hook := HookOrderWaiting.Load(); hook != nil && i == 0 {
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

// indexLocked is the index of stream n in o.open, or -1 when n is not
// open. Called with o.mu held.
func (o *StreamOrder) indexLocked(n uint64) int {
	for i := range o.open {
		if o.open[i].n == n {
			return i
		}
	}
	return -1
}

// blockedLocked reports whether stream n must wait, and n's group. Called
// with o.mu held.
func (o *StreamOrder) blockedLocked(n uint64) (uint64, bool) {
	i := o.indexLocked(n)
	if i < 0 || !o.open[i].named {
		return 0, false
	}
	me := &o.open[i]
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

// AcceptStreams accepts streams with accept until it fails, handles each on
// its own goroutine and returns once every handler has. When ctx (the
// connection's) ends, every stream's reads end too: webtransport-go holds
// a read on a stream the peer reset with "session gone" until our side of
// the session is closed, which may never be signalled to a stream
// accepted at that moment; a deadline always wakes it.
func AcceptStreams[S interface{ SetReadDeadline(time.Time) error }](ctx context.Context, accept func(context.Context) (S, error), order *StreamOrder, handle func(S, OrderTicket)) {
	var wg sync.WaitGroup
	var stops StopSet[S]
	defer stops.Close()
	defer wg.Wait()
	wake := wakeRead[S] // a generic func value: made once, not per stream
	for {
		str, err := accept(ctx)
		if err != nil {
			return
		}
		id := stops.Add(ctx, str, wake)
		// In the peer's order when the stream knows its ID, else in
		// acceptance order; before the goroutine runs.
		var t OrderTicket
		if s, ok := any(str).(interface{ StreamID() uint64 }); ok {
			t = order.TakeID(s.StreamID())
		} else {
			t = order.Take()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer stops.Remove(id)
			defer t.Done()
			handle(str, t)
		}()
	}
}

// wakeRead ends a stream's pending and future reads.
func wakeRead[S interface{ SetReadDeadline(time.Time) error }](str S) {
	str.SetReadDeadline(time.Now())
}

// ServeConn serves connection c of either family until it is gone: the
// uni streams the peer opens, each with its ticket of order (its
// acceptance order, which a drain asks), its bidi streams, and the
// family's own loops (its SETUP or control stream, announcing what we
// publish). When session ends first (the session is closed), c is closed
// with code. It returns once every loop and stream handler has.
func ServeConn(session context.Context, c Conn, code uint64, order *StreamOrder, uni func(RecvStream, OrderTicket), bidi func(Stream), loops ...func()) {
	ctx := c.Context()
	var wg sync.WaitGroup
	for _, loop := range loops {
		wg.Go(loop)
	}
	wg.Go(func() { AcceptStreams(ctx, c.AcceptUni, order, uni) })
	wg.Go(func() {
		AcceptStreams(ctx, c.AcceptBidi, nil, func(str Stream, _ OrderTicket) { bidi(str) })
	})
	select {
	case <-ctx.Done():
	case <-session.Done():
		c.Close(code, "")
	}
	wg.Wait()
}
