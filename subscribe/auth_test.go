package subscribe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/ietf/ietfsub"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/token"
)

func startAuthServer(t *testing.T, key *token.Key, logs *logBuffer, maxSessions int) (*Server, string) {
	t.Helper()
	return startAuthServerAt(t, key, logs, maxSessions, nil)
}

// startAuthServerAt is startAuthServer verifying tokens at verifyAt.
func startAuthServerAt(t *testing.T, key *token.Key, logs *logBuffer, maxSessions int, verifyAt func() time.Time) (*Server, string) {
	t.Helper()
	cert, pin, err := SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := key.PublicJSON()
	if err != nil {
		pub, err = key.MarshalJSON() // HMAC: the verifier holds the secret
	}
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := token.ParseKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Listen("127.0.0.1:0", ServerOptions{Certificates: []tls.Certificate{cert}, Logger: logs.logger(),
		AuthKey: verifier, MaxSessions: maxSessions, verifyAt: verifyAt})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, pin
}

// authTransport is one way a client reaches the server and carries its
// token there.
type authTransport struct {
	name   string
	scheme string
	opts   Options
	ietf   bool
	// noToken: the version cannot carry a token, so even a valid one is
	// refused.
	noToken bool
}

var authTransports = []authTransport{
	{name: "webtransport-lite-05", scheme: "https", opts: Options{Versions: []string{"lite-05"}}},
	{name: "quic-lite-05", scheme: "moql", opts: Options{Versions: []string{"lite-05"}}},
	{name: "quic-lite-02-legacy-setup", scheme: "moql", opts: Options{Versions: []string{"lite-02"}}},
	{name: "quic-ietf-draft-14", scheme: "moqt", opts: Options{alpns: []string{ietf.Draft14.ALPN()}}, ietf: true},
	{name: "quic-ietf-draft-20", scheme: "moqt", opts: Options{alpns: []string{"moqt-20"}}, ietf: true},
	// The token only in SETUP's AUTHORIZATION TOKEN parameter, not in the
	// SETUP Path's query.
	{name: "quic-ietf-draft-22-token-parameter", scheme: "moqt", opts: Options{alpns: []string{"moqt-22"}, tokenParamOnly: true}, ietf: true},
	{name: "quic-lite-04", scheme: "moql", opts: Options{Versions: []string{"lite-04"}}, noToken: true},
}

// TestServerAuthRefusals: every transport refuses a missing, wrong-key,
// expired or other-root token with code 6 (moq-transport's UNAUTHORIZED,
// 0x2, on an IETF session), which the client reports as a *RefusedError
// wrapping ErrUnauthorized; the server logs who and why, and never logs
// the token.
func TestServerAuthRefusals(t *testing.T) {
	key, err := token.Generate("ES256")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := token.Generate("ES256")
	sign := func(k *token.Key, c token.Claims) string {
		s, err := k.Sign(c)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tr := range authTransports {
		t.Run(tr.name, func(t *testing.T) {
			checkGoroutines(t)
			logs := &logBuffer{}
			srv, pin := startAuthServer(t, key, logs, 0)
			cases := []struct {
				name, jwt, reason string
			}{
				{"missing", "", "no token"},
				{"wrong key", sign(other, token.Claims{Root: "demo", Put: token.Paths{""}}), "signature"},
				{"expired", sign(key, token.Claims{Root: "demo", Put: token.Paths{""}, Expires: time.Now().Add(-time.Minute).Unix()}), "expired"},
				{"other root", sign(key, token.Claims{Root: "elsewhere", Put: token.Paths{""}}), "outside the token's root"},
				{"malformed", "not.a-token", "not a JWT"},
			}
			if tr.noToken {
				cases = append(cases, struct{ name, jwt, reason string }{"valid but uncarried", sign(key, token.Claims{Root: "demo", Put: token.Paths{""}}), "no SETUP to carry a token"})
			}
			for i, tc := range cases {
				url := fmt.Sprintf("%s://%s/demo", tr.scheme, srv.Addr())
				if tc.jwt != "" {
					url += "?jwt=" + tc.jwt
				}
				opts := tr.opts
				opts.TLSFingerprint, opts.Logger, opts.Role = pin, testLogger(t), RolePublisher
				opts.Reconnect.Disabled = true
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				client, err := Dial(ctx, url, opts)
				if err == nil {
					select {
					case <-client.Done():
					case <-ctx.Done():
						t.Fatalf("%s: the session was not closed", tc.name)
					}
					err = client.Err()
					client.Close()
				}
				cancel()
				want := uint64(CodeUnauthorized)
				if tr.ietf {
					want = ietfsub.CodeUnauthorized
				}
				if ce, ok := errors.AsType[*CloseError](err); !ok || ce.Code != want {
					t.Errorf("%s: client saw %v, want a close with code %d", tc.name, err, want)
				}
				if _, ok := errors.AsType[*RefusedError](err); !ok || !errors.Is(err, ErrUnauthorized) {
					t.Errorf("%s: client saw %v, want a *RefusedError wrapping ErrUnauthorized", tc.name, err)
				}
				// The server's log says who and why, once per refusal.
				waitFor(t, tc.name+" refusal logged", func() bool {
					return strings.Count(logs.String(), "refused a session") == i+1
				})
				line := lastLine(logs.String(), "refused a session")
				wants := []string{"remote=127.0.0.1:", "path=demo", tc.reason}
				if tr.noToken {
					// Neither path nor token travel.
					wants = []string{"remote=127.0.0.1:", `path=""`, "no SETUP to carry a token"}
				}
				for _, want := range wants {
					if !strings.Contains(line, want) {
						t.Errorf("%s: refusal log %q lacks %q", tc.name, line, want)
					}
				}
			}
			for _, tc := range cases {
				if tc.jwt != "" && strings.Contains(logs.String(), tc.jwt) {
					t.Fatalf("the server logged a token:\n%s", logs)
				}
			}
		})
	}
}

func lastLine(logs, substr string) string {
	lines := strings.Split(logs, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], substr) {
			return lines[i]
		}
	}
	return ""
}

