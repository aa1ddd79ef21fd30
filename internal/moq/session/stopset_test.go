package session

import (
	"context"
	"slices"
	"testing"
)

// TestStopSetStopsWhatIsRegisteredWhenItFires: streams registered when
// the set fires are stopped, those removed before are not, and one added
// after is stopped at once.
func TestStopSetStopsWhatIsRegisteredWhenItFires(t *testing.T) {
	var stopped []string
	stop := func(s string) { stopped = append(stopped, s) }
	var ss StopSet[string]
	ctx := context.Background() // fired by hand below, synchronously
	a := ss.Add(ctx, "a", stop)
	ss.Add(ctx, "b", stop)
	ss.Remove(a)
	ss.Add(ctx, "c", stop)
	if len(stopped) != 0 {
		t.Fatalf("stopped %v before the context ended", stopped)
	}
	ss.fire()
	slices.Sort(stopped)
	if !slices.Equal(stopped, []string{"b", "c"}) {
		t.Fatalf("stopped %v, want [b c]", stopped)
	}
	if id := ss.Add(ctx, "d", stop); id != 0 || stopped[len(stopped)-1] != "d" {
		t.Fatalf("a stream added after the end: id %d, stopped %v", id, stopped)
	}
	ss.Close()
}

// TestStopSetFiresWhenTheContextEnds, and not after close.
func TestStopSetFiresWhenTheContextEnds(t *testing.T) {
	done := make(chan string, 2)
	stop := func(s string) { done <- s }
	ctx, cancel := context.WithCancel(context.Background())
	var ss StopSet[string]
	ss.Add(ctx, "a", stop)
	cancel()
	if got := <-done; got != "a" {
		t.Fatalf("stopped %q", got)
	}

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	var closed StopSet[string]
	closed.Add(ctx, "b", stop)
	closed.Close()
	cancel()
	if id := closed.Add(ctx, "c", stop); id == 0 {
		t.Fatal("a closed set still fired")
	}
	if len(done) != 0 {
		t.Fatalf("a closed set stopped %q", <-done)
	}
}
