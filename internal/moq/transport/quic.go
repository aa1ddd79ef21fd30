package subscribe

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"

	"github.com/moq-export/moq-export/subscribe/internal/wire"
)

// The transport layer: raw QUIC connections and WebTransport sessions look
// the same to the session code.

type recvStream interface {
	io.Reader
	CancelRead(code uint64)
	SetReadDeadline(t time.Time) error
}

type sendStream interface {
	io.Writer
	Close() error
	CancelWrite(code uint64)
}

type bidiStream interface {
	recvStream
	sendStream
}

type conn interface {
	OpenBidi(ctx context.Context) (bidiStream, error)
	OpenUni(ctx context.Context) (sendStream, error)
	AcceptBidi(ctx context.Context) (bidiStream, error)
	AcceptUni(ctx context.Context) (recvStream, error)
	Close(code uint64, reason string)
	// Context is done when the connection is gone; its cause says why.
	Context() context.Context
	// WebTransport is true for a WebTransport session (no SETUP Path).
	WebTransport() bool
	// Version is the protocol version the connection negotiated (nil:
	// moq-lite-05, for bare test transports; use connVersion).
	Version() *wire.Version
	// SessionStream is the legacy SETUP stream that stays open on
	// lite-01/02 (nil otherwise).
	SessionStream() bidiStream
}

// negotiated is what a connection negotiated, embedded by the transports.
type negotiated struct {
	version *wire.Version
	session bidiStream
}

func (n *negotiated) Version() *wire.Version    { return n.version }
func (n *negotiated) SessionStream() bidiStream { return n.session }

// maxIncomingStreams bounds the streams a peer may hold open at once on
// one connection, bidi and uni alike. A subscription is a bidi stream for
// its whole life: a recorder of 1,000 broadcasts (catalog, video, audio)
// holds 3,000 on its one connection, and a publisher serving them accepts
// as many; their group streams are uni streams, one or more per track at
// a time. quic-go spends memory on the streams that exist, not on the
// limit, which only grants credit.
const maxIncomingStreams = 1 << 16

// quicConfig is the QUIC configuration of every connection: many incoming
// streams (see maxIncomingStreams), the keep-alive period and idle timeout
// that find a dead peer (see liveness), and what WebTransport needs.
func quicConfig(keepAlive, idle time.Duration) *quic.Config {
	keepAlive, idle = liveness(keepAlive, idle)
	return &quic.Config{
		MaxIncomingStreams:               maxIncomingStreams,
		MaxIncomingUniStreams:            maxIncomingStreams,
		KeepAlivePeriod:                  keepAlive,
		MaxIdleTimeout:                   idle,
		HandshakeIdleTimeout:             5 * time.Second,
		EnableDatagrams:                  true,
		EnableStreamResetPartialDelivery: true,
	}
}

// --- raw QUIC ---

type quicConn struct {
	c    *quic.Conn
	alpn string // the negotiated ALPN when it selects a moq-transport draft
	negotiated
	// replay is a bidi stream already accepted and read by the legacy
	// SETUP, returned (its bytes replayed) by the next AcceptBidi, before
	// anything else accepts: the handshake of the session it chose.
	replay bidiStream
}

