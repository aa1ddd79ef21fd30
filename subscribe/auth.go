package subscribe

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/token"
)

// Admission of accepted sessions (Server): the token check of
// ServerOptions.AuthKey, the MaxSessions limit, and what the admitted
// session may then do. Every accept path (raw QUIC lite, legacy SETUP,
// IETF, WebTransport) ends in admit before the session is delivered.

// Close codes of refused sessions: 6 is the moq-lite "unauthorized" code
// the reference relay closes with for a missing, bad, expired or
// insufficient token; CodeTooMany is the reference's application range
// (64 + an HTTP status) with 429 Too Many Requests.
const (
	CodeUnauthorized = 6
	CodeTooMany      = 64 + 429
)

// ErrUnauthorized wraps why a session or a broadcast was refused for its
// token (the token itself is never in the message).
var ErrUnauthorized = errors.New("moq: unauthorized")

// The reasons ServerOptions.OnRefused is given.
const (
	RefusedVersion      = "version"
	RefusedUnauthorized = "unauthorized"
	RefusedTooMany      = "too_many_sessions"
)

// refused tells ServerOptions.OnRefused that a session was refused.
func (s *Server) refused(reason string) {
	if s.opts.OnRefused != nil {
		s.opts.OnRefused(reason)
	}
}

// ErrTooManySessions means ServerOptions.MaxSessions sessions were open.
var ErrTooManySessions = errors.New("moq: too many sessions")

// sessionAuth is what an admitted session's token grants.
type sessionAuth struct {
	perms   token.Permissions
	expires time.Time

	mu      sync.Mutex
	refused map[string]bool // broadcast paths refused and logged
}

// acceptInfo describes an accepted connection for admission and logs.
type acceptInfo struct {
	remote    string
	transport string // "quic" or "webtransport"
	query     string // the URL or SETUP Path query: where ?jwt= is
	version   string
	noToken   string // why this connection cannot carry a token ("" when it can)
}

// splitPathQuery splits a SETUP Path ("/room?jwt=...") at its first "?".
func splitPathQuery(p string) (path, query string) {
	path, query, _ = strings.Cut(p, "?")
	return path, query
}

// admit decides whether sess (started on its connection, not delivered
// yet) may go on: with an AuthKey its token must verify and grant
// something at the session path (and what its SETUP Role declares), and
// MaxSessions must not be reached. A refused session is closed with the
// reference's code and logged with who and why; admit returns false.
func (s *Server) admit(sess *Session, c session.Proto, info acceptInfo) bool {
	sess.mu.Lock()
	sess.remote = info.remote
	sess.mu.Unlock()
	log := s.log.With("remote", info.remote, "transport", info.transport, "path", sess.Path(), "version", info.version)
	if s.opts.AuthKey != nil {
		a, err := s.authorize(sess, info)
		if err != nil {
			log.Warn("moq: refused a session", "reason", err)
			s.refused(RefusedUnauthorized)
			sess.abort(c, c.Codes().Unauthorized, "unauthorized", err)
			return false
		}
		sess.mu.Lock()
		sess.auth = a
		sess.mu.Unlock()
		log.Info("moq: session authorized", "publish", strings.Join(quoteAll(a.perms.Publish), ","),
			"subscribe", strings.Join(quoteAll(a.perms.Subscribe), ","), "publish_patterns", strings.Join(quoteAll(a.perms.PublishPatterns), ","),
			"subscribe_patterns", strings.Join(quoteAll(a.perms.SubscribePatterns), ","), "expires", expiryText(a.expires))
		if !a.expires.IsZero() {
			s.expireAt(sess, c, a.expires, log)
		}
	}
	if !s.count(sess) {
		err := fmt.Errorf("%w: %d open, the most allowed", ErrTooManySessions, s.opts.MaxSessions)
		log.Warn("moq: refused a session", "reason", err)
		s.refused(RefusedTooMany)
		sess.abort(c, CodeTooMany, "too many sessions", err)
		return false
	}
	if sess.authRequired {
		s.publishOn(sess)
	}
	return true
}

