package interop

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
	"github.com/moq-export/moq-export/token"
)

// The token interop tests: keys and tokens minted by @moq/token 0.2.3 (the
// reference's npm package, src/token.ts) admitted or refused by our
// --listen server (subscribe.ServerOptions.AuthKey) as their claims say,
// with our own publisher and with @moq/net's as publishers.

// mintedKey is a key @moq/token generated, written as files.
type mintedKey struct {
	private string // the signing JWK file
	verify  string // what the server is given: the public JWK, or the HMAC secret
}

func mintKey(ctx context.Context, t *testing.T, ref *reference, alg string) mintedKey {
	t.Helper()
	p := ref.start(ctx, t, "token", "generate", "--algorithm", alg)
	ev := p.expect(ctx, "key", nil)
	p.wait(ctx)
	dir := t.TempDir()
	k := mintedKey{private: filepath.Join(dir, "private.jwk"), verify: filepath.Join(dir, "verify.jwk")}
	pub := ev.Message
	if pub == "" {
		pub = ev.JSON // HMAC: the verifier holds the secret
	}
	if err := os.WriteFile(k.private, []byte(ev.JSON), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(k.verify, []byte(pub), 0o600); err != nil {
		t.Fatal(err)
	}
	return k
}

func mintToken(ctx context.Context, t *testing.T, ref *reference, k mintedKey, claims map[string]any) string {
	t.Helper()
	js, _ := json.Marshal(claims)
	p := ref.start(ctx, t, "token", "sign", "--key", k.private, "--claims", string(js))
	ev := p.expect(ctx, "token", nil)
	p.wait(ctx)
	return ev.Message
}

// waitLog waits until the log has n lines with every want.
func waitLog(ctx context.Context, t *testing.T, logs *lockedBuffer, n int, want ...string) {
	t.Helper()
	for {
		count := 0
		for _, line := range strings.Split(logs.String(), "\n") {
			all := line != ""
			for _, w := range want {
				all = all && strings.Contains(line, w)
			}
			if all {
				count++
			}
		}
		if count >= n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no %d log lines with %q:\n%s", n, want, logs)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// authServer is our server with --auth-key set to k's verifying file.
func authServer(t *testing.T, k mintedKey) (*subscribe.Server, *testCert, *lockedBuffer) {
	t.Helper()
	key, err := token.LoadKey(k.verify)
	if err != nil {
		t.Fatalf("our server cannot read the key @moq/token made: %v", err)
	}
	tlsCert, cert := ourCert(t)
	logs := &lockedBuffer{}
	srv, err := subscribe.Listen("127.0.0.1:0", subscribe.ServerOptions{
		Certificates: []tls.Certificate{tlsCert}, AuthKey: key,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, cert, logs
}

// tokenCases are the claims of the interop cases: what the token says and
// what our server must do with a publisher of broadcast "alice" at /demo.
type tokenCase struct {
	name   string
	claims map[string]any // nil: no token
	other  bool           // signed with another @moq/token key
	admit  bool           // the session is admitted
	record bool           // and alice is recorded
	reason string         // the refusal's reason in the log
}

// mintFor mints tc's token ("" for none) with k, or other for a wrong key.
func mintFor(ctx context.Context, t *testing.T, ref *reference, tc tokenCase, k, other mintedKey) string {
	t.Helper()
	if tc.claims == nil {
		return ""
	}
	if tc.other {
		k = other
	}
	return mintToken(ctx, t, ref, k, tc.claims)
}

func tokenCases() []tokenCase {
	hour := time.Now().Add(time.Hour).Unix()
	return []tokenCase{
		{name: "valid", claims: map[string]any{"root": "demo", "put": []string{"alice"}, "exp": hour}, admit: true, record: true},
		{name: "missing", reason: "no token"},
		{name: "wrong key", claims: map[string]any{"root": "demo", "put": []string{""}}, other: true, reason: "signature does not verify"},
		{name: "expired", claims: map[string]any{"root": "demo", "put": []string{""}, "exp": time.Now().Add(-time.Minute).Unix()}, reason: "expired"},
		{name: "other root", claims: map[string]any{"root": "elsewhere", "put": []string{""}}, reason: "outside the token's root"},
		{name: "other path", claims: map[string]any{"root": "demo", "put": []string{"bob"}}, admit: true},
		// Our publisher declares the publisher role (lite-05 SETUP): refused,
		// as the reference relay does; @moq/net declares no role: admitted,
		// and its broadcast refused.
		{name: "subscribe-only", claims: map[string]any{"root": "demo", "get": []string{""}}, reason: "declared the publisher role"},
	}
}

// TestReferenceTokensAdmitOurPublisher: tokens minted by @moq/token, for
// keys it generated (HS256, ES256, EdDSA, RS256), admit or refuse our own
// publisher (raw QUIC lite-05 and WebTransport) as their claims say.
func TestReferenceTokensAdmitOurPublisher(t *testing.T) {
	ref := needReference(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*testTimeout)
	defer cancel()
	for _, alg := range []string{"HS256", "ES256", "EdDSA", "RS256"} {
		t.Run(alg, func(t *testing.T) {
			k, other := mintKey(ctx, t, ref, alg), mintKey(ctx, t, ref, alg)
			srv, cert, logs := authServer(t, k)
			refused := map[string]int{} // refusals logged, by reason
			for _, tc := range tokenCases() {
				if alg != "ES256" && alg != "HS256" && !tc.record {
					continue // the whole matrix for one symmetric and one asymmetric key
				}
				jwt := mintFor(ctx, t, ref, tc, k, other)
				for _, scheme := range []string{"moql", "https"} {
					url := fmt.Sprintf("%s://127.0.0.1:%s/demo", scheme, strings.Split(srv.Addr().String(), ":")[1])
					if jwt != "" {
						url += "?jwt=" + jwt
					}
					opts := subscribe.Options{TLSFingerprint: cert.fingerprint, Role: subscribe.RolePublisher,
						Versions: []string{"lite-05"}, Reconnect: subscribe.Backoff{Disabled: true}}
					client, err := subscribe.Dial(ctx, url, opts)
					if err != nil {
						t.Fatalf("%s %s: Dial: %v", tc.name, scheme, err)
					}
					if !tc.admit {
						<-client.Done()
						if ce, ok := errors.AsType[*subscribe.CloseError](client.Err()); !ok || ce.Code != subscribe.CodeUnauthorized {
							t.Errorf("%s %s: %v, want a close with code 6", tc.name, scheme, client.Err())
						}
						client.Close()
						refused[tc.reason]++
						waitLog(ctx, t, logs, refused[tc.reason], "refused a session", tc.reason)
						continue
					}
					peer, err := srv.Accept(ctx)
					if err != nil {
						t.Fatal(err)
					}
					checkPublishRights(ctx, t, client, peer, logs, tc.record)
					client.Close()
					peer.Close()
				}
				if jwt != "" && strings.Contains(logs.String(), jwt) {
					t.Fatalf("the server logged a token")
				}
			}
		})
	}
}

// checkPublishRights publishes alice on client and checks that peer, the
// accepted session, sees it announced (record) or refused.
func checkPublishRights(ctx context.Context, t *testing.T, client, peer *subscribe.Session, logs *lockedBuffer, record bool) {
	t.Helper()
	ann, err := peer.Announced(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer ann.Close()
	before := strings.Count(logs.String(), "broadcast=alice")
	if err := client.Publish(model.NewBroadcast("alice")); err != nil {
		t.Fatal(err)
	}
	if record {
		if a, err := ann.Next(ctx); err != nil || a.Path != "alice" {
			t.Fatalf("announcement %+v %v, want alice", a, err)
		}
		return
	}
	waitLog(ctx, t, logs, before+1, "refused a broadcast", "broadcast=alice")
	if got := ann.Active(); len(got) != 0 {
		t.Fatalf("announced %q although the token does not allow it", got)
	}
}

// TestReferenceTokensAdmitTheReferencePublisher: @moq/net publishes into
// our server over WebTransport (Deno's; the token in the URL, where
// @moq/net carries it), with tokens @moq/token minted: the valid one gets
// its broadcast recorded frame for frame, the others are refused (the
// session, or for a token without publish rights on that path, the
// broadcast).
func TestReferenceTokensAdmitTheReferencePublisher(t *testing.T) {
	ref := needReference(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*testTimeout)
	defer cancel()
	k, other := mintKey(ctx, t, ref, "ES256"), mintKey(ctx, t, ref, "ES256")
	srv, cert, logs := authServer(t, k)
	var minted []string
	broadcastRefusals := 0
	for _, tc := range tokenCases() {
		t.Run(strings.ReplaceAll(tc.name, " ", "-"), func(t *testing.T) {
			jwt := mintFor(ctx, t, ref, tc, k, other)
			if jwt != "" {
				minted = append(minted, jwt)
			}
			url := fmt.Sprintf("https://127.0.0.1:%s/demo", strings.Split(srv.Addr().String(), ":")[1])
			if jwt != "" {
				url += "?jwt=" + jwt
			}
			m := sampleBroadcast("alice", 5)
			pctx, pcancel := context.WithCancel(ctx)
			defer pcancel()
			pub := ref.start(pctx, t, "publish", "--manifest", m.write(t), "--webtransport", url, "--fingerprint", cert.fingerprint, "--speed", "2")
			admit := tc.admit || tc.name == "subscribe-only" // @moq/net sends no role
			if !admit {
				waitLog(ctx, t, logs, 1, "refused a session", "transport=webtransport", tc.reason)
				return
			}
			sess, err := srv.Accept(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			if tc.record {
				recordPublished(ctx, t, sess, m, pub)
				return
			}
			// The refusal happens when the publisher answers our announce
			// request.
			ann, err := sess.Announced(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			defer ann.Close()
			broadcastRefusals++
			waitLog(ctx, t, logs, broadcastRefusals, "refused a broadcast", "broadcast=alice", "session=demo")
			if got := ann.Active(); len(got) != 0 {
				t.Fatalf("announced %q although the token does not allow it", got)
			}
		})
	}
	for _, jwt := range minted {
		if strings.Contains(logs.String(), jwt) || strings.Contains(logs.String(), jwt[strings.LastIndexByte(jwt, '.'):]) {
			t.Fatalf("the server logged a token:\n%s", logs)
		}
	}
}
