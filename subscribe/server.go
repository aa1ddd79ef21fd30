package subscribe

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"

	"github.com/moq-export/moq-export/subscribe/internal/ietf"
	"github.com/moq-export/moq-export/subscribe/internal/wire"
)

// Server accepts moq-lite sessions on one UDP port: raw QUIC (the ALPN of
// each version it speaks, and "moql" for the legacy SETUP) and
// WebTransport (ALPN h3) side by side.
type Server struct {
	opts     ServerOptions
	versions []*wire.Version
	log      *slog.Logger
	udp      net.PacketConn
	tr       *quic.Transport
	ln       *quic.Listener
	wt       *webtransport.Server
	httpSrv  *http.Server
	accepted chan *Session
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu       sync.Mutex
	sessions map[*Session]bool // true once counted in admitted
	admitted int               // sessions admitted and not ended (MaxSessions)
	closed   bool
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
		opts.strict = &strictPeer{}
	}
	if opts.strict != nil {
		opts.strict.groupPerFrame = opts.GroupPerFrame
	}
	versions, err := versionList(opts.Versions)
	if err != nil {
		return nil, err
	}
	protos := wire.ALPNs(versions)
	if opts.Versions == nil {
		// Every moq-transport draft the IETF session speaks.
		for _, a := range ietfALPNs {
			if !slices.Contains(protos, a) {
				protos = append(protos, a)
			}
		}
	}
	// WebTransport negotiates among the same protocols.
	wtProtos := slices.Clone(protos)
	if !opts.DisableWebTransport {
		protos = append(protos, http3.NextProtoH3)
	}
	tc := &tls.Config{Certificates: opts.Certificates, NextProtos: protos}
	// A client offering none of our ALPNs still completes the handshake
	// with its first one, so that the refusal can say which versions we
	// speak (a TLS alert cannot).
	tc.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		if len(hello.SupportedProtos) == 0 || slices.ContainsFunc(hello.SupportedProtos, func(p string) bool { return slices.Contains(protos, p) }) {
			return nil, nil
		}
		c := tc.Clone()
		c.GetConfigForClient = nil
		c.NextProtos = hello.SupportedProtos[:1]
		return c, nil
	}
	// The socket is ours, not quic-go's, so Close releases the port at
	// once (a restart on the same port must work).
	udpAddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("moq: listen %s: %w", addr, err)
	}
	udp, tcp, err := listenSockets(udpAddr, opts.FingerprintHTTP)
	if err != nil {
		return nil, fmt.Errorf("moq: listen %s: %w", addr, err)
	}
	tr := &quic.Transport{Conn: quicPacketConn(udp)}
	qc := quicConfig(opts.KeepAlive, opts.IdleTimeout)
	ln, err := tr.Listen(tc, qc)
	if err != nil {
		udp.Close()
		if tcp != nil {
			tcp.Close()
		}
		return nil, fmt.Errorf("moq: listen %s: %w", addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		opts: opts, versions: versions, log: opts.Logger, udp: udp, tr: tr, ln: ln, accepted: make(chan *Session),
		ctx: ctx, cancel: cancel, sessions: map[*Session]bool{},
	}
	if !opts.DisableWebTransport {
		mux := http.NewServeMux()
		s.wt = &webtransport.Server{
			H3: &http3.Server{Handler: mux, TLSConfig: tc, QUICConfig: qc},
			// The client's first protocol we speak wins, moq-lite or
			// moq-transport.
			ApplicationProtocols: wtProtos,
			CheckOrigin:          func(*http.Request) bool { return true },
		}
		webtransport.ConfigureHTTP3Server(s.wt.H3)
		mux.HandleFunc("/", s.upgrade)
	}
	if tcp != nil {
		s.serveFingerprint(tcp)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.acceptLoop()
	}()
	return s, nil
}

