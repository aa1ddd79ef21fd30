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
			client, peer := dialAndAccept(t, ctx, srv, url, opts)
			defer client.Close()
			if peer.Path() != "room" {
				t.Errorf("accepted session path %q, want room", peer.Path())
			}

			checkDeliversEveryFrame(t, ctx, client, peer, client.subCount)
		})
	}
}

// checkDeliversEveryFrame publishes the h264 and aac samples on peer and
// checks that client records every frame unchanged: announcement,
// catalog, one subscription per rendition, a clean end. subscriptions
// counts the client's live subscriptions (the catalog's stays).
func checkDeliversEveryFrame(t *testing.T, ctx context.Context, client, peer *Session, subscriptions func() int) {
	t.Helper()
	checkDeliversEveryFrameOf(t, ctx, client, peer, "demo.hang", subscriptions)
}

// checkDeliversEveryFrameOf is checkDeliversEveryFrame for the broadcast
// name: peer publishes it, client records it.
func checkDeliversEveryFrameOf(t *testing.T, ctx context.Context, client, peer *Session, name string, subscriptions func() int) {
	t.Helper()
	sb := newSampleBroadcast(t, name, "h264", "aac")
	if err := peer.Publish(sb.b); err != nil {
		t.Fatal(err)
	}
	ann := expectAnnounced(t, ctx, client, name)
	defer ann.Close()

	b := client.Broadcast(name)
	w, err := catalog.Watch(b, catalog.WatchOptions{})
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
	waitFor(t, "subscriptions", func() bool { return peer.pub.pubs.ServingAll() == int64(len(sb.samples)+1) })
	sb.fill(t, 0, true)
	// Groups travel on parallel streams and arrive in any order; a
	// consumer that starts early begins at the first group to
	// arrive. Read once the subscriptions are over to see all.
	waitFor(t, "end of subscriptions", func() bool { return subscriptions() == 1 })
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
}

// TestAcceptedSessionRecordsWhatTheClientPublishes is the record-on-ingest
// direction: a client connects and publishes, the server side discovers
// the broadcast from its announcements and subscribes.
func TestAcceptedSessionRecordsWhatTheClientPublishes(t *testing.T) {
	checkGoroutines(t)
	srv, pin := startServer(t, "127.0.0.1:0")
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client, peer := dialAndAccept(t, ctx, srv, fmt.Sprintf("https://%s/ingest", srv.Addr()), Options{TLSFingerprint: pin, Role: RolePublisher, Logger: testLogger(t)})
	defer client.Close()
	if peer.Path() != "ingest" {
		t.Errorf("path %q", peer.Path())
	}
	sb := newSampleBroadcast(t, "cam", "h264")
	if err := client.Publish(sb.b); err != nil {
		t.Fatal(err)
	}
	ann := expectAnnounced(t, ctx, peer, "cam")
	defer ann.Close()
	tr, err := peer.Broadcast("cam").Track("h264")
	if err != nil {
		t.Fatal(err)
	}
	tr.SetKeepGroups(100000)
	// The catalog is subscribed first (to learn the container): wait for
	// the h264 subscription itself, or the publisher starts it at the
	// newest group filled so far.
	waitFor(t, "the h264 subscription", func() bool { return client.pub.servingTrack("cam", "h264") >= 1 })
	sb.fill(t, 0, true)
	waitFor(t, "end of subscriptions", func() bool { return peer.subCount() <= 1 })
	evs, err := readEvents(ctx, tr.Subscribe(time.Hour), func([]model.Event) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	compareFrames(t, "h264", evs, expectedEvents(sb.samples[0], 0))

	// Unpublishing announces the end: the recorded broadcast closes.
	b := peer.Broadcast("cam")
	client.Unpublish("cam")
	select {
	case <-b.Done():
	case <-ctx.Done():
		t.Fatal("broadcast not closed after the ended announcement")
	}
	if a, err := ann.Next(ctx); err != nil || a.Active {
		t.Fatalf("%+v %v", a, err)
	}
}

func BenchmarkLoopbackFrames(b *testing.B) {
	cert, pin, err := SelfSignedCert()
	if err != nil {
		b.Fatal(err)
	}
	srv, err := Listen("127.0.0.1:0", ServerOptions{Certificates: []tls.Certificate{cert}, Logger: testLogger(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	client, err := Dial(ctx, "moql://"+srv.Addr().String()+"/", Options{TLSFingerprint: pin, Logger: testLogger(b), container: func(string, string) string { return "legacy" }})
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	peer, _ := srv.Accept(ctx)
	pb := model.NewBroadcast("bench")
	src := pb.CreateTrack("v")
	peer.Publish(pb)
	tr, _ := client.Broadcast("bench").Track("v")
	for peer.pub.pubs.ServingAll() < 1 {
		time.Sleep(time.Millisecond)
	}
	c := tr.Subscribe(time.Hour)
	rs := model.NewReadySet()
	c.Watch(rs)
	payload := make([]byte, 4000)
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	var g *model.Group
	for i := 0; b.Loop(); i++ {
		if i%30 == 0 {
			if g != nil {
				g.Close(nil)
			}
			g, _ = src.AppendGroup()
		}
		g.WriteFrame(model.Frame{Timestamp: int64(i) * 33_000, Payload: payload})
		for got := false; !got; {
			if ev, ok := c.Next(); ok && ev.Kind == model.EventFrame {
				got = true
			} else if !ok {
				<-rs.Wakeup()
				rs.Take(nil)
			}
		}
	}
}

// TestBroadcastClosedByItsOwnerIsForgotten: after the caller closes the
// model broadcast that Session.Broadcast returned, the next call for the
// path starts over instead of returning the closed one, and the closed
// one's subscriptions end.
func TestBroadcastClosedByItsOwnerIsForgotten(t *testing.T) {
	checkGoroutines(t)
	srv, pin := startServer(t, "127.0.0.1:0")
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client, peer := dialAndAccept(t, ctx, srv, "moql://"+srv.Addr().String()+"/", Options{TLSFingerprint: pin,
		Logger: testLogger(t), container: func(string, string) string { return "legacy" }})
	defer client.Close()
	pb := model.NewBroadcast("live")
	pb.CreateTrack("v")
	if err := peer.Publish(pb); err != nil {
		t.Fatal(err)
	}
	ann := expectAnnounced(t, ctx, client, "live")
	defer ann.Close()

	b := client.Broadcast("live")
	if _, err := b.Track("v"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the subscription", func() bool { return peer.pub.servingTrack("live", "v") == 1 })
	b.Close(nil)
	waitFor(t, "a new broadcast for the path", func() bool { return client.Broadcast("live") != b })
	waitFor(t, "the closed broadcast's subscription to end", func() bool { return peer.pub.servingTrack("live", "v") == 0 })
}
