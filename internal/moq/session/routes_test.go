package session

import (
	"context"
	"testing"
	"time"
)

func TestRoutesRouteAKeyToOneSubscriptionAtATime(t *testing.T) {
	var r Routes
	a, b := &Sub{}, &Sub{}
	if !r.Add(4, a) {
		t.Fatal("a free key was refused")
	}
	if r.Add(4, b) {
		t.Fatal("a key routed already was taken again")
	}
	// Removing another subscription's key leaves it routed.
	r.Remove(4, b)
	if got := r.Join(4); got != a {
		t.Fatalf("Join(4) = %p, want the first subscription %p", got, a)
	}
	a.Groups.Done()
	if got := r.Routed(); len(got) != 1 || got[0] != a {
		t.Fatalf("Routed = %v, want the one subscription", got)
	}
	r.Remove(4, a)
	if got := r.Join(4); got != nil {
		t.Fatalf("Join after Remove = %p, want none", got)
	}
	if got := r.Routed(); len(got) != 0 {
		t.Fatalf("Routed after Remove = %v, want none", got)
	}
}

func TestAStreamThatOvertakesItsAnswerWaitsForItsKeyOrGivesUp(t *testing.T) {
	var r Routes
	sub := &Sub{}
	got := make(chan *Sub, 1)
	go func() { got <- r.Await(context.Background(), 7, 10*time.Second) }()
	time.Sleep(10 * time.Millisecond)
	r.Add(3, &Sub{}) // another key wakes the wait, which goes on waiting
	r.Add(7, sub)
	select {
	case s := <-got:
		if s != sub {
			t.Fatalf("Await = %p, want %p", s, sub)
		}
		s.Groups.Done()
	case <-time.After(10 * time.Second):
		t.Fatal("Await missed the key's route")
	}
	if s := r.Await(context.Background(), 8, 20*time.Millisecond); s != nil {
		t.Fatalf("Await of a key never routed = %p, want none", s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if s := r.Await(ctx, 9, 10*time.Second); s != nil {
		t.Fatalf("Await after its context ended = %p, want none", s)
	}
}