// Addr returns the UDP address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Fingerprint returns the pin of the server's first certificate.
func (s *Server) Fingerprint() string {
	sum := sha256.Sum256(s.opts.Certificates[0].Certificate[0])
	return hex.EncodeToString(sum[:])
}

// listenSockets binds the UDP socket QUIC serves on and, withTCP, the
// TCP listener of the fingerprint bootstrap on the same port. For port 0
// the kernel picks a UDP port whose TCP twin may be taken by another
// program: then another UDP port is tried.
func listenSockets(addr *net.UDPAddr, withTCP bool) (*net.UDPConn, net.Listener, error) {
	for attempt := 0; ; attempt++ {
		udp, err := net.ListenUDP("udp", addr)
		if err != nil || !withTCP {
			return udp, nil, err
		}
		tcp, err := net.Listen("tcp", udp.LocalAddr().String())
		if err == nil {
			return udp, tcp, nil
		}
		udp.Close()
		if addr.Port != 0 || attempt == 20 || !errors.Is(err, syscall.EADDRINUSE) {
			return nil, nil, fmt.Errorf("fingerprint listener: %w", err)
		}
	}
}

// serveFingerprint serves the certificate's pin over HTTP on l.
func (s *Server) serveFingerprint(l net.Listener) {
	mux := http.NewServeMux()
	// CORS as on the reference relay (any origin, GET): a page served
	// from another origin fetches the pin for serverCertificateHashes.
	mux.HandleFunc("GET /certificate.sha256", func(w http.ResponseWriter, _ *http.Request) {
		setCORS(w.Header())
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, s.Fingerprint())
	})
	mux.HandleFunc("OPTIONS /certificate.sha256", func(w http.ResponseWriter, r *http.Request) {
		setCORS(w.Header())
		if h := r.Header.Get("Access-Control-Request-Headers"); h != "" {
			w.Header().Set("Access-Control-Allow-Headers", h)
		}
		w.Header().Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
	})
	s.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.httpSrv.Serve(l)
	}()
}

func (s *Server) acceptLoop() {
	for {
		qc, err := s.ln.Accept(s.ctx)
		if err != nil {
			return
		}
		proto := qc.ConnectionState().TLS.NegotiatedProtocol
		if proto == http3.NextProtoH3 && s.wt != nil {
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				_ = s.wt.ServeQUICConn(qc)
			}()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.acceptQUIC(qc, proto)
		}()
	}
}

// acceptQUIC negotiates the version of a raw QUIC connection (its ALPN, or
// the legacy SETUP under "moql"), admits its session and delivers it.
func (s *Server) acceptQUIC(qc *quic.Conn, proto string) {
	if v, ok := ietfVersionOfALPN(proto); ok && proto != wire.ALPNLegacy {
		s.acceptIETF(&quicConn{c: qc, alpn: proto}, v, nil)
		return
	}
	c := &quicConn{c: qc}
	setupPath, err := s.negotiate(c, proto, s.versions)
	if err == nil && c.version.Family == wire.FamilyIETF {
		// The legacy SETUP chose moq-transport draft 14: the IETF session
		// reads the same CLIENT_SETUP again (replayed) and answers it.
		c.replay, c.session, c.alpn = c.session, nil, wire.ALPNLegacy
		s.acceptIETF(c, ietf.Draft14, nil)
		return
	}
	if err != nil {
		s.log.Info("moq: refused a session", "remote", qc.RemoteAddr().String(), "transport", "quic", "err", err)
		s.refused(RefusedVersion)
		qc.CloseWithError(CodeVersion, refusalReason(err))
		return
	}
	// The legacy SETUP's Path carries the query (?jwt=) after the path.
	path, query := splitPathQuery(setupPath)
	sess := s.newSession(path)
	sess.start(c)
	info := acceptInfo{remote: qc.RemoteAddr().String(), transport: "quic", query: query, version: c.version.Name}
	switch {
	case c.version.SetupStream:
		// The root (and token) travel in the client's SETUP: wait for it
		// so that Path is meaningful when Accept returns (briefly, unless
		// the token must be checked).
		wait := 2 * time.Second
		if s.opts.AuthKey != nil {
			wait = legacySetupTimeout
		}
		awaitSetup(sess, wait)
		sess.mu.Lock()
		info.query = sess.setupQuery
		sess.mu.Unlock()
		info.noToken = "a raw QUIC client puts ?jwt= in its SETUP Path"
	case !c.version.LegacySetup:
		info.noToken = c.version.Name + " over raw QUIC has no SETUP to carry a token: use moq-lite-05 or WebTransport"
	}
	if !s.admit(sess, c, info) {
		return
	}
	s.deliver(sess)
}

