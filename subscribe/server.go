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
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"

	"github.com/moq-export/moq-export/subscribe/internal/wire"
)

// Server accepts moq-lite sessions on one UDP port: raw QUIC (ALPN
// moq-lite-05) and WebTransport (ALPN h3) side by side.
type Server struct {
	opts     ServerOptions
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
	sessions map[*Session]struct{}
	closed   bool
}

// Listen starts accepting sessions on addr (host:port, UDP).
func Listen(addr string, opts ServerOptions) (*Server, error) {
	if len(opts.Certificates) == 0 {
		return nil, errors.New("moq: Listen needs a certificate")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	protos := append([]string{wire.ALPN}, ietfALPNs...)
	if !opts.DisableWebTransport {
		protos = append(protos, http3.NextProtoH3)
	}
	tc := &tls.Config{Certificates: opts.Certificates, NextProtos: protos}
	// The socket is ours, not quic-go's, so Close releases the port at
	// once (a restart on the same port must work).
	udpAddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("moq: listen %s: %w", addr, err)
	}
	udp, err := net.ListenUDP("udp", udpAddr)
	if err != nil {
		return nil, fmt.Errorf("moq: listen %s: %w", addr, err)
	}
	tr := &quic.Transport{Conn: udp}
	qc := quicConfig(opts.KeepAlive, opts.IdleTimeout)
	ln, err := tr.Listen(tc, qc)
	if err != nil {
		udp.Close()
		return nil, fmt.Errorf("moq: listen %s: %w", addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		opts: opts, log: opts.Logger, udp: udp, tr: tr, ln: ln, accepted: make(chan *Session),
		ctx: ctx, cancel: cancel, sessions: map[*Session]struct{}{},
	}
	if !opts.DisableWebTransport {
		mux := http.NewServeMux()
		s.wt = &webtransport.Server{
			H3:                   &http3.Server{Handler: mux, TLSConfig: tc, QUICConfig: qc},
			ApplicationProtocols: []string{wire.ALPN},
			CheckOrigin:          func(*http.Request) bool { return true },
		}
		webtransport.ConfigureHTTP3Server(s.wt.H3)
		mux.HandleFunc("/", s.upgrade)
	}
	if opts.FingerprintHTTP {
		if err := s.serveFingerprint(); err != nil {
			ln.Close()
			tr.Close()
			udp.Close()
			cancel()
			return nil, err
		}
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

func (s *Server) serveFingerprint() error {
	l, err := net.Listen("tcp", s.ln.Addr().String())
	if err != nil {
		return fmt.Errorf("moq: fingerprint listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /certificate.sha256", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, s.Fingerprint())
	})
	s.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.httpSrv.Serve(l)
	}()
	return nil
}

func (s *Server) acceptLoop() {
	for {
		qc, err := s.ln.Accept(s.ctx)
		if err != nil {
			return
		}
		switch qc.ConnectionState().TLS.NegotiatedProtocol {
		case wire.ALPN:
			sess := s.newSession("")
			sess.start(&quicConn{c: qc})
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				// The root travels in the client's SETUP: wait briefly for
				// it so Path is meaningful when Accept returns.
				t := time.NewTimer(2 * time.Second)
				defer t.Stop()
				select {
				case <-sess.peerSetup:
				case <-t.C:
				case <-sess.done:
				}
				s.deliver(sess)
			}()
		case http3.NextProtoH3:
			if s.wt == nil {
				qc.CloseWithError(21, "unknown ALPN")
				continue
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				_ = s.wt.ServeQUICConn(qc)
			}()
		default:
			p := qc.ConnectionState().TLS.NegotiatedProtocol
			if v, ok := ietfVersionOfALPN(p); ok {
				s.wg.Go(func() { s.acceptIETF(&quicConn{c: qc, alpn: p}, v) })
				continue
			}
			qc.CloseWithError(21, "unknown ALPN")
		}
	}
}

func (s *Server) upgrade(w http.ResponseWriter, r *http.Request) {
	ws, err := s.wt.Upgrade(w, r)
	if err != nil {
		s.log.Debug("moq: WebTransport upgrade", "err", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if p := ws.SessionState().ApplicationProtocol; p != wire.ALPN {
		s.log.Debug("moq: WebTransport session without moq-lite-05", "protocol", p)
		ws.CloseWithError(21, "moq-lite-05 required")
		return
	}
	sess := s.newSession(r.URL.Path)
	sess.start(&wtConn{s: ws})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.deliver(sess)
	}()
}

func (s *Server) newSession(path string) *Session {
	sess := newSession(Options{Logger: s.log, RequestTimeout: s.opts.RequestTimeout, MaxLatency: s.opts.MaxLatency}, path)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		sess.cancel()
		return sess
	}
	s.sessions[sess] = struct{}{}
	s.mu.Unlock()
	for _, b := range s.opts.Publish {
		if err := sess.Publish(b); err != nil {
			s.log.Warn("moq: publish on accepted session", "broadcast", b.Name(), "err", err)
		}
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-sess.done:
		case <-s.ctx.Done():
		}
		s.mu.Lock()
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
