// Package litepub is our moq-lite publisher's wire: it reads the TRACK,
// SUBSCRIBE, FETCH and ANNOUNCE_PLEASE requests a peer opens streams
// with, and writes the replies, group streams and announcements in
// moq-lite's layout for the session's version (lite-01..06). What both
// families' publishers share is the session core's (package
// internal/moq/session): which broadcasts are published, the track a
// request names and its packaging, the loop that sends a subscription's
// groups in order (session.Serve, through this package's Sink) and the one
// that serves a fetched group (session.ServeGroup).
//
// It imports neither moq-transport's packages nor the transport: it works
// on the core's stream interfaces, which the transport's streams have.
// Package subscribe, the public facade, routes a moq-lite connection's
// streams here.
package litepub

import (
	"context"
	"log/slog"
	"time"

	"github.com/moq-export/moq-export/internal/moq/session"
)

// Publisher serves one moq-lite session's publications. Its fields are
// set once, before it serves.
type Publisher struct {
	// Pubs are the session's publications (shared with the session's
	// moq-transport side, if any).
	Pubs *session.Publications
	// Ctx is the session's: done when the session ends (a subscription
	// then ends its open group as cut, not complete).
	Ctx context.Context
	Log *slog.Logger
	// HopID is the session's id in announcement hop lists.
	HopID uint64
	// AnnounceTimeout bounds one write on an announce stream; a peer that
	// does not read its stream within it gets the stream reset.
	AnnounceTimeout time.Duration
	// Stopped reports whether a write error says the subscriber stopped
	// the stream (STOP_SENDING), which skips the group, rather than that
	// the subscription failed.
	Stopped func(error) bool
	// NoFetch refuses every FETCH with a reset, as a publisher that
	// serves none does (the reference's test publisher): for testing
	// what a subscriber does without it.
	NoFetch bool
}
