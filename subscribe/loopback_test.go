package subscribe

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/model"
)

// TestLoopbackDeliversEveryFrameUnchanged publishes the sample media from an
// accepted session and subscribes from a dialled one, over raw QUIC and over
// WebTransport, and compares every frame: bytes, timestamp, group.
func TestLoopbackDeliversEveryFrameUnchanged(t *testing.T) {
	for _, scheme := range []string{"moql", "https", "http"} {
		t.Run(scheme, func(t *testing.T) {
			checkGoroutines(t)
			srv, pin := startServer(t, "127.0.0.1:0")
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()

			url := fmt.Sprintf("%s://%s/room?jwt=secret", scheme, srv.Addr())
			opts := Options{Logger: testLogger(t)}
			if scheme != "http" {
				opts.TLSFingerprint = pin
			}
			client, err := Dial(ctx, url, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			peer, err := srv.Accept(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if peer.Path() != "room" {
				t.Errorf("accepted session path %q, want room", peer.Path())
			}

			sb := newSampleBroadcast(t, "demo.hang", "h264", "aac")
			if err := peer.Publish(sb.b); err != nil {
				t.Fatal(err)
			}
			ann, err := client.Announced(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			defer ann.Close()
			a, err := ann.Next(ctx)
			if err != nil || a.Path != "demo.hang" || !a.Active {
				t.Fatalf("announcement %+v, %v", a, err)
			}

			b := client.Broadcast("demo.hang")
			w, err := WatchCatalog(b, CatalogOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			cat, err := w.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(cat.Renditions()); got != 2 {
				t.Fatalf("catalog has %d renditions, want 2", got)
			}

			tracks := map[string]*model.Track{}
			for _, s := range sb.samples {
				tr, err := b.Track(s.Name)
				if err != nil {
					t.Fatal(err)
				}
				tr.SetKeepGroups(100000)
				tracks[s.Name] = tr
			}
			// Media tracks plus the catalog.
			waitFor(t, "subscriptions", func() bool { return peer.serving.Load() == int64(len(sb.samples)+1) })
			sb.fill(t, 0, true)
			// Groups travel on parallel streams and arrive in any order; a
			// consumer that starts early begins at the first group to
			// arrive. Read once the subscriptions are over to see all.
			waitFor(t, "end of subscriptions", func() bool { return client.subCount() == 1 })
			for _, s := range sb.samples {
				evs, err := readEvents(ctx, tracks[s.Name].Subscribe(time.Hour), func([]model.Event) bool { return false })
				if err != nil {
					t.Fatalf("%s: %v", s.Name, err)
				}
				compareFrames(t, s.Name, evs, expectedEvents(s, 0))
				if last := evs[len(evs)-1]; last.Kind != model.EventEnd || last.Err != nil {
					t.Fatalf("%s: last event %+v, want a clean end", s.Name, last)
				}
			}
			_ = catalog.TrackName
		})
	}
}