func (q *quicConn) OpenBidi(ctx context.Context) (bidiStream, error) {
	s, err := q.c.OpenStreamSync(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	return quicStream{s}, nil
}

func (q *quicConn) OpenUni(ctx context.Context) (sendStream, error) {
	s, err := q.c.OpenUniStreamSync(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	return quicSend{s}, nil
}

func (q *quicConn) AcceptBidi(ctx context.Context) (bidiStream, error) {
	if r := q.replay; r != nil {
		q.replay = nil
		return r, nil
	}
	s, err := q.c.AcceptStream(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	return quicStream{s}, nil
}

func (q *quicConn) AcceptUni(ctx context.Context) (recvStream, error) {
	s, err := q.c.AcceptUniStream(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	return quicRecv{s}, nil
}

func (q *quicConn) Close(code uint64, reason string) {
	_ = q.c.CloseWithError(quic.ApplicationErrorCode(code), reason)
}
func (q *quicConn) Context() context.Context { return q.c.Context() }
func (q *quicConn) WebTransport() bool       { return false }

type quicStream struct{ s *quic.Stream }

func (q quicStream) Read(b []byte) (int, error) {
	n, err := q.s.Read(b)
	return n, mapErr(err)
}
func (q quicStream) Write(b []byte) (int, error) {
	n, err := q.s.Write(b)
	return n, mapErr(err)
}
func (q quicStream) Close() error                      { return q.s.Close() }
func (q quicStream) CancelRead(code uint64)            { q.s.CancelRead(quic.StreamErrorCode(code)) }
func (q quicStream) CancelWrite(code uint64)           { q.s.CancelWrite(quic.StreamErrorCode(code)) }
func (q quicStream) SetReadDeadline(t time.Time) error { return q.s.SetReadDeadline(t) }

type quicSend struct{ s *quic.SendStream }

func (q quicSend) Write(b []byte) (int, error) {
	n, err := q.s.Write(b)
	return n, mapErr(err)
}
func (q quicSend) Close() error            { return q.s.Close() }
func (q quicSend) CancelWrite(code uint64) { q.s.CancelWrite(quic.StreamErrorCode(code)) }

type quicRecv struct{ s *quic.ReceiveStream }

func (q quicRecv) Read(b []byte) (int, error) {
	n, err := q.s.Read(b)
	return n, mapErr(err)
}
func (q quicRecv) CancelRead(code uint64)            { q.s.CancelRead(quic.StreamErrorCode(code)) }
func (q quicRecv) SetReadDeadline(t time.Time) error { return q.s.SetReadDeadline(t) }

// --- WebTransport ---

type wtConn struct {
	s *webtransport.Session
	// alpn is the negotiated WebTransport protocol when it selects a
	// moq-transport draft ("moql" when the legacy SETUP left draft 14 to
	// the moq-transport session).
	alpn string
	negotiated
	// replay is a bidi stream already accepted and read by the legacy
	// SETUP, returned by the next AcceptBidi (as for quicConn).
	replay bidiStream
	// onClose runs after the session is closed (closes a dialled QUIC
	// connection's transport).
	onClose func()
}

func (w *wtConn) OpenBidi(ctx context.Context) (bidiStream, error) {
	s, err := w.s.OpenStreamSync(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	return wtStream{s, w.untilGone(s)}, nil
}

func (w *wtConn) OpenUni(ctx context.Context) (sendStream, error) {
	s, err := w.s.OpenUniStreamSync(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	return wtSend{s}, nil
}

func (w *wtConn) AcceptBidi(ctx context.Context) (bidiStream, error) {
	if r := w.replay; r != nil {
		w.replay = nil
		return r, nil
	}
	s, err := w.s.AcceptStream(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	return wtStream{s, w.untilGone(s)}, nil
}

func (w *wtConn) AcceptUni(ctx context.Context) (recvStream, error) {
	s, err := w.s.AcceptUniStream(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	return wtRecv{s, w.untilGone(s)}, nil
}

// untilGone ends a stream's reads when the session is gone. webtransport-go
// v0.13.0 can leave a Read blocked for good after the session closed: a
// Read that met the peer's WT_SESSION_GONE reset waits for the session to
// close the stream, which it no longer does once a CancelRead has taken
// the stream off its list. A read deadline wakes it. The returned func
// forgets the stream (called when its reads are over).
func (w *wtConn) untilGone(s interface{ SetReadDeadline(time.Time) error }) func() bool {
	return context.AfterFunc(w.s.Context(), func() { _ = s.SetReadDeadline(time.Now()) })
}

func (w *wtConn) Close(code uint64, reason string) {
	_ = w.s.CloseWithError(webtransport.SessionErrorCode(code), reason)
	if w.onClose != nil {
		w.onClose()
	}
}
func (w *wtConn) Context() context.Context { return w.s.Context() }
func (w *wtConn) WebTransport() bool       { return true }

type wtStream struct {
	s    *webtransport.Stream
	stop func() bool // see untilGone
}

func (w wtStream) Read(b []byte) (int, error) {
	n, err := w.s.Read(b)
	if err != nil {
		w.stop()
	}
	return n, mapErr(err)
}
func (w wtStream) Write(b []byte) (int, error) {
	n, err := w.s.Write(b)
	return n, mapErr(err)
}
func (w wtStream) Close() error { return w.s.Close() }
func (w wtStream) CancelRead(code uint64) {
	w.s.CancelRead(webtransport.StreamErrorCode(code))
	w.stop()
}
func (w wtStream) CancelWrite(code uint64)           { w.s.CancelWrite(webtransport.StreamErrorCode(code)) }
func (w wtStream) SetReadDeadline(t time.Time) error { return w.s.SetReadDeadline(t) }

type wtSend struct{ s *webtransport.SendStream }

func (w wtSend) Write(b []byte) (int, error) {
	n, err := w.s.Write(b)
	return n, mapErr(err)
}
func (w wtSend) Close() error            { return w.s.Close() }
func (w wtSend) CancelWrite(code uint64) { w.s.CancelWrite(webtransport.StreamErrorCode(code)) }

type wtRecv struct {
	s    *webtransport.ReceiveStream
	stop func() bool // see untilGone
}

func (w wtRecv) Read(b []byte) (int, error) {
	n, err := w.s.Read(b)
	if err != nil {
		w.stop()
	}
	return n, mapErr(err)
}
func (w wtRecv) CancelRead(code uint64) {
	w.s.CancelRead(webtransport.StreamErrorCode(code))
	w.stop()
}
func (w wtRecv) SetReadDeadline(t time.Time) error { return w.s.SetReadDeadline(t) }

// mapErr turns transport errors into ResetError and CloseError, keeping
// io.EOF and deadlines as they are.
func mapErr(err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	if se, ok := errors.AsType[*quic.StreamError](err); ok && se.Remote {
		return &ResetError{Code: uint64(se.ErrorCode)}
	}
	if se, ok := errors.AsType[*webtransport.StreamError](err); ok && se.Remote {
		return &ResetError{Code: uint64(se.ErrorCode)}
	}
	if ae, ok := errors.AsType[*quic.ApplicationError](err); ok {
		return &CloseError{Code: uint64(ae.ErrorCode), Reason: ae.ErrorMessage, Remote: ae.Remote}
	}
	if se, ok := errors.AsType[*webtransport.SessionError](err); ok {
		return &CloseError{Code: uint64(se.ErrorCode), Reason: se.Message, Remote: se.Remote}
	}
	if code, words, ok := wtUnmappedReset(err); ok {
		// An HTTP/3 code webtransport-go reports only in its text (a
		// stream the peer rejected because its session is gone, ...).
		return &ResetError{Code: code, words: words}
	}
	return err
}

// isConnErr reports whether err, from a stream or connection call, says
// that the whole connection (or WebTransport session) is gone rather than
// one stream.
func isConnErr(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := errors.AsType[*CloseError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*quic.TransportError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*quic.IdleTimeoutError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*quic.StatelessResetError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*quic.HandshakeTimeoutError](err); ok {
		return true
	}
	return false
}

// connCause returns why c is gone.
func connCause(c conn) error {
	err := context.Cause(c.Context())
	if err == nil {
		return nil
	}
	base, isIETF := c, false
	if ic, ok := c.(*ietfConn); ok {
		// The transport under a moq-transport session knows how it closed;
		// its codes are moq-transport's.
		base, isIETF = ic.conn, true
	}
	if cc, ok := base.(interface{ closeCause() error }); ok && errors.Is(err, context.Canceled) {
		if cerr := cc.closeCause(); cerr != nil {
			return markIETF(cerr, isIETF)
		}
	}
	return markIETF(mapErr(err), isIETF)
}

// markIETF returns err with a session close of it named in moq-transport's
// codes when isIETF (a copy: close errors may be shared).
func markIETF(err error, isIETF bool) error {
	if ce, ok := err.(*CloseError); ok && isIETF && !ce.ietf {
		cp := *ce
		cp.ietf = true
		return &cp
	}
	return err
}

// closeCause returns the error the WebTransport session was closed with
// (who closed it, with which code): webtransport-go cancels the session's
// context without a cause, but its stream calls return that error once the
// session is closed.
func (w *wtConn) closeCause() error {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := w.s.AcceptUniStream(done)
	if err == nil || errors.Is(err, context.Canceled) {
		return nil
	}
	return mapErr(err)
}

// --- dialling ---

// target is a parsed Dial URL.
type target struct {
	raw      *url.URL // as given
	scheme   string   // moql, https or http
	hostport string
	host     string
	// setupPath is the SETUP Path parameter for raw QUIC.
	setupPath string
}

func parseTarget(rawURL string) (*target, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedURL, redactError(err))
	}
	t := &target{raw: u, host: u.Hostname()}
	switch u.Scheme {
	case "moql", "moqt":
		t.scheme = "moql"
	case "https", "http":
		t.scheme = u.Scheme
	default:
		return nil, fmt.Errorf("%w: scheme %q", ErrUnsupportedURL, u.Scheme)
	}
	if t.host == "" {
		return nil, fmt.Errorf("%w: no host in %s", ErrUnsupportedURL, redactURL(u))
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	t.hostport = net.JoinHostPort(t.host, port)
	t.setupPath = u.EscapedPath()
	if t.setupPath == "" {
		t.setupPath = "/"
	}
	if u.RawQuery != "" {
		t.setupPath += "?" + u.RawQuery
	}
	return t, nil
}

// rootPath returns the session root without slashes at the ends.
func (t *target) rootPath() string { return normPath(t.raw.Path) }

// secretWords mark query parameters that carry credentials: a parameter
// whose name contains one (jwt, access_token, api_key, X-Amz-Signature,
// password, ...) is a secret.
var secretWords = []string{"jwt", "token", "auth", "key", "secret", "pass", "sig", "cred"}

// IsSecretParam reports whether a URL query parameter of that name carries a
// credential, whose value must never be logged.
func IsSecretParam(name string) bool {
	name = strings.ToLower(name)
	return slices.ContainsFunc(secretWords, func(w string) bool { return strings.Contains(name, w) })
}

// RedactURL returns raw with its credentials replaced, for logs and
// errors: the values of secret query parameters (IsSecretParam) and any
// user info. A URL that does not parse keeps only what precedes its query
// or user info.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.IndexAny(raw, "?@"); i >= 0 {
			return raw[:i] + "…"
		}
		return raw
	}
	return redactURL(u)
}

// redactURL renders u for logs with its credentials replaced.
func redactURL(u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = url.User("REDACTED")
	}
	if c.RawQuery != "" {
		q := c.Query()
		for k := range q {
			if IsSecretParam(k) {
				q[k] = []string{"REDACTED"}
			}
		}
		c.RawQuery = q.Encode()
	}
	return c.String()
}

// redactError strips URLs from err's text (url.Error repeats the URL).
func redactError(err error) string {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		if u, perr := url.Parse(ue.URL); perr == nil {
			return ue.Op + " " + redactURL(u) + ": " + ue.Err.Error()
		}
		return ue.Op + ": " + ue.Err.Error()
	}
	return err.Error()
}

// tlsConfig builds the client TLS configuration for t.
func (o *Options) tlsConfig(t *target, alpns []string, pin string) (*tls.Config, error) {
	var c *tls.Config
	if o.TLSConfig != nil {
		c = o.TLSConfig.Clone()
	} else {
		c = &tls.Config{}
	}
	c.NextProtos = alpns
	if c.ServerName == "" {
		c.ServerName = t.host
	}
	if o.RootCAs != nil {
		c.RootCAs = o.RootCAs
	}
	if pin == "" {
		pin = o.TLSFingerprint
	}
	switch {
	case pin != "":
		want, err := parseFingerprint(pin)
		if err != nil {
			return nil, err
		}
		// The pin replaces chain verification. VerifyConnection runs on
		// every handshake, resumed ones included (VerifyPeerCertificate
		// does not), so a cached session cannot bypass the pin.
		c.InsecureSkipVerify = true
		c.VerifyPeerCertificate = nil
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("moq: server sent no certificate")
			}
			got := sha256.Sum256(cs.PeerCertificates[0].Raw)
			if subtle.ConstantTimeCompare(got[:], want) != 1 {
				return fmt.Errorf("moq: certificate fingerprint %x does not match the pin", got)
			}
			return nil
		}
	case o.TLSInsecure:
		c.InsecureSkipVerify = true
	default:
		// Verification stays on unless asked otherwise through the
		// explicit options, whatever a caller's TLSConfig says.
		c.InsecureSkipVerify = false
	}
	return c, nil
}