// awaitSetup waits at most d for the client's SETUP on sess.
func awaitSetup(sess *Session, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-sess.peerSetup:
	case <-t.C:
	case <-sess.done:
	}
}

// negotiate sets c's version from the negotiated protocol, running the
// legacy SETUP where it says so; it returns the SETUP path a legacy raw
// QUIC client sent.
func (s *Server) negotiate(c conn, proto string, versions []*wire.Version) (string, error) {
	v, legacy, err := selectALPN(proto, versions)
	var session bidiStream
	var path string
	if err == nil && legacy {
		v, session, path, err = legacyServerSetup(s.ctx, c, versions)
	}
	if err != nil {
		return "", err
	}
	switch x := c.(type) {
	case *quicConn:
		x.version, x.session = v, session
	case *wtConn:
		x.version, x.session = v, session
	}
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

func (s *Server) upgrade(w http.ResponseWriter, r *http.Request) {
	ws, err := s.wt.Upgrade(w, r)
	if err != nil {
		s.log.Debug("moq: WebTransport upgrade", "err", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	c := &wtConn{s: ws}
	proto := ws.SessionState().ApplicationProtocol
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if v, ok := ietfVersionOfALPN(proto); ok && proto != wire.ALPNLegacy {
			c.alpn = proto
			s.acceptIETF(c, v, r)
			return
		}
		if _, err := s.negotiate(c, proto, s.versions); err != nil {
			s.log.Info("moq: refused a session", "remote", r.RemoteAddr, "transport", "webtransport",
				"offered", r.Header.Get("WT-Available-Protocols"), "err", err)
			s.refused(RefusedVersion)
			ws.CloseWithError(CodeVersion, refusalReason(err))
			return
		}
		if c.version.Family == wire.FamilyIETF {
			// The legacy SETUP chose draft 14: its session reads the same
			// CLIENT_SETUP again (replayed) and answers it.
			c.replay, c.session, c.alpn = c.session, nil, wire.ALPNLegacy
			s.acceptIETF(c, ietf.Draft14, r)
			return
		}
		sess := s.newSession(r.URL.Path)
		sess.start(c)
		if c.version.SetupStream && s.opts.AuthKey != nil {
			// The token is in the URL, but the Role the token must
			// allow is in the client's SETUP.
			awaitSetup(sess, legacySetupTimeout)
		}
		info := acceptInfo{remote: r.RemoteAddr, transport: "webtransport", query: r.URL.RawQuery, version: c.version.Name,
			noToken: "a WebTransport client puts ?jwt= in the URL"}
		if !s.admit(sess, c, info) {
			return
		}
		s.deliver(sess)
	}()
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
	for _, sess := range sessions {
		sess.Close()
	}
	err := s.ln.Close()
	if s.wt != nil {
		s.wt.Close()
	}
	if s.httpSrv != nil {
		s.httpSrv.Close()
	}
	s.tr.Close()
	if cerr := s.udp.Close(); err == nil {
		err = cerr
	}
	s.wg.Wait()
	return err
}

// setCORS allows any origin to GET, as the reference relay's CorsLayer
// (allow_origin Any, allow_methods GET) does.
func setCORS(h http.Header) {
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", "GET")
}
