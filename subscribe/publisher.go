package subscribe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/moq-export/moq-export/internal/moq/ietf/ietfpub"
	"github.com/moq-export/moq-export/internal/moq/lite/litepub"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/model"
)

// publishTimescale is the timescale of published tracks (model timestamps
// are microseconds), except cmaf ones (see package hang).
const publishTimescale = 1_000_000

// publisher is the publishing role of a session: the broadcasts it
// serves (session.Publications), the subscriptions and FETCHes it answers
// (package litepub for moq-lite, package ietfpub for moq-transport, each
// reading its requests and writing its replies and objects in its wire
// around the core's session.Serve and session.ServeGroup) and the
// announce streams that follow what it publishes.
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
	// lite serves the publications on moq-lite connections, ietf on
	// moq-transport ones.
	lite *litepub.Publisher
	ietf *ietfpub.Publisher
}

// newPublisher is the publishing role of s.
func newPublisher(s *Session) *publisher {
	p := &publisher{
		ctx: s.ctx, log: s.log, opts: &s.opts, hopID: s.hopID, wg: &s.wg,
		root: s.Path, sessionErr: s.Err,
		pubs: session.NewPublications(),
	}
	p.lite = &litepub.Publisher{Pubs: p.pubs, Ctx: s.ctx, Log: s.log, HopID: s.hopID,
		AnnounceTimeout: s.opts.announceTimeout, Stopped: isResetErr, NoFetch: s.opts.noFetch}
	p.ietf = &ietfpub.Publisher{Pubs: p.pubs, Log: s.log, Go: s.wg.Go, Root: s.Path, NoFetch: s.opts.noFetch}
	if s.opts.strict != nil {
		p.ietf.Strict = s.opts.strict
	}
	return p
}

// setLogger makes log the publisher's logger.
func (s *publisher) setLogger(log *slog.Logger) { s.log, s.lite.Log, s.ietf.Log = log, log, log }

// isResetErr reports whether err is the peer's reset of a stream.
func isResetErr(err error) bool {
	_, ok := errors.AsType[*ResetError](err)
	return ok
}

// Publish serves b to the peer under b.Name() (relative to the session
// root) until b ends or Unpublish. The broadcast is announced on every
// announce stream the peer has open or opens later. Tracks named like a
// catalog are sent as they are; every other track in the container its
// rendition declares in b's catalog.json: "cmaf" tracks hold moof+mdat
// frames already, sent as they are at the init's mdhd timescale (as
// `moq import fmp4` publishes them), "loc" tracks get the loc container,
// the others the legacy one.
func (s *Session) Publish(b *model.Broadcast) error { return s.pub.publish(b) }

func (s *publisher) publish(b *model.Broadcast) error {
	path := normPath(b.Name())
	if err := s.sessionErr(); err != nil {
		return err
	}
	if !s.pubs.Add(path, b) {
		return fmt.Errorf("%w: %q", ErrAlreadyPublished, path)
	}
	s.log.Debug("moq: publishing", "broadcast", path)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-b.Done():
			s.unpublish(path, b)
		case <-s.ctx.Done():
		}
	}()
	return nil
}

// Unpublish stops serving the broadcast at path and announces its end.
// Subscriptions already running continue until their tracks end.
func (s *Session) Unpublish(path string) { s.pub.unpublish(normPath(path), nil) }

func (s *publisher) unpublish(path string, only *model.Broadcast) { s.pubs.Remove(path, only) }

// servingTrack returns how many subscriptions to track of broadcast this
// session serves now, counting those whose start group is fixed.
func (s *publisher) servingTrack(broadcast, track string) int {
	return s.pubs.Serving(broadcast, track)
}
