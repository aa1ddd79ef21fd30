package subscribe

import (
	"errors"
	"time"
)

// retryAction is what a track does after one subscription attempt ended.
type retryAction int

const (
	// retryEnd closes the track: with no error when the publisher ended it
	// or the broadcast was closed by its owner, with the attempt's error
	// otherwise.
	retryEnd retryAction = iota
	// retryNextConn subscribes again once the session has a new
	// connection.
	retryNextConn
	// retryNow subscribes again after the wait, on the current connection.
	retryNow
	// retryOnAnnounce waits for the broadcast's next announcement (at most
	// the wait), then subscribes again.
	retryOnAnnounce
)

func (a retryAction) String() string {
	return [...]string{"end", "next connection", "again", "on announcement"}[a]
}

// retryState is what the retry policy knows of a track besides the error.
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

// retryPolicy decides, from the error of one subscription attempt (nil:
// the publisher ended the track cleanly) and the track's state, what the
// track does next and how long it waits first. It is pure: the track's run
// loop keeps the state and does the waiting.
func retryPolicy(err error, st retryState) (retryAction, time.Duration) {
	switch {
	case err == nil, st.broadcastDone:
		return retryEnd, 0
	case errors.Is(err, errRestart):
		return retryNow, 0 // the publisher came back: the same connection is fine
	case st.connGone:
		return retryNextConn, 0
	}
	// A moq-lite reset decides by what its code means, in either
	// numbering.
	meaning := resetUnknown
	if !st.ietf {
		meaning = resetMeaningOf(err, st.renumbered)
	}
	switch meaning {
	case resetUnauthorized:
		return retryEnd, 0 // another attempt carries the same token
	case resetGoingAway, resetSessionClosed:
		// The peer is draining or closing: the next connection.
		return retryNextConn, 0
	case resetOld, resetEvicted, resetTooFarBehind:
		// What was asked is gone from the relay: subscribe again at
		// once, from what it holds (a resume marks the gap); again
		// after a pause while the run of refusals lasts.
		switch {
		case st.refusedFor == 0:
			return retryNow, 0
		case st.refusedFor <= st.resumeWindow:
			return retryNow, st.retryWait
		}
		return retryEnd, 0
	case resetNoCapacity:
		// The one re-resolution a full route allows, after a pause.
		if st.refusedFor == 0 {
			return retryNow, st.retryWait
		}
	case resetUnroutable:
		if errors.Is(err, ErrRefused) && !st.live {
			// The relay has not heard of the broadcast yet: wait for
			// its announcement (or retry now and then) instead of
			// giving up.
			return retryOnAnnounce, st.announceWait
		}
	}
	switch {
	case errors.Is(err, ErrRefused) && st.live && st.refusedFor <= st.resumeWindow:
		// The publisher may not be back on the relay yet.
		return retryNow, st.retryWait
	}
	return retryEnd, 0
}