func parseFingerprint(s string) ([]byte, error) {
	s = strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), ":", ""))
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("moq: TLS fingerprint must be 64 hex digits (SHA-256 of the DER leaf)")
	}
	return b, nil
}

// dialer connects to a target, once per call, offering versions.
type dialer struct {
	opts     *Options
	target   *target
	versions []*wire.Version
}

func (d *dialer) dial(ctx context.Context) (conn, error) {
	switch d.target.scheme {
	case "moql":
		tc, err := d.opts.tlsConfig(d.target, wire.ALPNs(d.versions), "")
		if err != nil {
			return nil, err
		}
		if d.opts.Versions == nil {
			// Every draft the moq-transport session speaks.
			for _, a := range ietfALPNs {
				if !slices.Contains(tc.NextProtos, a) {
					tc.NextProtos = append(tc.NextProtos, a)
				}
			}
		}
		if d.opts.alpns != nil {
			tc.NextProtos = d.opts.alpns
		}
		c, err := dialQUIC(ctx, d.target.hostport, tc, quicConfig(d.opts.KeepAlive, d.opts.IdleTimeout), false)
		if err != nil {
			return nil, fmt.Errorf("moq: dial %s: %w", d.target.hostport, mapErr(err))
		}
		return d.negotiateQUIC(ctx, c)
	case "http":
		// Fetched on every attempt: a restarted development relay has a
		// new certificate.
		pin, err := fetchFingerprint(ctx, d.target)
		if err != nil {
			return nil, err
		}
		return d.dialWebTransport(ctx, pin)
	default:
		return d.dialWebTransport(ctx, "")
	}
}

