package subscribe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/moq/ietf/ietfpub"
	"github.com/moq-export/moq-export/model"
)

// TestAServerThatRefusesOptionalRequestsIsRecorded: a moq-transport server
// that closes the session on SUBSCRIBE_NAMESPACE and on any SUBSCRIBE
// parameter but the token (as MediaMTX does) is recorded from: a named
// broadcast is subscribed without discovery, the one SUBSCRIBE that asked
// for a priority costs one session, after which the server is remembered
// and asked for the defaults only (drafts 16 and 17 cost one more, to learn
// that the server speaks draft 18's messages there). Announced costs one
// session too, and
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
			strict := &ietfpub.StrictPeer{}
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
			if n := strict.Closes("SUBSCRIBE_NAMESPACE"); n != 0 {
				t.Errorf("a named broadcast asked for discovery (%d sessions closed on it)", n)
			}
			// On draft 17 the strict server reads draft 18's SUBSCRIBE (as
			// MediaMTX does): the one with a priority is malformed there,
			// and so is the next, after which the client speaks draft 18's.
			params, malformed := 1, 0
			if alpn == "moqt-17" {
				params, malformed = 0, 2
			}
			if n, m := strict.Closes("SUBSCRIBE parameters"), strict.Closes("malformed SUBSCRIBE"); n != params || m != malformed {
				t.Errorf("sessions closed on SUBSCRIBE parameters: %d, on a malformed SUBSCRIBE: %d; want %d, %d", n, m, params, malformed)
			}

			// Discovery: one session lost, then remembered; the feed ends
			// saying so.
			if client.NoDiscovery() {
				t.Fatal("no discovery before anyone asked")
			}
			for i := range 2 {
				a, err := client.Announced(ctx, "")
				if err != nil {
					t.Fatal(err)
				}
				// Namespaces the server publishes unasked may come first.
				var err2 error
				for err2 == nil {
					_, err2 = a.Next(ctx)
				}
				if !errors.Is(err2, ErrNoDiscovery) {
					t.Fatalf("feed %d: %v, want ErrNoDiscovery", i, err2)
				}
				a.Close()
			}
			if !client.NoDiscovery() {
				t.Error("NoDiscovery is false after the server refused discovery")
			}
			if n := strict.Closes("SUBSCRIBE_NAMESPACE"); n != 1 {
				t.Errorf("%d sessions closed on SUBSCRIBE_NAMESPACE, want 1", n)
			}
		})
	}
}

// TestAServerWithOnlyTheMSF00CatalogIsRead: a server that has only
// MediaMTX's ".catalog" and closes the session on a SUBSCRIBE of a track
// it does not know (as MediaMTX does with "catalog.json") costs one
// session for the parameters and one for the unknown name; the watcher
// then reads ".catalog", and the name is refused locally from then on.
func TestAServerWithOnlyTheMSF00CatalogIsRead(t *testing.T) {
	t.Parallel()
	cert, pin, err := SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	b := model.NewBroadcast("live/test")
	ct := b.CreateTrack(catalog.MSF00TrackName)
	g, _ := ct.AppendGroup()
	g.WriteFrame(model.Frame{Payload: []byte(`{"version":1,"tracks":[{"name":"0","packaging":"loc","isLive":true,"codec":"avc3.640028","width":1280,"height":720}]}`)})
	g.Close(nil)
	b.CreateTrack("0")
	b.HandleRequests(func(string) (*model.Track, error) { return nil, model.ErrNotFound })
	strict := &ietfpub.StrictPeer{}
	srv, err := Listen("127.0.0.1:0", ServerOptions{Certificates: []tls.Certificate{cert}, Logger: testLogger(t),
		Publish: []*model.Broadcast{b}, DisableWebTransport: true, strict: strict})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	opts := Options{TLSFingerprint: pin, Logger: testLogger(t), alpns: []string{"moqt-18"}}
	opts.Reconnect.Min = 20 * time.Millisecond
	client, err := Dial(ctx, fmt.Sprintf("moqt://%s/", srv.Addr()), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	for i := range 2 {
		w, err := catalog.Watch(client.Broadcast("live/test"), catalog.WatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := w.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if w.Track() != catalog.MSF00TrackName || len(c.Video.Renditions) != 1 {
			t.Fatalf("watch %d: read %q: %+v", i, w.Track(), c)
		}
		w.Close()
	}
	if n := strict.Closes("SUBSCRIBE parameters"); n != 1 {
		t.Errorf("%d sessions closed on SUBSCRIBE parameters, want 1", n)
	}
	if n := strict.Closes("unknown track"); n != 1 {
		t.Errorf("%d sessions closed on an unknown track, want 1 (catalog.json, once)", n)
	}
	if n := strict.Closes("SUBSCRIBE_NAMESPACE"); n != 0 {
		t.Errorf("%d sessions closed on SUBSCRIBE_NAMESPACE, want none", n)
	}
}
