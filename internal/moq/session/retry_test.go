package session

import (
	"testing"
	"time"
)

func TestRetryDecidesOnHowTheAttemptEndedAndTheTracksState(t *testing.T) {
	const (
		window = 10 * time.Second
		pause  = 500 * time.Millisecond
		wait   = 5 * time.Second
	)
	refused := func(r Reset) Attempt { return Attempt{Refused: true, Reset: r} }
	for _, tc := range []struct {
		name   string
		a      Attempt
		st     TrackState
		action RetryAction
		wait   time.Duration
	}{
		{"the publisher ended the track", Attempt{Clean: true}, TrackState{Live: true}, RetryEnd, 0},
		{"the owner closed the broadcast", Attempt{}, TrackState{BroadcastDone: true, ConnGone: true}, RetryEnd, 0},
		{"a closed broadcast beats a refusal", refused(ResetNotFound), TrackState{Live: true, BroadcastDone: true}, RetryEnd, 0},
		{"the publisher restarted", Attempt{Restart: true}, TrackState{Live: true, ConnGone: true}, RetryNow, 0},
		{"the connection was lost", Attempt{}, TrackState{Live: true, ConnGone: true}, RetryNextConn, 0},
		{"unroutable before live waits for the announcement", refused(ResetUnroutable), TrackState{}, RetryOnAnnounce, wait},
		{"unroutable while live retries after a pause", refused(ResetUnroutable), TrackState{Live: true, RefusedFor: time.Second}, RetryNow, pause},
		{"refused while resuming", refused(ResetNotFound), TrackState{Live: true}, RetryNow, pause},
		{"refused at the end of the window", refused(ResetUnknown), TrackState{Live: true, RefusedFor: window}, RetryNow, pause},
		{"refused past the window", refused(ResetNotFound), TrackState{Live: true, RefusedFor: window + 1}, RetryEnd, 0},
		{"refused at the first subscription", refused(ResetNotFound), TrackState{}, RetryEnd, 0},
		{"an old group retries at once", refused(ResetOld), TrackState{Live: true}, RetryNow, 0},
		{"an evicted group again after a pause", refused(ResetEvicted), TrackState{RefusedFor: time.Second}, RetryNow, pause},
		{"evicted past the window", refused(ResetEvicted), TrackState{Live: true, RefusedFor: window + 1}, RetryEnd, 0},
		{"too far behind retries at once", Attempt{Reset: ResetTooFarBehind}, TrackState{Live: true}, RetryNow, 0},
		{"no capacity: one re-resolution after a pause", refused(ResetNoCapacity), TrackState{}, RetryNow, pause},
		{"unauthorized ends even while live", refused(ResetUnauthorized), TrackState{Live: true}, RetryEnd, 0},
		{"a closing peer: the next connection", Attempt{Reset: ResetSessionClosed}, TrackState{Live: true}, RetryNextConn, 0},
		{"a draining peer: the next connection", Attempt{Reset: ResetGoingAway}, TrackState{Live: true}, RetryNextConn, 0},
		{"a failure that is no refusal ends", Attempt{}, TrackState{Live: true}, RetryEnd, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.st.ResumeWindow, tc.st.RetryWait, tc.st.AnnounceWait = window, pause, wait
			action, d := Retry(tc.a, tc.st)
			if action != tc.action || d != tc.wait {
				t.Fatalf("Retry = %v after %v, want %v after %v", action, d, tc.action, tc.wait)
			}
		})
	}
}

func TestEveryResetMeaningHasAName(t *testing.T) {
	for r := ResetUnknown; r <= ResetMalformed; r++ {
		if r.String() == "" {
			t.Errorf("reset %d has no name", r)
		}
	}
}
