package subscribe

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
	var ss stopSet[string]
	ctx := context.Background() // fired by hand below, synchronously
	a := ss.add(ctx, "a", stop)
	ss.add(ctx, "b", stop)
	ss.remove(a)
	ss.add(ctx, "c", stop)
	if len(stopped) != 0 {
		t.Fatalf("stopped %v before the context ended", stopped)
	}
	ss.fire()
	slices.Sort(stopped)
	if !slices.Equal(stopped, []string{"b", "c"}) {
		t.Fatalf("stopped %v, want [b c]", stopped)
	}
	if id := ss.add(ctx, "d", stop); id != 0 || stopped[len(stopped)-1] != "d" {
		t.Fatalf("a stream added after the end: id %d, stopped %v", id, stopped)
	}
	ss.close()
}

// TestStopSetFiresWhenTheContextEnds, and not after close.
func TestStopSetFiresWhenTheContextEnds(t *testing.T) {
	done := make(chan string, 2)
	stop := func(s string) { done <- s }
	ctx, cancel := context.WithCancel(context.Background())
	var ss stopSet[string]
	ss.add(ctx, "a", stop)
	cancel()
	if got := <-done; got != "a" {
		t.Fatalf("stopped %q", got)
	}

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	var closed stopSet[string]
	closed.add(ctx, "b", stop)
	closed.close()
	cancel()
	if id := closed.add(ctx, "c", stop); id == 0 {
		t.Fatal("a closed set still fired")
	}
	if len(done) != 0 {
		t.Fatalf("a closed set stopped %q", <-done)
	}
}
