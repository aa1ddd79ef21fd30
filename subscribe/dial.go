package subscribe

import (
	"context"
	"crypto/tls"
	"fmt"

	"github.com/moq-export/moq-export/internal/moq/lite/litesub"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
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
	versions []*wire.Version
}

// tlsOptions are the client TLS settings of o.
func (o *Options) tlsOptions() transport.TLSOptions {
	return transport.TLSOptions{Base: o.TLSConfig, RootCAs: o.RootCAs, Fingerprint: o.TLSFingerprint, Insecure: o.TLSInsecure}
}

func (d *dialer) dial(ctx context.Context) (*netConn, error) {
	switch d.target.Scheme {
	case transport.SchemeQUIC:
		alpns := wire.ALPNs(d.versions)
		if d.opts.alpns != nil {
			alpns = d.opts.alpns
		}
		tc, err := transport.ClientTLS(d.opts.tlsOptions(), d.target, alpns, "")
		if err != nil {
			return nil, err
		}
		keepAlive, idle := liveness(d.opts.KeepAlive, d.opts.IdleTimeout)
		c, err := transport.DialQUIC[moqErrors](ctx, d.target.HostPort, tc, keepAlive, idle)
		if err != nil {
			return nil, err
		}
		return d.negotiateQUIC(ctx, c)
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

// negotiateQUIC settles the version of a dialled raw QUIC connection: a
// moq-lite ALPN is the version; "moql" runs our legacy SETUP offering the
// moq-lite versions it can choose (lite-02/01), or, when those are not
// offered, is left to the moq-transport session (draft 14); an IETF ALPN
// ("moq-00", "moqt-NN") goes to the moq-transport session, which runs its
// own SETUP (Session.open).
func (d *dialer) negotiateQUIC(ctx context.Context, c transport.Conn) (*netConn, error) {
	p := c.Protocol()
	qc := newNetConn(c, d.opts.KeepAlive, d.opts.IdleTimeout)
	lite := liteVersions(d.versions)
	if ch, ok := alpn.Select(p, codes(d.versions)); ok && ch.Family == alpn.IETF {
		qc.choice = ch
		return qc, nil
	}
	v, legacy, err := litesub.SelectALPN(p, lite)
	if err == nil && legacy {
		v, qc.session, err = litesub.ClientSetup(ctx, coreConn{c: qc}, lite, d.target.SetupPath)
	}
	if err != nil {
		c.Close(CodeVersion, "version")
		return nil, fmt.Errorf("moq: %s: %w", d.target.HostPort, err)
	}
	qc.version = v
	return qc, nil
}

func (d *dialer) dialWebTransport(ctx context.Context, pin string) (*netConn, error) {
	tc, err := transport.ClientTLS(d.opts.tlsOptions(), d.target, nil, pin)
	if err != nil {
		return nil, err
	}
	// WT-Available-Protocols: every version, in the order of the raw
	// QUIC ALPN list (moq-lite first, then the moq-transport drafts).
	protos := wire.ALPNs(d.versions)
	if d.opts.alpns != nil {
		protos = d.opts.alpns
	}
	keepAlive, idle := liveness(d.opts.KeepAlive, d.opts.IdleTimeout)
	c, err := transport.DialWebTransport[moqErrors](ctx, d.target.URL, d.target.HostPort, tc, protos, keepAlive, idle)
	if err != nil {
		return nil, err
	}
	wc := newNetConn(c, keepAlive, idle)
	proto := c.Protocol()
	lite := liteVersions(d.versions)
	if ch, ok := alpn.Select(proto, codes(d.versions)); ok && ch.Family == alpn.IETF {
		// A moq-transport draft: its session runs its own SETUP
		// (Session.open).
		wc.choice = ch
		return wc, nil
	}
	v, legacy, err := litesub.SelectALPN(proto, lite)
	if err == nil && legacy {
		v, wc.session, err = litesub.ClientSetup(ctx, coreConn{c: wc}, lite, "")
	}
	if err != nil {
		wc.Close(CodeVersion, "version")
		u := *d.target.URL
		u.Scheme, u.User = "https", nil
		return nil, fmt.Errorf("moq: WebTransport to %s: %w", transport.RedactURL(u.String()), err)
	}
	wc.version = v
	return wc, nil
}