// TestServerAuthAdmitsWhatTheTokenAllows: a valid token is admitted on
// every transport that carries it; of two published broadcasts only the
// one its "put" names is announced to the recorder, the other is refused
// and logged.
func TestServerAuthAdmitsWhatTheTokenAllows(t *testing.T) {
	key, err := token.Generate("HS256")
	if err != nil {
		t.Fatal(err)
	}
	for _, grant := range []struct {
		name   string
		claims token.Claims
	}{
		{"put", token.Claims{Root: "demo", Put: token.Paths{"cam"}}},
		// The newer tokens' patterns: "cam" is that broadcast alone.
		{"publish pattern", token.Claims{Root: "demo", Publish: token.Paths{"cam"}, Subscribe: token.Paths{"nothing-here/**"}}},
	} {
		grant.claims.Expires = time.Now().Add(time.Hour).Unix()
		jwt, err := key.Sign(grant.claims)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range authTransports {
			if tr.noToken {
				continue
			}
			t.Run(grant.name+"/"+tr.name, func(t *testing.T) {
				checkGoroutines(t)
				logs := &logBuffer{}
				srv, pin := startAuthServer(t, key, logs, 0)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				opts := tr.opts
				opts.TLSFingerprint, opts.Logger, opts.Role = pin, testLogger(t), RolePublisher
				client, peer := dialAndAccept(t, ctx, srv, fmt.Sprintf("%s://%s/demo?jwt=%s", tr.scheme, srv.Addr(), jwt), opts)
				defer client.Close()
				if peer.Path() != "demo" {
					t.Fatalf("path %q", peer.Path())
				}
				for _, name := range []string{"other", "cam"} {
					if err := client.Publish(model.NewBroadcast(name)); err != nil {
						t.Fatal(err)
					}
				}
				ann, err := peer.Announced(ctx, "")
				if err != nil {
					t.Fatal(err)
				}
				defer ann.Close()
				a, err := ann.Next(ctx)
				if err != nil || a.Path != "cam" || !a.Active {
					t.Fatalf("announcement %+v %v, want cam", a, err)
				}
				waitFor(t, "the refusal of other", func() bool {
					return strings.Contains(logs.String(), "does not allow publishing it") && strings.Contains(logs.String(), "broadcast=other")
				})
				if got := ann.Active(); !slices.Equal(got, []string{"cam"}) {
					t.Fatalf("active %q, want only cam", got)
				}
				if _, err := peer.Broadcast("other").Track("video"); !errors.Is(err, ErrUnauthorized) {
					t.Fatalf("a track of a refused broadcast: %v", err)
				}
				if strings.Contains(logs.String(), jwt) {
					t.Fatalf("the server logged the token:\n%s", logs)
				}
			})
		}
	}
}

