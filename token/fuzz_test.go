package token

import (
	"errors"
	"strings"
	"testing"
)

// FuzzVerify feeds arbitrary tokens to Verify: never a panic, a refusal
// for anything not signed with the key, ErrTooLong before any decoding
// past MaxLength, and no error that quotes the token.
func FuzzVerify(f *testing.F) {
	hs := mustGenerate(f, "HS256")
	es := reload(f, mustGenerate(f, "ES256"))
	good, err := hs.Sign(Claims{Root: "r", Put: Paths{"a"}, Get: Paths{""}})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		good, "", ".", "..", "a.b.c", good + "x", strings.Repeat("A", MaxLength+1),
		"eyJhbGciOiJub25lIn0.eyJwdXQiOiIifQ.",
		"eyJhbGciOiJIUzI1NiJ9.eyJwdXQiOlsxXX0.AAAA",
		"eyJhbGciOiJIUzI1NiJ9.bnVsbA.AAAA",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		for _, k := range []*Key{hs, es} {
			c, err := k.Verify(tok, now)
			if err == nil {
				if tok != good {
					t.Fatalf("accepted a token nobody signed: %q -> %+v", tok, c)
				}
				continue
			}
			if len(tok) > MaxLength && !errors.Is(err, ErrTooLong) {
				t.Fatalf("a %d-byte token got %v, want ErrTooLong", len(tok), err)
			}
			if len(tok) >= 16 && strings.Contains(err.Error(), tok) {
				t.Fatalf("the error quotes the token: %v", err)
			}
		}
		_ = FromQuery(tok)
	})
}

// FuzzParseKey feeds arbitrary key files to ParseKey: an error or a key
// that verifies, never a panic.
func FuzzParseKey(f *testing.F) {
	for _, alg := range []string{"HS256", "ES256", "EdDSA"} {
		js, err := mustGenerate(f, alg).MarshalJSON()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(js)
	}
	f.Add([]byte(`{"alg":"HS256","k":"AAAA"}`))
	f.Add([]byte(`eyJhbGciOiJIUzI1NiJ9`))
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := ParseKey(data)
		if err != nil {
			if !errors.Is(err, ErrKey) {
				t.Fatalf("error %v does not wrap ErrKey", err)
			}
			return
		}
		if _, err := k.Verify("eyJhbGciOiJIUzI1NiJ9.eyJwdXQiOiIifQ.AAAA", now); err == nil {
			t.Fatal("a garbage signature verified")
		}
	})
}

// FuzzPattern feeds arbitrary publish/subscribe patterns and paths to the
// parser and the matcher: never a panic, a pattern without a wildcard
// matches its own text and reaches every path before it, and "reaches"
// holds wherever "matches" does.
func FuzzPattern(f *testing.F) {
	for _, s := range []string{"", "a", "room/**", "*/chat", "cam-*-hd", "org/**/public", "/a", "a//b", "**/**", "a*b*c", "**"} {
		f.Add(s, "room/a")
	}
	f.Fuzz(func(t *testing.T, text, path string) {
		p, err := parsePattern(text)
		if err != nil {
			if !errors.Is(err, ErrPattern) {
				t.Fatalf("%q: %v, want ErrPattern", text, err)
			}
			return
		}
		if !strings.Contains(text, "*") {
			if !p.matches(text) {
				t.Fatalf("%q does not match its own text", text)
			}
			if i := strings.LastIndexByte(text, '/'); i > 0 && !p.reaches(text[:i]) {
				t.Fatalf("%q does not reach %q", text, text[:i])
			}
		}
		if p.matches(path) && !p.reaches(path) {
			t.Fatalf("%q matches %q but does not reach it", text, path)
		}
	})
}