// dialQUIC is quic.DialAddr (early: DialAddrEarly) from a socket of our
// own, read and written through quicPacketConn; the transport and the
// socket close with the connection, as DialAddr's do.
func dialQUIC(ctx context.Context, hostport string, tc *tls.Config, qc *quic.Config, early bool) (*quic.Conn, error) {
	addr, err := net.ResolveUDPAddr("udp", hostport)
	if err != nil {
		return nil, err
	}
	if tc.ServerName == "" {
		// What DialAddr infers from the address it was given.
		tc = tc.Clone()
		if tc.ServerName, _, err = net.SplitHostPort(hostport); err != nil {
			tc.ServerName = hostport
		}
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4zero})
	if err != nil {
		return nil, err
	}
	tr := &quic.Transport{Conn: quicPacketConn(udp)}
	dial := tr.Dial
	if early {
		dial = tr.DialEarly
	}
	c, err := dial(ctx, addr, tc, qc)
	if err != nil {
		tr.Close()
		udp.Close()
		return nil, err
	}
	context.AfterFunc(c.Context(), func() {
		tr.Close()
		udp.Close()
	})
	return c, nil
}

func (d *dialer) dialWebTransport(ctx context.Context, pin string) (conn, error) {
	tc, err := d.opts.tlsConfig(d.target, []string{http3.NextProtoH3}, pin)
	if err != nil {
		return nil, err
	}
	protos := wire.ALPNs(d.versions)
	if d.opts.alpns != nil {
		protos = d.opts.alpns
	}
	tr := &webtransport.Transport{
		TLSClientConfig: tc,
		QUICConfig:      quicConfig(d.opts.KeepAlive, d.opts.IdleTimeout),
		// WT-Available-Protocols: every version, in the order of the raw
		// QUIC ALPN list (moq-lite first, then the moq-transport drafts).
		ApplicationProtocols: protos,
		// webtransport-go dials the URL's host as it is; a URL without a
		// port must reach the default one.
		DialAddr: func(ctx context.Context, _ string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
			return dialQUIC(ctx, d.target.hostport, tc, qc, true)
		},
	}
	u := *d.target.raw
	u.Scheme = "https"
	u.User = nil
	rsp, s, err := tr.Dial(ctx, u.String(), http.Header{})
	if err != nil {
		tr.Close()
		if rsp != nil {
			return nil, fmt.Errorf("moq: WebTransport to %s: status %d: %w", redactURL(&u), rsp.StatusCode, mapErr(err))
		}
		return nil, fmt.Errorf("moq: WebTransport to %s: %w", redactURL(&u), mapErr(err))
	}
	wc := &wtConn{s: s, onClose: func() { tr.Close() }}
	proto := s.SessionState().ApplicationProtocol
	lite := liteVersions(d.versions)
	if p, ok := ietfProtocol(proto, d.versions); ok {
		// A moq-transport draft: its session runs its own SETUP
		// (ietfDial).
		wc.alpn = p
		return wc, nil
	}
	v, legacy, err := selectALPN(proto, lite)
	if err == nil && legacy {
		v, wc.session, err = legacyClientSetup(ctx, wc, lite, "")
	}
	if err != nil {
		wc.Close(CodeVersion, "version")
		return nil, fmt.Errorf("moq: WebTransport to %s: %w", redactURL(&u), err)
	}
	wc.version = v
	return wc, nil
}

// fetchFingerprint is the development bootstrap: GET
// http://host:port/certificate.sha256 over TCP.
func fetchFingerprint(ctx context.Context, t *target) (string, error) {
	u := url.URL{Scheme: "http", Host: t.raw.Host, Path: "/certificate.sha256"}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("moq: fetch certificate fingerprint: %s", redactError(err))
	}
	defer rsp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(rsp.Body, 1024))
	if err != nil {
		return "", fmt.Errorf("moq: fetch certificate fingerprint: %w", err)
	}
	if rsp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("moq: fetch %s: status %d", u.String(), rsp.StatusCode)
	}
	pin := strings.TrimSpace(string(body))
	if _, err := parseFingerprint(pin); err != nil {
		return "", fmt.Errorf("moq: %s: %w", u.String(), err)
	}
	return pin, nil
}
