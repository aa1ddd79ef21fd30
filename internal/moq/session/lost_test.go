package session

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// silentFamily is a connection as LostWith sees it: its context, and how
// long it takes to find a silent peer.
type silentFamily struct {
	Family
	ctx     context.Context
	silence time.Duration
}

func (f silentFamily) Context() context.Context { return f.ctx }
func (f silentFamily) Gone(error) bool          { return f.ctx.Err() != nil }
func (f silentFamily) Silence() time.Duration   { return f.silence }

func TestARequestIsLostWithItsConnectionOnlyWhenTheConnectionEndsWithinTwiceItsSilence(t *testing.T) {
	const silence = 50 * time.Millisecond
	timeout := fmt.Errorf("%w: TRACK: no TRACK_INFO within 1s", ErrTimeout)
	refusal := fmt.Errorf("%w: TRACK: FIN without TRACK_INFO", ErrRefused)
	cases := []struct {
		name string
		err  error
		ends time.Duration // when the connection ends (0: it does not; <0: it has)
		want bool
		// least is how long LostWith must have waited.
		least time.Duration
	}{
		{"no error", nil, -1, false, 0},
		{"any error on a connection already gone", refusal, -1, true, 0},
		{"a refusal on a live connection: the peer's answer", refusal, 0, false, 0},
		{"a timeout on a connection that ends within its silence", timeout, silence, true, silence},
		{"a timeout on a connection that ends within twice its silence", timeout, 3 * silence / 2, true, 3 * silence / 2},
		{"a timeout on a connection that stays up: the peer said nothing", timeout, 0, false, 2 * silence},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			switch {
			case tc.ends < 0:
				cancel()
			case tc.ends > 0:
				time.AfterFunc(tc.ends, cancel)
			}
			start := time.Now()
			if got := LostWith(context.Background(), silentFamily{ctx: ctx, silence: silence}, tc.err); got != tc.want {
				t.Fatalf("LostWith(%v) = %v, want %v", tc.err, got, tc.want)
			}
			if d := time.Since(start); d < tc.least {
				t.Fatalf("LostWith returned after %v, before %v", d, tc.least)
			}
		})
	}
}

func TestLostWithStopsWaitingWhenItsContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	live := silentFamily{ctx: context.Background(), silence: time.Hour}
	if LostWith(ctx, live, fmt.Errorf("%w: x", ErrTimeout)) {
		t.Fatal("a live connection taken for lost")
	}
}
