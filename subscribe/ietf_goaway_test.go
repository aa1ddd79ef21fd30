package subscribe

import (
	"context"
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/transport"
	"github.com/moq-export/moq-export/model"
)

// TestIETFGoAwayMovesTheSession (moq-transport and moq-lite): a GOAWAY
// naming another relay moves the
// session there (the new URI's path is its SETUP Path / CONNECT path), one
// without a URI back to the same relay; the subscription resumes on the new
// connection and the old one ends.
func TestIETFGoAwayMovesTheSession(t *testing.T) {
	for _, d := range []struct {
		name, alpn, scheme string
		redirect           bool
	}{
		{"Draft14SameRelay", ietf.Draft14.ALPN(), "moqt", false},
		{"Draft20SameRelay", "moqt-20", "moqt", false},
		{"Draft14", ietf.Draft14.ALPN(), "moqt", true},
		{"Draft20", "moqt-20", "moqt", true},
		{"Draft20WebTransport", "moqt-20", "https", true},
		// moq-lite: the new session is dialled before the old one closes.
		{"Lite06SameRelay", "moq-lite-06", "moql", false},
		{"Lite06", "moq-lite-06", "moql", true},
		{"Lite06WebTransport", "moq-lite-06", "https", true},
		{"Lite05", "moq-lite-05", "moql", true},
	} {
		t.Run(d.name, func(t *testing.T) {
			cert, pin, err := SelfSignedCert()
			if err != nil {
				t.Fatal(err)
			}
			listen := func() *Server {
				srv, err := Listen("127.0.0.1:0", ServerOptions{Certificates: []tls.Certificate{cert}, Logger: testLogger(t)})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { srv.Close() })
				return srv
			}
			old := listen()
			var next *Server
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			client, peer := dialAndAccept(t, ctx, old, fmt.Sprintf("%s://%s/room", d.scheme, old.Addr()), Options{
				TLSFingerprint: pin, alpns: []string{d.alpn}, Logger: testLogger(t),
				Reconnect: Backoff{Min: 10 * time.Millisecond, Max: 50 * time.Millisecond},
				container: func(string, string) string { return "legacy" },
			})
			defer client.Close()
			b := model.NewBroadcast("live")
			tr := b.CreateTrack("raw")
			if err := peer.Publish(b); err != nil {
				t.Fatal(err)
			}
			remote, err := client.Broadcast("live").Track("raw")
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the subscription", func() bool { return peer.pub.pubs.ServingAll() == 1 })
			uri, wantPath := "", "room"
			next = old
			if d.redirect {
				next = listen()
				uri, wantPath = fmt.Sprintf("%s://%s/moved?jwt=new-token", d.scheme, next.Addr()), "moved"
			}
			if err := peer.GoAway(uri); err != nil {
				t.Fatal(err)
			}
			peer2, err := next.Accept(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if peer2.Path() != wantPath {
				t.Errorf("the new session's path %q, want %s", peer2.Path(), wantPath)
			}
			if err := peer2.Publish(b); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the resumed subscription", func() bool { return peer2.pub.pubs.ServingAll() == 1 })
			select {
			case <-peer.Done():
			case <-ctx.Done():
				t.Fatal("the old relay's session stays open")
			}
			if n := client.Reconnects(); n != 1 {
				t.Fatalf("%d reconnects, want 1", n)
			}
			g, _ := tr.AppendGroup()
			g.WriteFrame(model.Frame{Timestamp: 5, Payload: []byte("after")})
			g.Close(nil)
			c := remote.Subscribe(time.Hour)
			defer c.Close()
			evs, err := readEvents(ctx, c, func(evs []model.Event) bool { return frameCount(evs) == 1 })
			if err != nil {
				t.Fatal(err)
			}
			if f := evs[len(evs)-1].Frame; string(f.Payload) != "after" {
				t.Fatalf("frame %q after the move", f.Payload)
			}
		})
	}
}

// TestGoAwayTargetResolvesTheURIAndKeepsTokensAtHome: relative URIs
// resolve against the current one; the current jwt goes along only to the
// same host and port.
func TestGoAwayTargetResolvesTheURIAndKeepsTokensAtHome(t *testing.T) {
	cur, err := transport.ParseTarget("moqt://relay.example:4443/room?jwt=old")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ uri, want string }{
		{"/other", "moqt://relay.example:4443/other?jwt=old"},
		{"moqt://relay.example:4443/x?jwt=new", "moqt://relay.example:4443/x?jwt=new"},
		{"moqt://elsewhere.example/room", "moqt://elsewhere.example/room"},
		{"https://relay.example:4443/room", "https://relay.example:4443/room?jwt=old"},
		{"https://relay.example/room", "https://relay.example/room"},
	} {
		next, err := goAwayTarget(cur, c.uri)
		if err != nil {
			t.Errorf("%s: %v", c.uri, err)
			continue
		}
		if got := next.URL.String(); got != c.want {
			t.Errorf("%s: moves to %s, want %s", c.uri, got, c.want)
		}
	}
	for _, bad := range []string{"ftp://relay.example/", "moqt://", "%zz"} {
		if _, err := goAwayTarget(cur, bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