// TestServerAuthRole: a subscribe-only token is refused to a client that
// declares the publisher role (lite-05 SETUP), as the reference does, and
// admitted for one that declares the subscriber role, which then may not
// publish anything.
func TestServerAuthRole(t *testing.T) {
	checkGoroutines(t)
	key, _ := token.Generate("HS256")
	jwt, _ := key.Sign(token.Claims{Root: "demo", Get: token.Paths{""}})
	logs := &logBuffer{}
	srv, pin := startAuthServer(t, key, logs, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i, scheme := range []string{"moql", "https"} {
		url := fmt.Sprintf("%s://%s/demo?jwt=%s", scheme, srv.Addr(), jwt)
		opts := Options{TLSFingerprint: pin, Logger: testLogger(t), Versions: []string{"lite-05"}, Role: RolePublisher}
		opts.Reconnect.Disabled = true
		client, err := Dial(ctx, url, opts)
		if err != nil {
			t.Fatal(err)
		}
		<-client.Done()
		if ce, ok := errors.AsType[*CloseError](client.Err()); !ok || ce.Code != CodeUnauthorized {
			t.Fatalf("%s: publisher role with a subscribe-only token: %v", scheme, client.Err())
		}
		client.Close()
		waitFor(t, "the refusal", func() bool { return strings.Count(logs.String(), "declared the publisher role") == i+1 })
		opts.Role = RoleSubscriber
		client, peer := dialAndAccept(t, ctx, srv, url, opts)
		if peer.mayPublish("anything") {
			t.Fatalf("%s: a subscribe-only session may publish", scheme)
		}
		client.Close()
		peer.Close()
	}
}

// TestServerAuthExpiryClosesTheSession: an admitted session is closed with
// code 6 when its token expires.
func TestServerAuthExpiryClosesTheSession(t *testing.T) {
	checkGoroutines(t)
	key, _ := token.Generate("HS256")
	// Verified an hour before its exp, the token is admitted; its expiry
	// timer, on the real clock, finds it expired already: no waiting.
	exp := time.Now().Add(-time.Second)
	jwt, _ := key.Sign(token.Claims{Put: token.Paths{""}, Expires: exp.Unix()})
	logs := &logBuffer{}
	srv, pin := startAuthServerAt(t, key, logs, 0, func() time.Time { return exp.Add(-time.Hour) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	opts := Options{TLSFingerprint: pin, Logger: testLogger(t), Role: RolePublisher}
	opts.Reconnect.Disabled = true
	client, peer := dialAndAccept(t, ctx, srv, fmt.Sprintf("https://%s/?jwt=%s", srv.Addr(), jwt), opts)
	defer client.Close()
	select {
	case <-client.Done():
	case <-ctx.Done():
		t.Fatal("the session outlived its token")
	}
	if ce, ok := errors.AsType[*CloseError](client.Err()); !ok || ce.Code != CodeUnauthorized {
		t.Fatalf("client: %v", client.Err())
	}
	<-peer.Done()
	if !errors.Is(peer.Err(), token.ErrExpired) {
		t.Fatalf("peer: %v", peer.Err())
	}
}

// TestServerMaxSessions: one session more than MaxSessions is refused with
// CodeTooMany and logged; the admitted one goes on, and a place frees up
// when it ends.
func TestServerMaxSessions(t *testing.T) {
	checkGoroutines(t)
	logs := &logBuffer{}
	cert, pin, err := SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Listen("127.0.0.1:0", ServerOptions{Certificates: []tls.Certificate{cert}, Logger: logs.logger(), MaxSessions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	url := fmt.Sprintf("https://%s/", srv.Addr())
	opts := Options{TLSFingerprint: pin, Logger: testLogger(t)}
	opts.Reconnect.Disabled = true
	first, peer := dialAndAccept(t, ctx, srv, url, opts)
	second, err := Dial(ctx, url, opts)
	if err != nil {
		t.Fatal(err)
	}
	<-second.Done()
	if ce, ok := errors.AsType[*CloseError](second.Err()); !ok || ce.Code != CodeTooMany {
		t.Fatalf("second session: %v", second.Err())
	}
	second.Close()
	if !strings.Contains(logs.String(), "too many sessions") || !strings.Contains(logs.String(), "remote=127.0.0.1:") {
		t.Fatalf("log:\n%s", logs)
	}
	if peer.Err() != nil || first.Err() != nil {
		t.Fatalf("the admitted session ended: %v / %v", peer.Err(), first.Err())
	}
	first.Close()
	<-peer.Done()
	waitFor(t, "the place to free up", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.admitted == 0
	})
	third, peer3 := dialAndAccept(t, ctx, srv, url, opts)
	third.Close()
	peer3.Close()
}
