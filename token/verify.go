package token

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jws"
)

// MaxLength bounds the tokens Verify parses, in bytes: a token of the
// reference is a few hundred bytes (RSA 4096 signatures about 900), so
// anything longer is refused before it is decoded.
const MaxLength = 4096

// Why a token was refused. Key.Verify and Claims.Authorize wrap one of
// these; none of their errors contains the token.
var (
	ErrMissing   = errors.New("token: no token")
	ErrTooLong   = fmt.Errorf("token: longer than %d bytes", MaxLength)
	ErrMalformed = errors.New("token: not a JWT")
	ErrSignature = errors.New("token: signature does not verify with the key (wrong key or algorithm)")
	ErrExpired   = errors.New("token: expired")
	ErrUseless   = errors.New("token: grants neither publish nor subscribe")
	ErrScope     = errors.New("token: grants more than the key's scope allows")
	ErrRoot      = errors.New("token: the path is outside the token's root")
	ErrNoAccess  = errors.New("token: grants nothing at this path")
)

// Paths is a "put" or "get" claim: one path or a list of them. The empty
// path grants everything under the root; no path grants nothing.
type Paths []string

// UnmarshalJSON takes a string or an array of strings.
func (p *Paths) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*p = Paths{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("a path or a list of paths")
	}
	*p = many
	return nil
}

// Claims are a token's payload.
type Claims struct {
	// Root is the path Put and Get are relative to ("" is the top).
	Root string `json:"root"`
	// Put lists what the bearer may publish, Get what it may subscribe to:
	// each a path and everything beneath it.
	Put Paths `json:"put,omitempty"`
	Get Paths `json:"get,omitempty"`
	// Publish and Subscribe are the newer tokens' grants, beside or
	// instead of Put and Get: path patterns relative to Root ("room" is
	// that broadcast, "room/**" the room and everything beneath it, "*"
	// one segment, "pre*suf" one segment with that start and end, "**"
	// any run of segments, at most once).
	Publish   Paths `json:"publish,omitempty"`
	Subscribe Paths `json:"subscribe,omitempty"`
	// Expires and Issued are Unix seconds (0: none).
	Expires int64 `json:"exp,omitempty"`
	Issued  int64 `json:"iat,omitempty"`
}

// ExpiresAt returns the expiry (zero without one).
func (c *Claims) ExpiresAt() time.Time {
	if c.Expires == 0 {
		return time.Time{}
	}
	return time.Unix(c.Expires, 0)
}

// FromQuery returns the jwt parameter of a URL query (rawQuery, without
// "?"): the last non-empty one, as the reference relay takes it; "" when
// there is none.
func FromQuery(rawQuery string) string {
	if !strings.Contains(rawQuery, "jwt") {
		return ""
	}
	v, err := url.ParseQuery(rawQuery)
	if err != nil && v == nil {
		return ""
	}
	tok := ""
	for _, s := range v["jwt"] {
		if s != "" {
			tok = s
		}
	}
	return tok
}

// Verify checks a token against the key at time now and returns its
// claims. The errors wrap ErrMissing, ErrTooLong, ErrMalformed,
// ErrSignature, ErrExpired, ErrUseless or ErrScope.
func (k *Key) Verify(tok string, now time.Time) (*Claims, error) {
	switch {
	case tok == "":
		return nil, ErrMissing
	case len(tok) > MaxLength:
		return nil, ErrTooLong
	case !compactJWS(tok):
		return nil, ErrMalformed
	case !slices.Contains(k.ops, "verify"):
		return nil, fmt.Errorf("%w: its key_ops do not allow verify", ErrKey)
	}
	payload, err := jws.Verify([]byte(tok), jws.WithKey(k.alg, k.verify), jws.WithAlgorithmMatch(true), jws.WithCompact())
	if err != nil {
		return nil, ErrSignature
	}
	var c Claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, fmt.Errorf("%w: its claims are not moq-token claims", ErrMalformed)
	}
	if c.Expires != 0 && now.After(time.Unix(c.Expires, 0)) {
		return nil, fmt.Errorf("%w at %s", ErrExpired, time.Unix(c.Expires, 0).UTC().Format(time.RFC3339))
	}
	if err := c.check(k.scope); err != nil {
		return nil, err
	}
	return &c, nil
}

// check refuses claims that grant nothing (ErrUseless), carry a pattern
// that does not parse (ErrMalformed wrapping ErrPattern) or grant more
// than the key's scope (ErrScope): a pattern lies within the scope when
// the literal segments it starts with do.
func (c *Claims) check(scope *Scope) error {
	if len(c.Put) == 0 && len(c.Get) == 0 && len(c.Publish) == 0 && len(c.Subscribe) == 0 {
		return ErrUseless
	}
	pub, err := parsePatterns(c.Root, c.Publish)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	sub, err := parsePatterns(c.Root, c.Subscribe)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if scope == nil {
		return nil
	}
	if !covers(scope.Root, scope.Put, c.Root, c.Put) || !covers(scope.Root, scope.Get, c.Root, c.Get) ||
		!covers(scope.Root, scope.Put, "", heads(pub)) || !covers(scope.Root, scope.Get, "", heads(sub)) {
		return ErrScope
	}
	return nil
}

func heads(ps []pattern) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.head()
	}
	return out
}

// compactJWS reports whether tok has the shape of a compact JWS: three
// base64url parts, the first two non-empty.
func compactJWS(tok string) bool {
	dots := 0
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case c == '.':
			dots++
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	if dots != 2 {
		return false
	}
	h, rest, _ := strings.Cut(tok, ".")
	p, _, _ := strings.Cut(rest, ".")
	return h != "" && p != ""
}

// Sign mints a token with the claims (the key must be private). The header
// names the key's kid, as the reference's tokens do.
func (k *Key) Sign(c Claims) (string, error) {
	if !k.Private() {
		return "", fmt.Errorf("%w: this key cannot sign (no private material, or key_ops without sign)", ErrKey)
	}
	if err := c.check(k.scope); err != nil {
		return "", err
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("token: encoding claims: %w", err)
	}
	hdr := jws.NewHeaders()
	_ = hdr.Set("typ", "JWT")
	if k.kid != "" {
		_ = hdr.Set("kid", k.kid)
	}
	out, err := jws.Sign(payload, jws.WithKey(k.alg, k.sign, jws.WithProtectedHeaders(hdr)))
	if err != nil {
		return "", fmt.Errorf("token: signing: %w", err)
	}
	return string(out), nil
}
