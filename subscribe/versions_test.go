package subscribe

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/moq/transport/alpn"

	"github.com/quic-go/quic-go"

	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/varint"
)

// startVersionServer starts a server that speaks only versions.
func startVersionServer(t *testing.T, versions ...string) (*Server, string) {
	t.Helper()
	cert, pin, err := SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Listen("127.0.0.1:0", ServerOptions{Certificates: []tls.Certificate{cert}, Logger: testLogger(t),
		FingerprintHTTP: true, Versions: versions})
	if err != nil {
		t.Fatal(err)
	}
	return srv, pin
}

// TestEveryVersionInBothRoles: a server pinned to one version, a client
// offering them all. Both sessions say which version they speak, and the
// sample media goes through in both directions with every frame intact
// (bytes, timestamp, group), over raw QUIC and WebTransport.
func TestEveryVersionInBothRoles(t *testing.T) {
	for _, v := range wire.Versions {
		for _, scheme := range []string{"moql", "https"} {
			t.Run(v.Name+"/"+scheme, func(t *testing.T) {
				checkGoroutines(t)
				srv, pin := startVersionServer(t, v.Name)
				defer srv.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				url := fmt.Sprintf("%s://%s/room", scheme, srv.Addr())
				client, peer := dialAndAccept(t, ctx, srv, url, Options{TLSFingerprint: pin, Role: RoleBoth, Logger: testLogger(t)})
				defer client.Close()
				if client.Version() != v.Name || peer.Version() != v.Name {
					t.Fatalf("client speaks %q, server %q; want %s", client.Version(), peer.Version(), v.Name)
				}
				// The root reaches the server where the version can carry it.
				wantPath := "room"
				if scheme == "moql" && !v.SetupStream && !v.LegacySetup {
					wantPath = ""
				}
				if peer.Path() != wantPath {
					t.Errorf("server session path %q, want %q", peer.Path(), wantPath)
				}
				recordAcross(t, ctx, peer, client, "down.hang")
				recordAcross(t, ctx, client, peer, "up.hang")
			})
		}
	}
}

// recordAcross publishes the sample media on pub and records it on sub,
// every frame compared, once the subscriptions are over (versions without
// SUBSCRIBE_START do not name the first group).
func recordAcross(t *testing.T, ctx context.Context, pub, sub *Session, name string) {
	t.Helper()
	checkDeliversEveryFrameOf(t, ctx, sub, pub, name, sub.subCount)
	pub.Unpublish(name)
}

// TestClientPinnedToAVersionTheServerLacksIsRefusedNamingOurs: a client
// offering only a version the server does not speak gets a refusal whose
// text names the versions the server speaks, raw QUIC and WebTransport.
func TestClientPinnedToAVersionTheServerLacksIsRefusedNamingOurs(t *testing.T) {
	checkGoroutines(t)
	srv, pin := startVersionServer(t, "lite-05", "lite-04")
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, scheme := range []string{"moql", "https"} {
		s, err := Dial(ctx, fmt.Sprintf("%s://%s/", scheme, srv.Addr()), Options{TLSFingerprint: pin, Versions: []string{"lite-03"},
			Logger: testLogger(t), Reconnect: Backoff{Disabled: true}})
		if err == nil {
			// Raw QUIC: the handshake completes with the client's ALPN so
			// that the server's close reason can name its versions.
			select {
			case <-s.Done():
			case <-ctx.Done():
				t.Fatalf("%s: lite-03 session with a lite-05/04 server still running", scheme)
			}
			err = s.Err()
			s.Close()
		}
		// The raw QUIC close reason names the server's versions; a
		// WebTransport server that matches none answers no protocol, and
		// the client names what it offered.
		want := "moq-lite-05, moq-lite-04"
		if scheme == "https" {
			want = "chose none of moq-lite-03"
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %v, want a refusal saying %q", scheme, err, want)
		}
	}
}

// TestServerRefusesAnUnknownALPNNamingItsVersions: a raw QUIC client that
// offers an ALPN of no version we speak (an unknown draft) completes the
// handshake and is closed with code 9 and our versions in the reason.
func TestServerRefusesAnUnknownALPNNamingItsVersions(t *testing.T) {
	checkGoroutines(t)
	srv, _ := startVersionServer(t)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := quic.DialAddr(ctx, srv.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"moqt-99"}}, quicConfig(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	expectVersionRefusal(t, c, "moq-lite-05, moq-lite-04, moq-lite-03")
}

// expectVersionRefusal waits for c to be closed with code 9 and a reason
// that contains want.
func expectVersionRefusal(t *testing.T, c *quic.Conn, want string) {
	t.Helper()
	<-c.Context().Done()
	var ae *quic.ApplicationError
	if !errors.As(context.Cause(c.Context()), &ae) || ae.ErrorCode != CodeVersion || !strings.Contains(ae.ErrorMessage, want) {
		t.Fatalf("closed with %v, want code 9 naming %s", context.Cause(c.Context()), want)
	}
}

