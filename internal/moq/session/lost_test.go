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
	timeout := fmt.Errorf("%w: TRACK: no TRACK_INFO within 1s", ErrTimeout)
	refusal := fmt.Errorf("%w: TRACK: FIN without TRACK_INFO", ErrRefused)
	// A connection that ends does so well within its silence (an hour),
	// so that no timer races the end; one that stays up has a short one.
	cases := []struct {
		name    string
		err     error
		silence time.Duration
		ends    time.Duration // when the connection ends (0: it does not; <0: it has)
		want    bool
	}{
		{"no error", nil, time.Hour, -1, false},
		{"any error on a connection already gone", refusal, time.Hour, -1, true},
		{"a refusal on a live connection: the peer's answer", refusal, time.Hour, 0, false},
		{"a timeout on a connection that ends within its silence", timeout, time.Hour, 20 * time.Millisecond, true},
		{"a timeout on a connection that stays up: the peer said nothing", timeout, 25 * time.Millisecond, 0, false},
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
			if got := LostWith(context.Background(), silentFamily{ctx: ctx, silence: tc.silence}, tc.err); got != tc.want {
				t.Fatalf("LostWith(%v) = %v, want %v", tc.err, got, tc.want)
			}
			// A timeout on a live connection is judged only after twice
			// its silence (a timer never fires early).
			if d := time.Since(start); tc.err == timeout && !tc.want && d < 2*tc.silence {
				t.Fatalf("LostWith returned after %v, before twice the silence", d)
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
