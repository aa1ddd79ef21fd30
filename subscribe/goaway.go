package subscribe

import (
	"errors"
	"time"

	"github.com/moq-export/moq-export/internal/moq/lite/litesub"
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

// liteGoAway handles a valid moq-lite GOAWAY the peer sent on l (package
// litesub read it): a second one on the connection is a violation.
func (s *Session) liteGoAway(l liteFamily, uri string) error {
	s.mu.Lock()
	second := s.goawayFrom == l.c
	s.goawayFrom = l.c
	s.mu.Unlock()
	if second {
		return errors.New("second GOAWAY")
	}
	s.moveAway(l, uri, 0)
	return nil
}

// moveAway handles the peer's GOAWAY on f, for both families. An accepted
// session cannot move: the peer goes away by itself. A dialled session
// moves to uri (resolved against the current URL; "" for the same URL):
// the core's links dial there first, while f still delivers (make before
// break), and close f once that dial is done and grace has passed; its
// tracks resubscribe on the new connection, where the resume machinery
// (session.Remote) completes the groups the switch cut.
func (s *Session) moveAway(f family, uri string, grace time.Duration) {
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
	return f.goAway(s, uri)
}