// publishOn publishes ServerOptions.Publish on sess, what its token lets
// the peer subscribe to.
func (s *Server) publishOn(sess *Session) {
	for _, b := range s.opts.Publish {
		if !sess.mayServe(b.Name()) {
			continue
		}
		if err := sess.Publish(b); err != nil {
			s.log.Warn("moq: publish on accepted session", "broadcast", b.Name(), "err", err)
		}
	}
}

func quoteAll(ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = fmt.Sprintf("%q", p)
	}
	return out
}

func expiryText(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}

// authorize checks the session's token; the error says why not.
func (s *Server) authorize(sess *Session, info acceptInfo) (*sessionAuth, error) {
	tok := token.FromQuery(info.query)
	if tok == "" && info.noToken != "" {
		return nil, fmt.Errorf("%w: %w (%s)", ErrUnauthorized, token.ErrMissing, info.noToken)
	}
	now := time.Now()
	if s.opts.verifyAt != nil {
		now = s.opts.verifyAt()
	}
	claims, err := s.opts.AuthKey.Verify(tok, now)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	perms, err := claims.Authorize(sess.Path())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	sess.mu.Lock()
	role, roleSet := sess.peer.Role, sess.peer.HasRole
	sess.mu.Unlock()
	if roleSet {
		switch {
		case role == wire.RolePublisher && !perms.Publishes():
			return nil, fmt.Errorf("%w: the client declared the publisher role, the token grants no publishing here", ErrUnauthorized)
		case role == wire.RoleSubscriber && !perms.Subscribes():
			return nil, fmt.Errorf("%w: the client declared the subscriber role, the token grants no subscribing here", ErrUnauthorized)
		}
	}
	return &sessionAuth{perms: perms, expires: claims.ExpiresAt(), refused: map[string]bool{}}, nil
}

// expireAt closes sess with code 6 when its token expires, as the
// reference relay does.
func (s *Server) expireAt(sess *Session, c session.Proto, at time.Time, log interface{ Info(string, ...any) }) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTimer(time.Until(at))
		defer t.Stop()
		select {
		case <-t.C:
			log.Info("moq: token expired, closing the session")
			sess.abort(c, c.Codes().Unauthorized, "token expired", fmt.Errorf("%w: %w", ErrUnauthorized, token.ErrExpired))
		case <-sess.done:
		case <-s.ctx.Done():
		}
	}()
}

// count admits sess under MaxSessions; newSession's watcher uncounts it
// when it ends.
func (s *Server) count(sess *Session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sessions[sess]; !ok {
		return true // already ended (or the server closed)
	}
	if s.opts.MaxSessions > 0 && s.admitted >= s.opts.MaxSessions {
		return false
	}
	s.admitted++
	s.sessions[sess] = true
	return true
}

// mayPublish reports whether the peer may publish the broadcast at path
// (relative to the session root): always without an AuthKey. A refusal is
// logged once per path.
func (s *Session) mayPublish(path string) bool {
	s.mu.Lock()
	a, required := s.auth, s.authRequired
	s.mu.Unlock()
	if !required {
		return true
	}
	if a != nil && a.perms.CanPublish(path) {
		return true
	}
	if a != nil {
		a.mu.Lock()
		logged := a.refused[path]
		a.refused[path] = true
		a.mu.Unlock()
		if logged {
			return false
		}
	}
	s.log.Warn("moq: refused a broadcast: the token does not allow publishing it", "broadcast", path, "session", s.Path())
	return false
}

// mayServe reports whether the peer may subscribe to our broadcast at
// path: always without an AuthKey.
func (s *Session) mayServe(path string) bool {
	s.mu.Lock()
	a, required := s.auth, s.authRequired
	s.mu.Unlock()
	return !required || a != nil && a.perms.CanSubscribe(path)
}

// abort ends the session and its connection c with a close code the peer
// sees (a refused token: its family's Codes().Unauthorized), and err as Err.
func (s *Session) abort(c session.Proto, code uint64, reason string, err error) {
	s.links.End(err)
	c.Close(code, reason)
	s.cancel()
	s.finish(err)
}

// Remote returns the peer's address of an accepted session ("" for a
// dialled one).
func (s *Session) Remote() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.remote
}
