package token

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

var now = time.Unix(1_800_000_000, 0)

func mustGenerate(t testing.TB, alg string) *Key {
	t.Helper()
	k, err := Generate(alg)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// reload writes k as a verifier would get it (the public half for an
// asymmetric key, the secret itself for HMAC) and parses it back.
func reload(t testing.TB, k *Key) *Key {
	t.Helper()
	var js []byte
	var err error
	if algorithms[k.Algorithm()] == "oct" {
		js, err = k.MarshalJSON()
	} else {
		js, err = k.PublicJSON()
	}
	if err != nil {
		t.Fatal(err)
	}
	v, err := ParseKey(js)
	if err != nil {
		t.Fatalf("ParseKey(%s): %v", js, err)
	}
	return v
}

func TestSignVerifyEveryAlgorithm(t *testing.T) {
	for _, alg := range Algorithms() {
		t.Run(alg, func(t *testing.T) {
			k := mustGenerate(t, alg)
			v := reload(t, k)
			if alg != "HS256" && alg != "HS384" && alg != "HS512" && v.Private() {
				t.Fatal("the public half can sign")
			}
			tok, err := k.Sign(Claims{Root: "demo", Put: Paths{"cam"}, Expires: now.Unix() + 60})
			if err != nil {
				t.Fatal(err)
			}
			c, err := v.Verify(tok, now)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if c.Root != "demo" || !slices.Equal(c.Put, Paths{"cam"}) || c.Expires != now.Unix()+60 {
				t.Fatalf("claims %+v", c)
			}
			// Another key of the same algorithm refuses it.
			other := reload(t, mustGenerate(t, alg))
			if _, err := other.Verify(tok, now); !errors.Is(err, ErrSignature) {
				t.Fatalf("other key: %v, want ErrSignature", err)
			}
		})
	}
}

func TestVerifyRefusals(t *testing.T) {
	k := mustGenerate(t, "HS256")
	sign := func(c Claims) string {
		tok, err := k.Sign(c)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	good := sign(Claims{Root: "r", Put: Paths{""}})
	h, rest, _ := strings.Cut(good, ".")
	p, sig, _ := strings.Cut(rest, ".")
	b64 := base64.RawURLEncoding.EncodeToString
	useless := b64([]byte(`{"root":"r"}`))
	// Same secret, other HMAC algorithm in the header.
	hs384 := b64([]byte(`{"alg":"HS384","typ":"JWT"}`))
	none := b64([]byte(`{"alg":"none","typ":"JWT"}`))
	for _, tc := range []struct {
		name string
		tok  string
		want error
	}{
		{"missing", "", ErrMissing},
		{"too long", strings.Repeat("a", MaxLength+1), ErrTooLong},
		{"two parts", h + "." + p, ErrMalformed},
		{"four parts", good + ".x", ErrMalformed},
		{"not base64url", h + ".p+q." + sig, ErrMalformed},
		{"empty header", "." + p + "." + sig, ErrMalformed},
		{"flipped signature", h + "." + p + "." + flip(sig), ErrSignature},
		{"payload swapped", h + "." + useless + "." + sig, ErrSignature},
		{"alg none", none + "." + p + ".", ErrSignature},
		{"alg HS384 on an HS256 key", hs384 + "." + p + "." + sig, ErrSignature},
		{"expired", sign(Claims{Root: "r", Put: Paths{""}, Expires: now.Unix() - 1}), ErrExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := k.Verify(tc.tok, now)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Verify: %v, want %v", err, tc.want)
			}
			if tc.tok != "" && strings.Contains(err.Error(), tc.tok) || len(sig) > 8 && strings.Contains(err.Error(), sig) {
				t.Fatalf("the error quotes the token: %v", err)
			}
		})
	}
	if _, err := k.Verify(sign(Claims{Root: "r", Get: Paths{"x"}, Expires: now.Unix()}), now); err != nil {
		t.Fatalf("a token is valid up to its exp second: %v", err)
	}
	if _, err := k.Sign(Claims{Root: "r"}); !errors.Is(err, ErrUseless) {
		t.Fatalf("Sign without grants: %v", err)
	}
}

func flip(s string) string {
	b := []byte(s)
	if b[0] == 'A' {
		b[0] = 'B'
	} else {
		b[0] = 'A'
	}
	return string(b)
}

