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
	"github.com/moq-export/moq-export/internal/moq/lite/litesub"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/moq/transport"
)

// Server accepts moq-lite sessions on one UDP port: raw QUIC (the ALPN of
// each version it speaks, and "moql" for the legacy SETUP) and
// WebTransport (ALPN h3) side by side.
type Server struct {
	opts     ServerOptions
	versions []*wire.Version
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
	protos := wire.ALPNs(versions)
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

// accept takes a connection the listener accepted to its session.
func (s *Server) accept(a transport.Accepted) {
	if a.Conn.WebTransport() {
		s.acceptWebTransport(a)
		return
	}
	s.acceptQUIC(a)
}

// acceptQUIC negotiates the version of a raw QUIC connection (its ALPN, or
// the legacy SETUP under "moql"), admits its session and delivers it.
func (s *Server) acceptQUIC(a transport.Accepted) {
	proto := a.Conn.Protocol()
	c := s.netConn(a.Conn)
	if ch, ok := alpn.Pinned(proto); ok && ch.Family == alpn.IETF {
		s.acceptIETF(c, ch, a)
		return
	}
	setupPath, err := s.negotiate(c, proto, s.versions)
	if err == nil && c.version.Family == wire.FamilyIETF {
		s.acceptIETF(c, c.replayAsIETF(), a)
		return
	}
	if err != nil {
		s.log.Info("moq: refused a session", "remote", a.Conn.RemoteAddr(), "transport", "quic", "err", err)
		a.Conn.Close(CodeVersion, refusalReason(err))
		return
	}
	// The legacy SETUP's Path carries the query (?jwt=) after the path.
	path, query := splitPathQuery(setupPath)
	sess := s.newSession(path)
	f := sess.newLite(c, nil)
	sess.start(f)
	info := acceptInfo{remote: a.Conn.RemoteAddr(), transport: "quic", query: query, version: c.version.Name}
	switch {
	case c.version.SetupStream:
		// The root (and token) travel in the client's SETUP: wait for it
		// so that Path is meaningful when Accept returns (briefly, unless
		// the token must be checked).
		wait := 2 * time.Second
		if s.opts.AuthKey != nil {
			wait = litesub.SetupTimeout
		}
		awaitSetup(sess, wait)
		sess.mu.Lock()
		_, info.query = splitPathQuery(sess.peer.Path)
		sess.mu.Unlock()
		info.noToken = "a raw QUIC client puts ?jwt= in its SETUP Path"
	case !c.version.LegacySetup:
		info.noToken = c.version.Name + " over raw QUIC has no SETUP to carry a token: use moq-lite-05 or WebTransport"
	}
	if !s.admit(sess, f, info) {
		return
	}
	s.deliver(sess)
}

// replayAsIETF is the choice of c, whose legacy SETUP chose moq-transport
// (draft 14): the IETF session reads the same CLIENT_SETUP again
// (replayed) and answers it.
func (c *netConn) replayAsIETF() alpn.Choice {
	c.replay, c.session = c.session, nil
	return alpn.Choice{Family: alpn.IETF, Code: c.version.Code, Token: alpn.Legacy}
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

// negotiate sets c's version from the negotiated protocol, running the
// legacy SETUP where it says so; it returns the SETUP path a legacy raw
// QUIC client sent.
func (s *Server) negotiate(c *netConn, proto string, versions []*wire.Version) (string, error) {
	v, legacy, err := litesub.SelectALPN(proto, versions)
	var session session.Stream
	var path string
	if err == nil && legacy {
		v, session, path, err = litesub.ServerSetup(s.ctx, coreConn{c: c}, versions)
	}
	if err != nil {
		return "", err
	}
	c.version, c.session = v, session
	return path, nil
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

// acceptWebTransport negotiates the version of a WebTransport session
// (its protocol, or the legacy SETUP when it negotiated none), admits its
// session and delivers it.
func (s *Server) acceptWebTransport(a transport.Accepted) {
	c := s.netConn(a.Conn)
	proto := a.Conn.Protocol()
	if ch, ok := alpn.Pinned(proto); ok && ch.Family == alpn.IETF {
		s.acceptIETF(c, ch, a)
		return
	}
	if _, err := s.negotiate(c, proto, s.versions); err != nil {
		s.log.Info("moq: refused a session", "remote", a.Conn.RemoteAddr(), "transport", "webtransport",
			"offered", a.Offered, "err", err)
		a.Conn.Close(CodeVersion, refusalReason(err))
		return
	}
	if c.version.Family == wire.FamilyIETF {
		s.acceptIETF(c, c.replayAsIETF(), a)
		return
	}
	sess := s.newSession(a.Path)
	f := sess.newLite(c, nil)
	sess.start(f)
	if c.version.SetupStream && s.opts.AuthKey != nil {
		// The token is in the URL, but the Role the token must
		// allow is in the client's SETUP.
		awaitSetup(sess, litesub.SetupTimeout)
	}
	info := acceptInfo{remote: a.Conn.RemoteAddr(), transport: "webtransport", query: a.Query, version: c.version.Name,
		noToken: "a WebTransport client puts ?jwt= in the URL"}
	if !s.admit(sess, f, info) {
		return
	}
	s.deliver(sess)
}

func (s *Server) newSession(path string) *Session {
	sess := newSession(Options{Logger: s.log, RequestTimeout: s.opts.RequestTimeout, MaxLatency: s.opts.MaxLatency, Versions: s.opts.Versions,
		ReleaseRead: s.opts.ReleaseRead, Objects: s.opts.Objects, strict: s.opts.strict}, path)
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
