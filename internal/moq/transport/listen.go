package transport

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"
)

// ListenConfig configures Listen.
type ListenConfig struct {
	// Certificates are the server's; the first one's pin is Fingerprint.
	Certificates []tls.Certificate
	// Protocols are the ALPNs of raw QUIC and the WebTransport protocols,
	// in the server's order (the client's first one of these wins on
	// WebTransport).
	Protocols []string
	// WebTransport accepts WebTransport sessions (ALPN h3) beside raw QUIC.
	WebTransport bool
	// FingerprintHTTP serves the first certificate's pin over HTTP on the
	// same port (TCP) at /certificate.sha256, for development clients.
	FingerprintHTTP bool
	// KeepAlive and IdleTimeout are the liveness settings.
	KeepAlive, IdleTimeout time.Duration
}

// Accepted is a connection the listener accepted.
type Accepted struct {
	Conn Conn
	// Transport is "quic" or "webtransport".
	Transport string
	// Path and Query are the WebTransport request's (empty on raw QUIC,
	// whose path travels in the protocol's SETUP).
	Path, Query string
	// Offered is the client's WT-Available-Protocols header.
	Offered string
}

// Listener accepts raw QUIC connections and WebTransport sessions on one
// UDP port.
type Listener[E Errors] struct {
	fingerprint string
	udp         net.PacketConn
	tr          *quic.Transport
	ln          *quic.Listener
	wt          *webtransport.Server
	httpSrv     *http.Server
	handle      func(Accepted)
	ctx         context.Context
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	stop        sync.Once // StopAccepting
	stopErr     error
}

// Listen starts accepting on addr (host:port, UDP). handle runs in a
// goroutine of its own for each accepted connection; Close waits for
// them.
func Listen[E Errors](addr string, cfg ListenConfig, handle func(Accepted)) (*Listener[E], error) {
	if len(cfg.Certificates) == 0 {
		return nil, errors.New("moq: Listen needs a certificate")
	}
	protos := slices.Clone(cfg.Protocols)
	if cfg.WebTransport {
		protos = append(protos, http3.NextProtoH3)
	}
	tc := &tls.Config{Certificates: cfg.Certificates, NextProtos: protos}
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
	udp, tcp, err := listenSockets(udpAddr, cfg.FingerprintHTTP)
	if err != nil {
		return nil, fmt.Errorf("moq: listen %s: %w", addr, err)
	}
	tr := &quic.Transport{Conn: quicPacketConn(udp)}
	qc := QUICConfig(cfg.KeepAlive, cfg.IdleTimeout)
	ln, err := tr.Listen(tc, qc)
	if err != nil {
		tr.Conn.Close() // udp, and its count in ReceivedPackets
		if tcp != nil {
			tcp.Close()
		}
		return nil, fmt.Errorf("moq: listen %s: %w", addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Listener[E]{fingerprint: Fingerprint(cfg.Certificates[0]), udp: udp, tr: tr, ln: ln, handle: handle, ctx: ctx, cancel: cancel}
	if cfg.WebTransport {
		mux := http.NewServeMux()
		l.wt = &webtransport.Server{
			H3: &http3.Server{Handler: mux, TLSConfig: tc, QUICConfig: qc},
			// The client's first protocol we speak wins.
			ApplicationProtocols: slices.Clone(cfg.Protocols),
			CheckOrigin:          func(*http.Request) bool { return true },
		}
		webtransport.ConfigureHTTP3Server(l.wt.H3)
		mux.HandleFunc("/", l.upgrade)
	}
	if tcp != nil {
		l.serveFingerprint(tcp)
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.acceptLoop()
	}()
	return l, nil
}

// Addr returns the UDP address the listener listens on.
func (l *Listener[E]) Addr() net.Addr { return l.ln.Addr() }

// Fingerprint returns the pin of a certificate: the lowercase hex SHA-256
// of its DER leaf.
func Fingerprint(c tls.Certificate) string {
	sum := sha256.Sum256(c.Certificate[0])
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

// serveFingerprint serves the certificate's pin over HTTP on tcp.
func (l *Listener[E]) serveFingerprint(tcp net.Listener) {
	mux := http.NewServeMux()
	// CORS as on the reference relay (any origin, GET): a page served
	// from another origin fetches the pin for serverCertificateHashes.
	mux.HandleFunc("GET /certificate.sha256", func(w http.ResponseWriter, _ *http.Request) {
		setCORS(w.Header())
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, l.fingerprint)
	})
	mux.HandleFunc("OPTIONS /certificate.sha256", func(w http.ResponseWriter, r *http.Request) {
		setCORS(w.Header())
		if h := r.Header.Get("Access-Control-Request-Headers"); h != "" {
			w.Header().Set("Access-Control-Allow-Headers", h)
		}
		w.Header().Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
	})
	l.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		_ = l.httpSrv.Serve(tcp)
	}()
}

// setCORS allows any origin to GET, as the reference relay's CorsLayer
// (allow_origin Any, allow_methods GET) does.
func setCORS(h http.Header) {
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", "GET")
}

func (l *Listener[E]) acceptLoop() {
	for {
		qc, err := l.ln.Accept(l.ctx)
		if err != nil {
			return
		}
		proto := qc.ConnectionState().TLS.NegotiatedProtocol
		if proto == http3.NextProtoH3 && l.wt != nil {
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				_ = l.wt.ServeQUICConn(qc)
			}()
			continue
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.handle(Accepted{Conn: &quicConn[E]{c: qc}, Transport: "quic"})
		}()
	}
}

func (l *Listener[E]) upgrade(w http.ResponseWriter, r *http.Request) {
	ws, err := l.wt.Upgrade(w, r)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	a := Accepted{Conn: &wtConn[E]{s: ws, remote: r.RemoteAddr}, Transport: "webtransport",
		Path: r.URL.Path, Query: r.URL.RawQuery, Offered: r.Header.Get("WT-Available-Protocols")}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.handle(a)
	}()
}

// StopAccepting stops taking new connections (a handshake under way is
// refused) and leaves those accepted running, so that a server that is
// closing can close its sessions cleanly without a client that reconnects
// at once landing on it meanwhile (each such connection would be closed
// right after its SETUP). Close does it too.
func (l *Listener[E]) StopAccepting() error {
	l.stop.Do(func() { l.stopErr = l.ln.Close() })
	return l.stopErr
}

// Close stops listening, closes the socket and waits for the handlers,
// which must return once the connections they hold are closed.
func (l *Listener[E]) Close() error {
	l.cancel()
	err := l.StopAccepting()
	if l.wt != nil {
		l.wt.Close()
	}
	if l.httpSrv != nil {
		l.httpSrv.Close()
	}
	l.tr.Close()
	if cerr := l.tr.Conn.Close(); err == nil { // udp, and its count in ReceivedPackets
		err = cerr
	}
	l.wg.Wait()
	return err
}
