package subscribe

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/moq-export/moq-export/internal/moq/ietf/ietfsub"
	"github.com/moq-export/moq-export/internal/moq/lite/litesub"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/moq/transport"
)

// GOAWAY on moq-lite (lite-04+) and moq-transport, make before break.
//
// A relay that drains (a deploy, a restart) sends GOAWAY with the URI of
// the session to move to, or none for "reconnect to me" (the reference
// relay's drain), then closes the session at its deadline. A dialled
// session dials the new session first, while the old connection still
// delivers; once it is up the old connection is closed and the tracks
// resubscribe on the new one, where the resume machinery (session.Remote)
// completes the groups the switch cut and fetches the ones in between,
// so a drain loses no frame as long as the new session's relay holds
// them. A later reconnect keeps using the new URI.

// ErrNoGoaway means GoAway was asked of a session whose protocol version
// has no GOAWAY (moq-lite before 04).
var ErrNoGoaway = litesub.ErrNoGoaway

// moveAway handles the peer's GOAWAY on f, for both families. An accepted
// session cannot move: the peer goes away by itself. A dialled session
// moves to uri (resolved against the current URL; "" for the same URL):
// the core's links dial there first, while f still delivers (make before
// break), and close f once that dial is done and grace has passed; its
// tracks resubscribe on the new connection, where the resume machinery
// (session.Remote) completes the groups the switch cut.
func (s *Session) moveAway(f session.Proto, uri string, grace time.Duration) {
	if !s.dialled {
		s.log.Info("moq: peer sent GOAWAY")
		return
	}
	to := s.target.Load()
	if uri != "" {
		next, err := goAwayTarget(to, uri)
		if err != nil {
			s.log.Warn("moq: GOAWAY names a session URI we cannot dial; reconnecting to the same one", "err", err)
		} else {
			to = next
			s.target.Store(next)
		}
	}
	s.log.Info("moq: peer sent GOAWAY, moving the session (the new one is dialled before the old one is closed)", "to", to.Redacted())
	s.links.MoveAway(s.ctx, f, grace)
}

// GoAway asks the peer of the session's current connection to move: to uri
// (only an accepted session may name one; "" means the same server), with
// GOAWAY on moq-lite 04+ and moq-transport. The peer reconnects while this
// end keeps serving until it closes the session or the caller does; a
// Server drains all its sessions this way in Shutdown.
func (s *Session) GoAway(uri string) error {
	if s.dialled && uri != "" {
		return errors.New("moq: only a server names a URI in GOAWAY")
	}
	f, ok := s.links.Current()
	if !ok {
		return ErrClosed
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.RequestTimeout)
	defer cancel()
	return f.GoAway(ctx, uri)
}

// errGoingAway is what a request meets after GOAWAY: like a lost
// connection, it waits for the next one.
var errGoingAway = &CloseError{Code: ietfsub.CodeNoError, Reason: "peer sent GOAWAY", Remote: true}

// goAwayTarget resolves a GOAWAY's New Session URI against the current
// target. The current URL's jwt goes along only to the same host and
// port, and only when the new URI carries none: a token is never handed
// to another server.
func goAwayTarget(cur *transport.Target, uri string) (*transport.Target, error) {
	ref, err := url.Parse(uri)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedURL, transport.RedactError(err))
	}
	u := cur.URL.ResolveReference(ref)
	next, err := transport.ParseTarget(u.String())
	if err != nil {
		return nil, err
	}
	if next.HostPort == cur.HostPort && !next.URL.Query().Has("jwt") && cur.URL.Query().Has("jwt") {
		q := next.URL.Query()
		q.Set("jwt", cur.URL.Query().Get("jwt"))
		next.URL.RawQuery = q.Encode()
		if next, err = transport.ParseTarget(next.URL.String()); err != nil {
			return nil, err
		}
	}
	return next, nil
}
