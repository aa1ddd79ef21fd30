package subscribe

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/moq/ietf/ietfsub"
	"github.com/moq-export/moq-export/internal/moq/lite/litesub"
	"github.com/moq-export/moq-export/internal/moq/session"
)

// retryState is what the retry policy knows of a track besides the error
// (session.TrackState), and how the connection's family reads its resets.
type retryState struct {
	live, broadcastDone, connGone bool
	refusedFor                    time.Duration
	renumbered                    bool // a moq-lite session in lite-06's numbering
	ietf                          bool // a moq-transport session
	resumeWindow, retryWait       time.Duration
	announceWait                  time.Duration
}

// retryPolicy is what a track's run decides after an attempt that ended
// with err (session.Remote's retry): the family reads the reset
// (litesub's and ietfsub's RetryReset), the core decides.
func retryPolicy(err error, st retryState) (session.RetryAction, time.Duration) {
	reset := session.ResetUnknown
	if code, ok := resetCode(err); ok {
		reset = litesub.CodeMeaning(code, st.renumbered)
	}
	if st.ietf {
		reset = (&ietfsub.Link{}).RetryReset(err)
	}
	return session.Retry(session.AttemptOf(err, reset), session.TrackState{
		Live: st.live, BroadcastDone: st.broadcastDone, ConnGone: st.connGone, RefusedFor: st.refusedFor,
		ResumeWindow: st.resumeWindow, RetryWait: st.retryWait, AnnounceWait: st.announceWait,
	})
}

