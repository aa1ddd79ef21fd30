package subscribe

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestRetryPolicy(t *testing.T) {
	const (
		window = 10 * time.Second
		pause  = 500 * time.Millisecond
		wait   = 5 * time.Second
	)
	unroutable := fmt.Errorf("%w: SUBSCRIBE: %w", ErrRefused, &ResetError{Code: CodeUnroutable})
	notFound := fmt.Errorf("%w: SUBSCRIBE: %w", ErrRefused, &ResetError{Code: CodeNotFound})
	noInfo := fmt.Errorf("%w: TRACK: no TRACK_INFO within the request timeout", ErrRefused)
	lost := errors.New("connection lost")
	for _, tc := range []struct {
		name   string
		err    error
		st     retryState
		action retryAction
		wait   time.Duration
	}{
		{"publisher ended the track", nil, retryState{live: true}, retryEnd, 0},
		{"broadcast closed by its owner", lost, retryState{broadcastDone: true, connGone: true}, retryEnd, 0},
		{"broadcast closed beats a refusal", notFound, retryState{live: true, broadcastDone: true}, retryEnd, 0},
		{"broadcast restarted", fmt.Errorf("attempt: %w", errRestart), retryState{live: true, connGone: true}, retryNow, 0},
		{"connection lost", lost, retryState{live: true, connGone: true}, retryNextConn, 0},
		{"connection lost before live", lost, retryState{connGone: true}, retryNextConn, 0},
		{"not routable yet", unroutable, retryState{}, retryOnAnnounce, wait},
		{"not routable after being live", unroutable, retryState{live: true, refusedFor: time.Second}, retryNow, pause},
		{"refused while resuming", notFound, retryState{live: true}, retryNow, pause},
		{"refused at the end of the window", noInfo, retryState{live: true, refusedFor: window}, retryNow, pause},
		{"refused past the window", notFound, retryState{live: true, refusedFor: window + time.Millisecond}, retryEnd, 0},
		{"refused at the first subscription", notFound, retryState{}, retryEnd, 0},
		{"no TRACK_INFO at the first subscription", noInfo, retryState{}, retryEnd, 0},
		{"protocol error", fmt.Errorf("subscribe stream: %w", ErrProtocol), retryState{live: true}, retryEnd, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.st.resumeWindow, tc.st.retryWait, tc.st.announceWait = window, pause, wait
			action, d := retryPolicy(tc.err, tc.st)
			if action != tc.action || d != tc.wait {
				t.Fatalf("retryPolicy = %v after %v, want %v after %v", action, d, tc.action, tc.wait)
			}
		})
	}
}