// TestLegacySetupWithoutCommonVersionIsRefused: a legacy CLIENT_SETUP
// that offers no version we speak is refused, naming what we speak.
func TestLegacySetupWithoutCommonVersionIsRefused(t *testing.T) {
	checkGoroutines(t)
	srv, _ := startVersionServer(t)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	qc, str := legacyClient(t, ctx, srv, 0xff000099)
	defer qc.CloseWithError(0, "")
	_ = str
	expectVersionRefusal(t, qc, "moq-lite-02")
}

// TestLegacySetupChoosingDraft14GoesToTheIETFSession: a legacy
// CLIENT_SETUP offering only moq-transport draft 14 is answered by the
// IETF session (SERVER_SETUP naming draft 14), which reads the same
// CLIENT_SETUP the negotiation read first.
func TestLegacySetupChoosingDraft14GoesToTheIETFSession(t *testing.T) {
	checkGoroutines(t)
	srv, _ := startVersionServer(t)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	qc, str := legacyClient(t, ctx, srv, uint64(ietf.Draft14))
	defer qc.CloseWithError(0, "")
	str.SetReadDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(str)
	typ, err := varint.Read(r)
	if err != nil || typ != wire.StreamServerSetup {
		t.Fatalf("reply type %#x, %v", typ, err)
	}
	body, err := wire.ReadLegacyMessage(r)
	if err != nil {
		t.Fatal(err)
	}
	var m wire.ServerSetup
	if err := m.Decode(body); err != nil || m.Version != uint64(ietf.Draft14) {
		t.Fatalf("SERVER_SETUP %+v, %v; want draft 14", m, err)
	}
}

// legacyClient dials srv with ALPN moql and sends a CLIENT_SETUP offering
// versions.
func legacyClient(t *testing.T, ctx context.Context, srv *Server, versions ...uint64) (*quic.Conn, *quic.Stream) {
	t.Helper()
	qc, err := quic.DialAddr(ctx, srv.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{alpn.Legacy}}, quicConfig(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	str, err := qc.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := wire.ClientSetup{Versions: versions, Params: []wire.Param{wire.LegacyVarintParam(wire.LegacyParamMaxRequestID, 100)}}
	if _, err := str.Write(m.Append(varint.Append(nil, wire.StreamClientSetup))); err != nil {
		t.Fatal(err)
	}
	return qc, str
}

// TestCertificateFingerprintAnswersCORS: the dev bootstrap's
// /certificate.sha256 lets a page of any origin read it, preflight
// included, as the reference relay does.
func TestCertificateFingerprintAnswersCORS(t *testing.T) {
	checkGoroutines(t)
	srv, pin := startVersionServer(t)
	defer srv.Close()
	u := "http://" + srv.Addr().String() + "/certificate.sha256"
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Origin", "http://page.example:8080")
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rsp.Body.Close()
	if got := rsp.Header.Get("Access-Control-Allow-Origin"); got != "*" || rsp.StatusCode != 200 {
		t.Fatalf("GET: status %d, Access-Control-Allow-Origin %q", rsp.StatusCode, got)
	}
	pre, _ := http.NewRequest(http.MethodOptions, u, nil)
	pre.Header.Set("Origin", "http://page.example:8080")
	pre.Header.Set("Access-Control-Request-Method", "GET")
	rsp, err = http.DefaultClient.Do(pre)
	if err != nil {
		t.Fatal(err)
	}
	rsp.Body.Close()
	if rsp.StatusCode/100 != 2 || rsp.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(rsp.Header.Get("Access-Control-Allow-Methods"), "GET") {
		t.Fatalf("preflight: status %d, headers %v", rsp.StatusCode, rsp.Header)
	}
	_ = pin
}

// TestOlderVersionSaysWhatIsLost: a session on lite-04 logs, once per
// connection, what the version cannot carry (no FETCH backfill, no path on
// raw QUIC).
func TestOlderVersionSaysWhatIsLost(t *testing.T) {
	checkGoroutines(t)
	srv, pin := startVersionServer(t, "lite-04")
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var logs logBuffer
	client, peer := dialAndAccept(t, ctx, srv, "moql://"+srv.Addr().String()+"/room", Options{TLSFingerprint: pin, Logger: logs.logger()})
	defer client.Close()
	_ = peer
	waitFor(t, "the log line", func() bool { return strings.Contains(logs.String(), "older protocol version") })
	for _, want := range []string{"no FETCH", "no SETUP stream", "no TRACK_INFO"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}
