package subscribe

import (
	"errors"
	"time"

	"github.com/moq-export/moq-export/internal/moq/session"
)

// retryState is what the retry policy knows of a track besides the error:
// the core's session.TrackState, and how the session reads reset codes.
type retryState struct {
	live          bool          // the track got TRACK_INFO once: it resumes
	broadcastDone bool          // the broadcast was closed or ended
	connGone      bool          // the attempt's connection is gone
	refusedFor    time.Duration // how long the current run of refusals lasts (0: this is its first)
	renumbered    bool          // the session reads stream codes in lite-06's numbering
	ietf          bool          // the session speaks moq-transport: its codes are not moq-lite's
	// From the session options.
	resumeWindow time.Duration // how long a live track retries refusals
	retryWait    time.Duration // pause between refused resubscriptions
	announceWait time.Duration // longest wait for an announcement
}

// retryPolicy reads the error of one subscription attempt (nil: the
// publisher ended the track cleanly) into the core's terms and lets the
// core's policy (session.Retry) decide what the track does next.
func retryPolicy(err error, st retryState) (session.RetryAction, time.Duration) {
	a := session.Attempt{Clean: err == nil, Restart: errors.Is(err, errRestart), Refused: errors.Is(err, ErrRefused)}
	if !st.ietf {
		// A moq-lite reset means what its code says, in either
		// numbering; moq-transport's codes carry nothing the policy reads.
		a.Reset = resetMeaningOf(err, st.renumbered)
	}
	return session.Retry(a, session.TrackState{
		Live: st.live, BroadcastDone: st.broadcastDone, ConnGone: st.connGone, RefusedFor: st.refusedFor,
		ResumeWindow: st.resumeWindow, RetryWait: st.retryWait, AnnounceWait: st.announceWait,
	})
}