func TestParseKeyForms(t *testing.T) {
	secret := base64.RawURLEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	short := base64.RawURLEncoding.EncodeToString([]byte("short"))
	full := fmt.Sprintf(`{"kty":"oct","alg":"HS256","k":%q,"kid":"abc","key_ops":["sign","verify"]}`, secret)
	for _, tc := range []struct {
		name, key string
		ok        bool
	}{
		{"json", full, true},
		{"base64url json (the Rust CLI's default)", base64.RawURLEncoding.EncodeToString([]byte(full)), true},
		{"legacy oct without kty", fmt.Sprintf(`{"alg":"HS256","k":%q}`, secret), true},
		{"surrounding whitespace", "\n " + full + "\n", true},
		{"short secret", fmt.Sprintf(`{"kty":"oct","alg":"HS256","k":%q}`, short), false},
		{"oct with ES256", fmt.Sprintf(`{"kty":"oct","alg":"ES256","k":%q}`, secret), false},
		{"unknown alg", fmt.Sprintf(`{"kty":"oct","alg":"HS1","k":%q}`, secret), false},
		{"EC on the wrong curve", `{"kty":"EC","alg":"ES256","crv":"P-384","x":"AA","y":"AA"}`, false},
		{"EC off the curve", `{"kty":"EC","alg":"ES256","crv":"P-256","x":"AQ","y":"AQ"}`, false},
		{"scope granting nothing", fmt.Sprintf(`{"kty":"oct","alg":"HS256","k":%q,"scope":{"root":"x"}}`, secret), false},
		{"not json", "{", false},
		{"array", "[]", false},
		{"empty", "", false},
		{"kty a number", `{"kty":1,"alg":"HS256"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := ParseKey([]byte(tc.key))
			if tc.ok != (err == nil) {
				t.Fatalf("ParseKey: %v, want ok=%v", err, tc.ok)
			}
			if err != nil {
				if !errors.Is(err, ErrKey) {
					t.Fatalf("error %v does not wrap ErrKey", err)
				}
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("the error quotes the secret: %v", err)
				}
				return
			}
			tok, err := k.Sign(Claims{Put: Paths{""}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := k.Verify(tok, now); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestVerifyOnlyKey(t *testing.T) {
	k := mustGenerate(t, "ES256")
	js, _ := k.PublicJSON()
	var m map[string]any
	_ = json.Unmarshal(js, &m)
	m["key_ops"] = []string{"sign"}
	js, _ = json.Marshal(m)
	v, err := ParseKey(js)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := k.Sign(Claims{Put: Paths{""}})
	if _, err := v.Verify(tok, now); !errors.Is(err, ErrKey) {
		t.Fatalf("a key without verify in key_ops verified: %v", err)
	}
	if _, err := reload(t, k).Sign(Claims{Put: Paths{""}}); !errors.Is(err, ErrKey) {
		t.Fatalf("a public key signed: %v", err)
	}
}

func TestScope(t *testing.T) {
	k := mustGenerate(t, "HS256")
	k.scope = &Scope{Root: "project", Put: []string{"live"}, Get: []string{"watch"}}
	for _, tc := range []struct {
		name string
		c    Claims
		want error
	}{
		{"inside", Claims{Root: "project/live/room", Put: Paths{""}}, nil},
		{"split differently", Claims{Put: Paths{"project/live/room"}, Get: Paths{"project/watch"}}, nil},
		{"sibling", Claims{Root: "project/lively", Put: Paths{""}}, ErrScope},
		{"role escalation", Claims{Root: "project/live", Get: Paths{""}}, ErrScope},
		{"above the root", Claims{Put: Paths{""}}, ErrScope},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := k.Sign(tc.c)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Sign: %v, want %v", err, tc.want)
			}
		})
	}
	// A verifier with the scope refuses a token signed without it.
	free := *k
	free.scope = nil
	tok, _ := free.Sign(Claims{Put: Paths{""}})
	if _, err := k.Verify(tok, now); !errors.Is(err, ErrScope) {
		t.Fatalf("Verify: %v, want ErrScope", err)
	}
}

func TestPathsClaim(t *testing.T) {
	for _, tc := range []struct {
		js   string
		want Paths
		ok   bool
	}{
		{`{"put":"a"}`, Paths{"a"}, true},
		{`{"put":["a","b"]}`, Paths{"a", "b"}, true},
		{`{"put":[]}`, Paths{}, true},
		{`{"put":1}`, nil, false},
		{`{"put":[1]}`, nil, false},
	} {
		var c Claims
		err := json.Unmarshal([]byte(tc.js), &c)
		if tc.ok != (err == nil) || tc.ok && !slices.Equal(c.Put, tc.want) {
			t.Errorf("%s: %v %v", tc.js, c.Put, err)
		}
	}
}

// The examples of the reference's auth documentation, and its connection
// path rules.
func TestAuthorize(t *testing.T) {
	for _, tc := range []struct {
		root     string
		put, get Paths
		path     string
		pub, sub []string
		err      error
	}{
		{"demo", Paths{"my-stream"}, Paths{""}, "demo", []string{"my-stream"}, []string{""}, nil},
		{"demo", Paths{"my-stream"}, Paths{""}, "/demo/", []string{"my-stream"}, []string{""}, nil},
		{"rooms/123", Paths{"alice"}, Paths{""}, "rooms/123", []string{"alice"}, []string{""}, nil},
		{"", Paths{""}, nil, "", []string{""}, nil, nil},
		{"", nil, Paths{""}, "anything", nil, []string{""}, nil},
		// The path extends the root: grants narrow.
		{"demo", Paths{"room/cam", "other"}, nil, "demo/room", []string{"cam"}, nil, nil},
		{"demo", Paths{"room"}, nil, "demo/room/cam", []string{""}, nil, nil},
		// The path is a parent of the root: grants stay anchored.
		{"demo", Paths{"my-stream"}, nil, "", []string{"demo/my-stream"}, nil, nil},
		// Unrelated, or on a non-segment boundary.
		{"demo", Paths{""}, nil, "other", nil, nil, ErrRoot},
		{"demo", Paths{""}, nil, "demos", nil, nil, ErrRoot},
		// Related but nothing left.
		{"demo", Paths{"a"}, nil, "demo/b", nil, nil, ErrNoAccess},
	} {
		c := Claims{Root: tc.root, Put: tc.put, Get: tc.get}
		p, err := c.Authorize(tc.path)
		if !errors.Is(err, tc.err) {
			t.Errorf("%+v at %q: %v, want %v", c, tc.path, err, tc.err)
			continue
		}
		if err == nil && (!slices.Equal(p.Publish, tc.pub) || !slices.Equal(p.Subscribe, tc.sub)) {
			t.Errorf("%+v at %q: %+v, want publish %q subscribe %q", c, tc.path, p, tc.pub, tc.sub)
		}
	}
}

func TestPermissions(t *testing.T) {
	p := Permissions{Publish: []string{"cam", "live/a"}, Subscribe: []string{""}}
	for _, tc := range []struct {
		path string
		pub  bool
	}{
		{"cam", true}, {"/cam/", true}, {"cam/hd", true}, {"camera", false},
		{"live/a", true}, {"live", false}, {"live/b", false}, {"", false},
	} {
		if got := p.CanPublish(tc.path); got != tc.pub {
			t.Errorf("CanPublish(%q) = %v", tc.path, got)
		}
		if !p.CanSubscribe(tc.path) {
			t.Errorf("CanSubscribe(%q) = false with an empty grant", tc.path)
		}
	}
	if (Permissions{Subscribe: []string{""}}).CanPublish("x") {
		t.Error("a subscribe-only grant publishes")
	}
}

func TestFromQuery(t *testing.T) {
	for q, want := range map[string]string{
		"":                   "",
		"jwt=abc":            "abc",
		"x=1&jwt=abc&y=2":    "abc",
		"jwt=a&jwt=b":        "b",
		"jwt=a&jwt=":         "a",
		"jwt=":               "",
		"notjwt=a":           "",
		"jwt=a%2Eb":          "a.b",
		"jwt=a;b":            "",
		"jwtx=a&%zz=1&jwt=b": "b",
	} {
		if got := FromQuery(q); got != want {
			t.Errorf("FromQuery(%q) = %q, want %q", q, got, want)
		}
	}
}
