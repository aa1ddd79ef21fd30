package session

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// idStream is an accepted stream that knows its QUIC stream ID, as a
// WebTransport one does.
type idStream struct{ id uint64 }

func (s idStream) StreamID() uint64                { return s.id }
func (s idStream) SetReadDeadline(time.Time) error { return nil }

// TestAGroupStreamAcceptedBeforeTheOlderOneOpenedFirstWaitsForIt: over
// WebTransport the stream of group 1 (ID 10) can be accepted before that
// of group 0 (ID 6), which the peer opened first (webtransport-go reads
// each stream's header on its own goroutine). Group 0 must still make its
// group first, or a reader starting at group 1 loses it ("h264: 60
// frames, want 120" in the WebTransport loopback under load). The stream
// of group 0 is accepted only after group 1's has made its group or
// waited 300 ms.
func TestAGroupStreamAcceptedBeforeTheOlderOneOpenedFirstWaitsForIt(t *testing.T) {
	const sub = 1
	seqOf := map[uint64]uint64{2: 0, 10: 1, 6: 0} // stream ID -> group
	keyOf := map[uint64]uint64{2: 9, 10: sub, 6: sub}
	streams := make(chan idStream)
	oneDone := make(chan struct{}) // group 1's stream made its group
	go func() {
		streams <- idStream{2} // the catalog's, on another subscription
		streams <- idStream{10}
		select {
		case <-oneDone:
		case <-time.After(300 * time.Millisecond):
		}
		streams <- idStream{6}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var mu sync.Mutex
	var made []uint64 // groups of sub, in the order they were made
	var madeSub atomic.Bool
	accepted := 0
	accept := func(ctx context.Context) (idStream, error) {
		if accepted == 3 {
			<-ctx.Done()
			return idStream{}, ctx.Err()
		}
		accepted++
		select {
		case s := <-streams:
			return s, nil
		case <-ctx.Done():
			return idStream{}, ctx.Err()
		}
	}
	all := make(chan struct{})
	var count atomic.Int32
	order := &StreamOrder{}
	go AcceptStreams(ctx, accept, order, func(s idStream, tk OrderTicket) {
		tk.Name(keyOf[s.id], seqOf[s.id])
		if keyOf[s.id] == sub {
			tk.Wait(ctx, &madeSub)
			mu.Lock()
			made = append(made, seqOf[s.id])
			mu.Unlock()
			madeSub.Store(true)
		}
		tk.Done()
		if s.id == 10 {
			close(oneDone)
		}
		if count.Add(1) == 3 {
			close(all)
		}
	})
	select {
	case <-all:
	case <-ctx.Done():
		t.Fatal("the streams were not all handled")
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(made, []uint64{0, 1}) {
		t.Errorf("groups made in the order %v, want [0 1]", made)
	}
	if n := order.Pending(); n != 0 {
		t.Errorf("%d streams pending after every one made its group", n)
	}
}

// TestAStreamIDNeverTakenHoldsNoOneUpLongerThanTheWaitBound: a gap in the
// IDs that never fills (a stream of another protocol, or one reset before
// its header) delays the streams after it at most orderWaitMax, and is
// not a pending stream.
func TestAStreamIDNeverTakenHoldsNoOneUpLongerThanTheWaitBound(t *testing.T) {
	o := &StreamOrder{}
	first := o.TakeID(2)
	first.Name(9, 0)
	first.Done()
	tk := o.TakeID(14) // 6 and 10 never come
	tk.Name(1, 5)
	if n := o.Pending(); n != 1 {
		t.Errorf("%d streams pending, want 1 (the gap's are none)", n)
	}
	var made atomic.Bool
	start := time.Now()
	tk.Wait(context.Background(), &made)
	if d := time.Since(start); d < orderWaitMax/2 || d > 5*orderWaitMax {
		t.Errorf("waited %v for the gap, want about %v", d, orderWaitMax)
	}
	tk.Done()
	if n := o.Pending(); n != 0 {
		t.Errorf("%d streams pending, want 0", n)
	}
}
