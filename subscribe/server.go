package subscribe

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/moq-export/moq-export/internal/moq/transport/alpn"

	"github.com/moq-export/moq-export/internal/moq/ietf/ietfpub"
	"github.com/moq-export/moq-export/internal/moq/transport"
)

// Server accepts MoQ sessions (moq-lite and moq-transport) on one UDP
// port: raw QUIC (the ALPN of each version it speaks, and "moql" for the
// legacy SETUP) and WebTransport (ALPN h3) side by side.
type Server struct {
	opts     ServerOptions
	versions []alpn.Version
	log      *slog.Logger
	ln       *transport.Listener[moqErrors]
	accepted chan *Session
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu       sync.Mutex
	sessions map[*Session]bool // true once counted in admitted
	admitted int               // sessions admitted and not ended (MaxSessions)
	closed   bool

	sessionsClosed func() // tests: runs in Close between the sessions' close and the listener's
}

// Listen starts accepting sessions on addr (host:port, UDP).
func Listen(addr string, opts ServerOptions) (*Server, error) {
	if len(opts.Certificates) == 0 {
		return nil, errors.New("moq: Listen needs a certificate")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Strict && opts.strict == nil {
		opts.strict = &ietfpub.StrictPeer{}
	}
	if opts.strict != nil {
		opts.strict.PerFrame = opts.GroupPerFrame
	}
	versions, err := versionList(opts.Versions)
	if err != nil {
		return nil, err
	}
	protos := alpn.Tokens(versions)
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		opts: opts, versions: versions, log: opts.Logger, accepted: make(chan *Session),
		ctx: ctx, cancel: cancel, sessions: map[*Session]bool{},
	}
	keepAlive, idle := liveness(opts.KeepAlive, opts.IdleTimeout)
	// WebTransport negotiates among the same protocols; the client's
	// first one we speak wins, moq-lite or moq-transport.
	s.ln, err = transport.Listen[moqErrors](addr, transport.ListenConfig{
		Certificates: opts.Certificates, Protocols: protos, WebTransport: !opts.DisableWebTransport,
		FingerprintHTTP: opts.FingerprintHTTP, KeepAlive: keepAlive, IdleTimeout: idle,
	}, s.accept)
	if err != nil {
		cancel()
		return nil, err
	}
	return s, nil
}

// Addr returns the UDP address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Fingerprint returns the pin of the server's first certificate.
func (s *Server) Fingerprint() string { return transport.Fingerprint(s.opts.Certificates[0]) }

// accept takes a connection the listener accepted to the family its
// token selects (proto.go), which negotiates, admits its session and
// delivers it: a moq-transport token to moq-transport's SETUP; anything
// else ("moql", a moq-lite token, none over WebTransport) to moq-lite's
// negotiation.
func (s *Server) accept(a transport.Accepted) {
	c := s.netConn(a.Conn)
	if ch, ok := alpn.Pinned(a.Conn.Protocol()); ok && ch.Family == alpn.IETF {
		s.acceptIETF(c, ch, a)
		return
	}
	s.acceptLite(c, a)
}

// netConn is c, accepted with the server's keep-alive and idle timeout.
func (s *Server) netConn(c transport.Conn) *netConn {
	return newNetConn(c, s.opts.KeepAlive, s.opts.IdleTimeout)
}

// awaitSetup waits at most d for the client's SETUP on sess.
func awaitSetup(sess *Session, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-sess.helloed:
	case <-t.C:
	case <-sess.done:
	}
}

// refusalReason is the close reason of a refused session: the versions we
// speak, short enough for a CONNECTION_CLOSE frame.
func refusalReason(err error) string {
	r := err.Error()
	if len(r) > 200 {
		r = r[:200]
	}
	return r
}

func (s *Server) newSession(path string) *Session {
	sess := newSession(Options{Logger: s.log, RequestTimeout: s.opts.RequestTimeout, MaxLatency: s.opts.MaxLatency, Versions: s.opts.Versions,
		ReleaseRead: s.opts.ReleaseRead, Objects: s.opts.Objects, strict: s.opts.strict, noFetch: s.opts.noFetch || s.opts.NoFetch}, path)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		sess.cancel()
		return sess
	}
	s.sessions[sess] = false
	s.mu.Unlock()
	sess.authRequired = s.opts.AuthKey != nil
	if !sess.authRequired {
		// From the session's first moment, before it serves any stream
		// (with an AuthKey, admit publishes what the token allows).
		s.publishOn(sess)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-sess.done:
		case <-s.ctx.Done():
		}
		s.mu.Lock()
		if s.sessions[sess] {
			s.admitted--
		}
		delete(s.sessions, sess)
		s.mu.Unlock()
	}()
	return sess
}

// deliver hands sess to Accept, or closes it when the server closes first.
func (s *Server) deliver(sess *Session) {
	select {
	case s.accepted <- sess:
	case <-s.ctx.Done():
		sess.Close()
	}
}

// Accept returns the next session.
func (s *Server) Accept(ctx context.Context) (*Session, error) {
	select {
	case sess := <-s.accepted:
		return sess, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-s.ctx.Done():
		return nil, ErrClosed
	}
}

// GoAway sends GOAWAY to every session the server holds, naming uri (the
// server to move to; "" for this one again, as a relay that restarts
// says): the peers dial there and move their subscriptions and
// publications while these sessions still serve, and close them or are
// closed by Close. A session whose version has no GOAWAY (moq-lite before
// 04) is skipped. It returns how many sessions were asked.
func (s *Server) GoAway(uri string) int {
	s.mu.Lock()
	sessions := make([]*Session, 0, len(s.sessions))
	for sess := range s.sessions {
		sessions = append(sessions, sess)
	}
	s.mu.Unlock()
	n := 0
	for _, sess := range sessions {
		if err := sess.GoAway(uri); err != nil {
			s.log.Debug("moq: GOAWAY not sent", "path", sess.Path(), "err", err)
			continue
		}
		n++
	}
	return n
}

// Close stops listening, closes every accepted session and waits for the
// server's goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	sessions := make([]*Session, 0, len(s.sessions))
	for sess := range s.sessions {
		sessions = append(sessions, sess)
	}
	s.mu.Unlock()
	s.cancel()
	// No new connection first: closing the sessions can take a while (a
	// session waits for its goroutines), and a client that reconnects
	// meanwhile would get a session closed right after its SETUP, one
	// failed attempt or reconnect more per dial.
	err := s.ln.StopAccepting()
	for _, sess := range sessions {
		sess.Close()
	}
	if s.sessionsClosed != nil {
		s.sessionsClosed()
	}
	if cerr := s.ln.Close(); err == nil {
		err = cerr
	}
	s.wg.Wait()
	return err
}
