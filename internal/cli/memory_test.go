package cli

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestMemoryIsReturnedAfterTheStartsStop: the memory is handed back once
// after a run of starts, and again after a later one; never while starts
// go on, and never when turned off.
func TestMemoryIsReturnedAfterTheStartsStop(t *testing.T) {
	var mu sync.Mutex
	frees := 0
	m := &memoryReturner{after: 50 * time.Millisecond, free: func() { mu.Lock(); frees++; mu.Unlock() }, sources: func() []settler { return nil }}
	count := func() int { mu.Lock(); defer mu.Unlock(); return frees }
	for round := 1; round <= 2; round++ {
		for range 5 {
			m.started()
			time.Sleep(10 * time.Millisecond)
		}
		if n := count(); n != 2*(round-1) {
			t.Fatalf("round %d: memory returned %d times while recordings were starting", round, n)
		}
		deadline := time.Now().Add(10 * time.Second)
		for count() < 2*round {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: memory not returned after the starts", round)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	off := &memoryReturner{free: func() { t.Error("returned with the returner off") }}
	off.started()
	if off.timer != nil {
		t.Error("a timer was armed with the returner off")
	}
}

// TestTheSourcesSettleBetweenTwoCollections: the sources recorded from
// settle after a first collection (it sizes new goroutines by the waiting
// recordings) and before the one that returns the memory.
func TestTheSourcesSettleBetweenTwoCollections(t *testing.T) {
	var events []string
	m := &memoryReturner{free: func() { events = append(events, "free") },
		sources: func() []settler { return []settler{settleFunc(func() { events = append(events, "settle") })} }}
	m.run()
	if want := []string{"free", "settle", "free"}; !slices.Equal(events, want) {
		t.Fatalf("%v, want %v", events, want)
	}
}

type settleFunc func()

func (f settleFunc) Settle(context.Context) { f() }
