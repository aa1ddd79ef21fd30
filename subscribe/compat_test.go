package subscribe

import (
	"context"
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/model"
)

// TestAServerThatRefusesOptionalRequestsIsRecorded: a moq-transport server
// that closes the session on SUBSCRIBE_NAMESPACE and on any SUBSCRIBE
// parameter but the token (as MediaMTX does) is recorded from: a named
// broadcast is subscribed without discovery, the one SUBSCRIBE that asked
// for a priority costs one session, after which the server is remembered
// and asked for the defaults only. Announced costs one session too, and
// NoDiscovery says so from then on.
func TestAServerThatRefusesOptionalRequestsIsRecorded(t *testing.T) {
	for _, alpn := range []string{"moqt-16", "moqt-17", "moqt-18", "moqt-19"} {
		t.Run(alpn, func(t *testing.T) {
			t.Parallel()
			cert, pin, err := SelfSignedCert()
			if err != nil {
				t.Fatal(err)
			}
			sb := newSampleBroadcast(t, "live/test", "h264")
			strict := &strictPeer{}
			srv, err := Listen("127.0.0.1:0", ServerOptions{Certificates: []tls.Certificate{cert}, Logger: testLogger(t),
				Publish: []*model.Broadcast{sb.b}, DisableWebTransport: true, strict: strict})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			opts := Options{TLSFingerprint: pin, Logger: testLogger(t), alpns: []string{alpn}}
			opts.Reconnect.Min = 20 * time.Millisecond
			client, err := Dial(ctx, fmt.Sprintf("moqt://%s/", srv.Addr()), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			b := client.Broadcast("live/test")
			w, err := catalog.Watch(b, catalog.WatchOptions{Track: catalog.TrackName})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if _, err := w.Next(ctx); err != nil {
				t.Fatal(err)
			}
			tr, err := b.Track("h264")
			if err != nil {
				t.Fatal(err)
			}
			c := tr.Subscribe(time.Hour)
			waitFor(t, "the track's subscription", func() bool { return client.ietfSubscriptions() == 2 })
			sb.fill(t, 0, true)
			evs, err := readEvents(ctx, c, func(evs []model.Event) bool { return frameCount(evs) > 0 })
			if err != nil || frameCount(evs) == 0 {
				t.Fatalf("no frame of the track: %v", err)
			}
			if n := strict.closes("SUBSCRIBE_NAMESPACE"); n != 0 {
				t.Errorf("a named broadcast asked for discovery (%d sessions closed on it)", n)
			}
			if n := strict.closes("SUBSCRIBE parameters"); n != 1 {
				t.Errorf("%d sessions closed on SUBSCRIBE parameters, want 1", n)
			}

			// Discovery: one session lost, then remembered.
			if client.NoDiscovery() {
				t.Fatal("no discovery before anyone asked")
			}
			a, err := client.Announced(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the refusal of discovery", client.NoDiscovery)
			a.Close()
			waitFor(t, "a connection", func() bool { return client.currentConn() != nil })
			reconnects := client.Reconnects()
			a, err = client.Announced(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			// A SUBSCRIBE_NAMESPACE would have closed the session by now.
			time.Sleep(300 * time.Millisecond)
			if client.Reconnects() != reconnects {
				t.Errorf("the session reconnected after the second Announced")
			}
			if n := strict.closes("SUBSCRIBE_NAMESPACE"); n != 1 {
				t.Errorf("%d sessions closed on SUBSCRIBE_NAMESPACE, want 1", n)
			}
		})
	}
}
