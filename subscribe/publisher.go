package subscribe

import (
	"context"
	"log/slog"
	"sync"

	"github.com/moq-export/moq-export/internal/moq/session"
)

// publisher is the publishing role of a session: the broadcasts it
// serves (session.Publications), the subscriptions and FETCHes it answers
// (publish.go for moq-lite, ietf_publish.go for moq-transport, each
// reading its requests and writing its replies and objects in its wire
// around the core's session.Serve and session.ServeGroup) and the
// announce streams that follow what it publishes (publish_announce.go).
// It knows its session only through what newPublisher hands it, never the
// Session's fields: the subscriber's state and the publisher's do not
// share a lock.
type publisher struct {
	// ctx is the session's: done when the session ends.
	ctx context.Context
	log *slog.Logger
	// opts are the session's (read only).
	opts *Options
	// hopID is the session's id in announcement hop lists.
	hopID uint64
	// wg is the session's: Close waits for the serving goroutines.
	wg *sync.WaitGroup
	// root returns the session root (Session.Path), sessionErr why the
	// session ended (nil while it lives).
	root       func() string
	sessionErr func() error

	// pubs are the broadcasts published, and the subscriptions served
	// (a subscription counts once its start group is fixed: tests wait
	// for it before they publish).
	pubs *session.Publications
}

// newPublisher is the publishing role of s.
func newPublisher(s *Session) *publisher {
	return &publisher{
		ctx: s.ctx, log: s.log, opts: &s.opts, hopID: s.hopID, wg: &s.wg,
		root: s.Path, sessionErr: s.Err,
		pubs: session.NewPublications(),
	}
}

// servingTrack returns how many subscriptions to track of broadcast this
// session serves now, counting those whose start group is fixed.
func (s *publisher) servingTrack(broadcast, track string) int {
	return s.pubs.Serving(broadcast, track)
}
