package session

import "time"

// RetryAction is what a track does after one subscription attempt ended.
type RetryAction int

const (
	// RetryEnd closes the track: with no error when the publisher ended it
	// or the broadcast was closed by its owner, with the attempt's error
	// otherwise.
	RetryEnd RetryAction = iota
	// RetryNextConn subscribes again once the session has a new
	// connection.
	RetryNextConn
	// RetryNow subscribes again after the wait, on the current connection.
	RetryNow
	// RetryOnAnnounce waits for the broadcast's next announcement (at most
	// the wait), then subscribes again.
	RetryOnAnnounce
)

func (a RetryAction) String() string {
	return [...]string{"end", "next connection", "again", "on announcement"}[a]
}

// Attempt is how one subscription attempt ended, in the family's
// meanings: the family reads its own errors and codes into it.
type Attempt struct {
	// Clean: the publisher ended the track (no error).
	Clean bool
	// Restart: the publisher came back (a new broadcast under the path).
	Restart bool
	// Refused: the peer refused the request (a reset of it, an error
	// reply, a FIN without an answer).
	Refused bool
	// TimedOut: the peer did not answer the request within the request
	// timeout, on a connection that stayed up (one that was lost with
	// the request is TrackState.ConnGone).
	TimedOut bool
	// Reset is what the peer's reset code said (ResetUnknown when it sent
	// none, or its family's codes carry no meaning the policy reads).
	Reset Reset
}

// TrackState is what the retry policy knows of a track besides how the
// attempt ended.
type TrackState struct {
	Live          bool          // the track was delivering once: it resumes
	BroadcastDone bool          // the broadcast was closed or ended
	ConnGone      bool          // the attempt's connection is gone
	RefusedFor    time.Duration // how long the current run of refusals (and timeouts) lasts (0: this is its first)
	// From the session's options.
	ResumeWindow time.Duration // how long a live track retries refusals
	RetryWait    time.Duration // pause between refused resubscriptions
	AnnounceWait time.Duration // longest wait for an announcement
}

// Retry decides, from how one subscription attempt ended and the track's
// state, what the track does next and how long it waits first. It is
// pure: the track's run loop keeps the state and does the waiting. Both
// families share it; neither decides on a code of its own.
func Retry(a Attempt, st TrackState) (RetryAction, time.Duration) {
	switch {
	case a.Clean, st.BroadcastDone:
		return RetryEnd, 0
	case a.Restart:
		return RetryNow, 0 // the publisher came back: the same connection is fine
	case st.ConnGone:
		return RetryNextConn, 0
	}
	switch a.Reset {
	case ResetUnauthorized:
		return RetryEnd, 0 // another attempt carries the same token
	case ResetGoingAway, ResetSessionClosed:
		// The peer is draining or closing: the next connection.
		return RetryNextConn, 0
	case ResetOld, ResetEvicted, ResetTooFarBehind:
		// What was asked is gone from the relay: subscribe again at
		// once, from what it holds (a resume marks the gap); again
		// after a pause while the run of refusals lasts.
		switch {
		case st.RefusedFor == 0:
			return RetryNow, 0
		case st.RefusedFor <= st.ResumeWindow:
			return RetryNow, st.RetryWait
		}
		return RetryEnd, 0
	case ResetNoCapacity:
		// The one re-resolution a full route allows, after a pause.
		if st.RefusedFor == 0 {
			return RetryNow, st.RetryWait
		}
	case ResetUnroutable:
		if a.Refused && !st.Live {
			// The relay has not heard of the broadcast yet: wait for
			// its announcement (or retry now and then) instead of
			// giving up.
			return RetryOnAnnounce, st.AnnounceWait
		}
	}
	switch {
	case (a.Refused || a.TimedOut) && st.Live && st.RefusedFor <= st.ResumeWindow:
		// The publisher may not be back on the relay yet.
		return RetryNow, st.RetryWait
	}
	return RetryEnd, 0
}

// Reset is what a stream reset (or a refusal) means, whichever family's
// code said it. A family maps its registry to these; the retry policy
// decides on the meaning, never on a number.
type Reset uint8

const (
	ResetUnknown       Reset = iota
	ResetCancelled           // a routine unsubscribe or stop
	ResetInternal            // the peer failed
	ResetTimeout             // delivery or request timeout
	ResetSessionClosed       // the session is ending
	ResetGoingAway           // the peer is draining (GOAWAY)
	ResetTooFarBehind        // the subscriber lagged
	ResetNotFound            // no such track
	ResetOld                 // the group asked for is too old
	ResetEvicted             // the group was dropped from the cache
	ResetUnroutable          // no route to the broadcast (yet)
	ResetNoCapacity          // the route is full: one re-resolution allowed
	ResetUnauthorized        // the token does not allow it
	ResetMalformed           // bad bytes: decode error, wrong size, too large, timestamps
)

var resetNames = [...]string{"unknown", "cancelled", "internal error", "timeout", "session closed",
	"going away", "too far behind", "not found", "old", "evicted", "unroutable", "no capacity",
	"unauthorized", "malformed"}

func (m Reset) String() string { return resetNames[m] }
