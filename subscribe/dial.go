package subscribe

import (
	"context"
	"crypto/tls"
	"time"

	"github.com/moq-export/moq-export/internal/moq/transport"
	"github.com/moq-export/moq-export/internal/moq/transport/alpn"
)

// ErrUnsupportedURL means a URL scheme Dial does not know.
var ErrUnsupportedURL = transport.ErrUnsupportedURL

// IsSecretParam reports whether a URL query parameter of that name carries a
// credential, whose value must never be logged.
func IsSecretParam(name string) bool { return transport.IsSecretParam(name) }

// RedactURL returns raw with its credentials replaced, for logs and
// errors: the values of secret query parameters (IsSecretParam) and any
// user info. A URL that does not parse keeps only what precedes its query
// or user info.
func RedactURL(raw string) string { return transport.RedactURL(raw) }

// SelfSignedCert returns an ECDSA P-256 certificate for hosts (default
// "localhost", "127.0.0.1", "::1"), valid from a day ago for 14 days (the
// WebTransport pinning limit), and its pin: the lowercase hex SHA-256 of the
// DER leaf, for Options.TLSFingerprint.
func SelfSignedCert(hosts ...string) (cert tls.Certificate, fingerprint string, err error) {
	return transport.SelfSigned(hosts...)
}

// dialer connects to a target, once per call, offering versions.
type dialer struct {
	opts     *Options
	target   *transport.Target
	versions []alpn.Version
	// minIdle, when set, is the least idle timeout of the connections
	// it makes (stretchedIdle).
	minIdle time.Duration
}

// liveness is the keep-alive period and idle timeout of the connections
// d makes.
func (d *dialer) liveness() (keepAlive, idle time.Duration) {
	keepAlive, idle = liveness(d.opts.KeepAlive, max(d.opts.IdleTimeout, d.minIdle))
	return keepAlive, idle
}

// maxStretchedIdle bounds stretchedIdle: the SETUP's own budget
// (ietfsub's setupTimeout, litesub.SetupTimeout).
const maxStretchedIdle = 10 * time.Second

// stretchedIdle is the idle timeout of the one dial made again after the
// idle timeout cut the exchange that follows a handshake that took took
// (WebTransport's CONNECT, the SETUP): three times that, at least one
// round trip of the path, as QUIC stretches an idle timeout to three
// probe timeouts once it has an RTT sample, at most maxStretchedIdle,
// never less than idle. (quic-go took no sample when every ACK of the
// handshake came after its probe timeout, so it kept the idle timeout as
// configured, shorter than a round trip: the SETUP's answer could not
// come in time.) The peer's own idle timeout still bounds it: QUIC uses
// the smaller of the two.
func stretchedIdle(took, idle time.Duration) time.Duration {
	return max(idle, min(3*took, maxStretchedIdle))
}

// tlsOptions are the client TLS settings of o.
func (o *Options) tlsOptions() transport.TLSOptions {
	return transport.TLSOptions{Base: o.TLSConfig, RootCAs: o.RootCAs, Fingerprint: o.TLSFingerprint, Insecure: o.TLSInsecure}
}

// dial connects and says which family the negotiated token hands the
// connection to (netConn.choice); that family's own negotiation runs on
// it next (Session.open).
func (d *dialer) dial(ctx context.Context) (*netConn, error) {
	switch d.target.Scheme {
	case transport.SchemeQUIC:
		alpns := alpn.Tokens(d.versions)
		if d.opts.alpns != nil {
			alpns = d.opts.alpns
		}
		tc, err := transport.ClientTLS(d.opts.tlsOptions(), d.target, alpns, "")
		if err != nil {
			return nil, err
		}
		keepAlive, idle := d.liveness()
		began := time.Now()
		c, err := transport.DialQUIC[moqErrors](ctx, d.target.HostPort, tc, keepAlive, idle)
		if err != nil {
			return nil, err
		}
		nc := d.chosen(newNetConn(c, keepAlive, idle))
		nc.handshake = time.Since(began)
		return nc, nil
	case transport.SchemeDevelopment:
		// Fetched on every attempt: a restarted development relay has a
		// new certificate.
		pin, err := transport.FetchFingerprint(ctx, d.target)
		if err != nil {
			return nil, err
		}
		return d.dialWebTransport(ctx, pin)
	default:
		return d.dialWebTransport(ctx, "")
	}
}

// chosen is c with the family its negotiated token selects among the
// versions offered: an IETF token ("moq-00", "moqt-NN", or "moql" when
// only draft 14 of the legacy SETUP's versions was offered) goes to
// moq-transport, which runs its own SETUP; anything else to moq-lite,
// whose negotiation takes the version the token names, runs the legacy
// SETUP, or refuses the connection naming what it speaks.
func (d *dialer) chosen(c *netConn) *netConn {
	ch, ok := alpn.Select(c.Protocol(), alpn.Codes(d.versions))
	if !ok || ch.Family != alpn.IETF {
		ch = alpn.Choice{Family: alpn.Lite, Token: c.Protocol()}
	}
	c.choice = ch
	return c
}

func (d *dialer) dialWebTransport(ctx context.Context, pin string) (*netConn, error) {
	tc, err := transport.ClientTLS(d.opts.tlsOptions(), d.target, nil, pin)
	if err != nil {
		return nil, err
	}
	// WT-Available-Protocols: every version, in the order of the raw
	// QUIC ALPN list (moq-lite first, then the moq-transport drafts).
	protos := alpn.Tokens(d.versions)
	if d.opts.alpns != nil {
		protos = d.opts.alpns
	}
	keepAlive, idle := d.liveness()
	began := time.Now()
	c, err := transport.DialWebTransport[moqErrors](ctx, d.target.URL, d.target.HostPort, tc, protos, keepAlive, idle)
	if err != nil {
		return nil, err
	}
	nc := d.chosen(newNetConn(c, keepAlive, idle))
	nc.handshake = time.Since(began)
	return nc, nil
}
