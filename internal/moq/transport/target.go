package transport

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// ErrUnsupportedURL means a dial URL this package cannot reach: an unknown
// scheme, no host, or no URL at all.
var ErrUnsupportedURL = errors.New("moq: unsupported URL")

// Schemes of a parsed Target.
const (
	// SchemeQUIC is raw QUIC (moql:// and moqt:// URLs).
	SchemeQUIC = "moql"
	// SchemeWebTransport is WebTransport verified as TLS says.
	SchemeWebTransport = "https"
	// SchemeDevelopment is WebTransport to a development relay whose
	// certificate pin is fetched over plain HTTP first (FetchFingerprint).
	SchemeDevelopment = "http"
)

// Target is a parsed dial URL.
type Target struct {
	// URL is the URL as given.
	URL *url.URL
	// Scheme is SchemeQUIC, SchemeWebTransport or SchemeDevelopment.
	Scheme string
	// HostPort is the address dialled (port 443 when the URL names none).
	HostPort string
	// Host is the URL's host name, the TLS server name by default.
	Host string
	// SetupPath is the path and query a raw QUIC client names in its
	// SETUP ("/" at least).
	SetupPath string
}

// ParseTarget parses a dial URL: moql://, moqt://, https:// or http://.
// Its errors wrap ErrUnsupportedURL and never repeat a credential.
func ParseTarget(rawURL string) (*Target, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedURL, RedactError(err))
	}
	t := &Target{URL: u, Host: u.Hostname()}
	switch u.Scheme {
	case "moql", "moqt":
		t.Scheme = SchemeQUIC
	case "https", "http":
		t.Scheme = u.Scheme
	default:
		return nil, fmt.Errorf("%w: scheme %q", ErrUnsupportedURL, u.Scheme)
	}
	if t.Host == "" {
		return nil, fmt.Errorf("%w: no host in %s", ErrUnsupportedURL, redactURL(u))
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	t.HostPort = net.JoinHostPort(t.Host, port)
	t.SetupPath = u.EscapedPath()
	if t.SetupPath == "" {
		t.SetupPath = "/"
	}
	if u.RawQuery != "" {
		t.SetupPath += "?" + u.RawQuery
	}
	return t, nil
}

// Redacted renders the target's URL for logs, credentials replaced.
func (t *Target) Redacted() string { return redactURL(t.URL) }

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

// RedactError renders err without the URLs it repeats (url.Error does),
// credentials replaced.
func RedactError(err error) string {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		if u, perr := url.Parse(ue.URL); perr == nil {
			return ue.Op + " " + redactURL(u) + ": " + ue.Err.Error()
		}
		return ue.Op + ": " + ue.Err.Error()
	}
	return err.Error()
}