func TestRetryPolicy(t *testing.T) {
	const (
		window = 10 * time.Second
		pause  = 500 * time.Millisecond
		wait   = 5 * time.Second
	)
	unroutable := fmt.Errorf("%w: SUBSCRIBE: %w", ErrRefused, &ResetError{Code: CodeUnroutable})
	notFound := fmt.Errorf("%w: SUBSCRIBE: %w", ErrRefused, &ResetError{Code: CodeNotFound})
	noInfo := fmt.Errorf("%w: TRACK: no TRACK_INFO within 10s", ErrTimeout)
	noFIN := fmt.Errorf("%w: TRACK: FIN without TRACK_INFO", ErrRefused)
	lost := errors.New("connection lost")
	for _, tc := range []struct {
		name   string
		err    error
		st     retryState
		action session.RetryAction
		wait   time.Duration
	}{
		{"publisher ended the track", nil, retryState{live: true}, session.RetryEnd, 0},
		{"broadcast closed by its owner", lost, retryState{broadcastDone: true, connGone: true}, session.RetryEnd, 0},
		{"broadcast closed beats a refusal", notFound, retryState{live: true, broadcastDone: true}, session.RetryEnd, 0},
		{"broadcast restarted", fmt.Errorf("attempt: %w", session.ErrRestart), retryState{live: true, connGone: true}, session.RetryNow, 0},
		{"connection lost", lost, retryState{live: true, connGone: true}, session.RetryNextConn, 0},
		{"connection lost before live", lost, retryState{connGone: true}, session.RetryNextConn, 0},
		{"not routable yet", unroutable, retryState{}, session.RetryOnAnnounce, wait},
		{"not routable after being live", unroutable, retryState{live: true, refusedFor: time.Second}, session.RetryNow, pause},
		{"refused while resuming", notFound, retryState{live: true}, session.RetryNow, pause},
		{"refused at the end of the window", noFIN, retryState{live: true, refusedFor: window}, session.RetryNow, pause},
		{"unanswered at the end of the window", noInfo, retryState{live: true, refusedFor: window}, session.RetryNow, pause},
		{"unanswered past the window", noInfo, retryState{live: true, refusedFor: window + time.Millisecond}, session.RetryEnd, 0},
		{"unanswered on a connection lost meanwhile", noInfo, retryState{connGone: true}, session.RetryNextConn, 0},
		{"unanswered on a connection lost meanwhile, resuming", noInfo, retryState{live: true, connGone: true}, session.RetryNextConn, 0},
		{"refused past the window", notFound, retryState{live: true, refusedFor: window + time.Millisecond}, session.RetryEnd, 0},
		{"refused at the first subscription", notFound, retryState{}, session.RetryEnd, 0},
		{"no TRACK_INFO at the first subscription", noInfo, retryState{}, session.RetryEnd, 0},
		{"FIN without TRACK_INFO at the first subscription", noFIN, retryState{}, session.RetryEnd, 0},
		{"protocol error", fmt.Errorf("subscribe stream: %w", ErrProtocol), retryState{live: true}, session.RetryEnd, 0},
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

// TestRetryPolicyDecidesOnMeaningInBothNumberings: the same refusal
// decides the same way whether the relay numbered it the old way (a
// lite-05 session of a pre-0.3 relay) or the lite-06 way (a lite-06
// session, or a lite-05 session of a newer relay: 0x30 and above).
func TestRetryPolicyDecidesOnMeaningInBothNumberings(t *testing.T) {
	const (
		window = 10 * time.Second
		pause  = 500 * time.Millisecond
		wait   = 5 * time.Second
	)
	type codes struct{ old, new uint64 }
	for _, tc := range []struct {
		name   string
		code   codes
		st     retryState
		action session.RetryAction
		wait   time.Duration
	}{
		{"not found at the first subscription", codes{13, 0x33}, retryState{}, session.RetryEnd, 0},
		{"not found while resuming", codes{13, 0x33}, retryState{live: true}, session.RetryNow, pause},
		{"unroutable at the first subscription", codes{30, 0x36}, retryState{}, session.RetryOnAnnounce, wait},
		{"unroutable while resuming", codes{30, 0x36}, retryState{live: true}, session.RetryNow, pause},
		{"old group", codes{2, 0x34}, retryState{live: true}, session.RetryNow, 0},
		{"evicted group", codes{31, 0x35}, retryState{}, session.RetryNow, 0},
		{"evicted again", codes{31, 0x35}, retryState{refusedFor: time.Second}, session.RetryNow, pause},
		{"evicted past the window", codes{31, 0x35}, retryState{live: true, refusedFor: window + 1}, session.RetryEnd, 0},
		{"too far behind", codes{26, 0x5}, retryState{live: true}, session.RetryNow, 0},
		{"unauthorized while live", codes{6, 6}, retryState{live: true}, session.RetryEnd, 0},
		{"session closing", codes{25, 0x3}, retryState{live: true}, session.RetryNextConn, 0},
	} {
		for _, renumbered := range []bool{false, true} {
			code := tc.code.old
			if renumbered {
				code = tc.code.new
			}
			if tc.name == "unauthorized while live" && renumbered {
				// lite-06 has no stream code for it (0x3b is lite-07):
				// an unregistered code is never read as unauthorized.
				continue
			}
			t.Run(fmt.Sprintf("%s/code %#x renumbered %v", tc.name, code, renumbered), func(t *testing.T) {
				st := tc.st
				st.resumeWindow, st.retryWait, st.announceWait, st.renumbered = window, pause, wait, renumbered
				err := fmt.Errorf("%w: SUBSCRIBE: %w", ErrRefused, &ResetError{Code: code})
				action, d := retryPolicy(err, st)
				if action != tc.action || d != tc.wait {
					t.Fatalf("retryPolicy = %v after %v, want %v after %v", action, d, tc.action, tc.wait)
				}
			})
		}
	}
	// No capacity: one re-resolution after a pause, then the usual rules.
	noCap := fmt.Errorf("%w: %w", ErrRefused, &ResetError{Code: 0x30})
	if a, d := retryPolicy(noCap, retryState{retryWait: pause, resumeWindow: window}); a != session.RetryNow || d != pause {
		t.Errorf("no capacity: %v after %v", a, d)
	}
	if a, _ := retryPolicy(noCap, retryState{retryWait: pause, resumeWindow: window, refusedFor: time.Second}); a != session.RetryEnd {
		t.Errorf("no capacity again at the first subscription: %v", a)
	}
	// moq-transport codes are not read as moq-lite's.
	if a, _ := retryPolicy(fmt.Errorf("%w: %w", ErrRefused, &ResetError{Code: 30}), retryState{ietf: true, announceWait: wait}); a != session.RetryEnd {
		t.Errorf("moq-transport reset 30 at the first subscription: %v, want end", a)
	}
}
