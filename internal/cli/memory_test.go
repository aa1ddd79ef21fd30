package cli

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestMemoryIsReturnedAfterTheStartsStop: the memory is handed back once
// after a run of starts, and again after a later one; never while starts
// go on, and never when turned off.
func TestMemoryIsReturnedAfterTheStartsStop(t *testing.T) {
	frees := 0
	var fake *fakeTimer
	m := &memoryReturner{after: 50 * time.Millisecond, free: func() { frees++ }, sources: func() []settler { return nil },
		afterFunc: func(d time.Duration, f func()) resetter { fake = &fakeTimer{fire: f, d: d}; return fake }}
	for round := 1; round <= 2; round++ {
		for range 5 {
			m.started()
		}
		if fake == nil || fake.d != 50*time.Millisecond {
			t.Fatalf("round %d: no timer of %v armed", round, m.after)
		}
		// One timer for every start, pushed back by each start after the
		// first: it fires only once the starts stop for `after`.
		if want := 5*round - 1; fake.resets != want {
			t.Fatalf("round %d: the timer was pushed back %d times, want %d", round, fake.resets, want)
		}
		if frees != 2*(round-1) {
			t.Fatalf("round %d: memory returned %d times while recordings were starting", round, frees)
		}
		fake.fire()
		if frees != 2*round {
			t.Fatalf("round %d: the timer fired, memory returned %d times, want %d", round, frees, 2*round)
		}
	}
	off := &memoryReturner{free: func() { t.Error("returned with the returner off") }}
	off.started()
	if off.timer != nil {
		t.Error("a timer was armed with the returner off")
	}
}

// fakeTimer is a timer the test fires.
type fakeTimer struct {
	fire   func()
	d      time.Duration
	resets int
}

func (f *fakeTimer) Reset(d time.Duration) bool { f.d = d; f.resets++; return true }

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
