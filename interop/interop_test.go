package interop

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
)

// testTimeout bounds every interop test: a hang on either side fails it.
const testTimeout = 60 * time.Second

// ourCert makes a loopback certificate with subscribe.SelfSignedCert (the
// helper our server and demo use) and writes it as PEM for Deno.
func ourCert(t *testing.T) (tls.Certificate, *testCert) {
	t.Helper()
	cert, fp, err := subscribe.SelfSignedCert("localhost", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tc := &testCert{
		certFile:    filepath.Join(dir, "cert.pem"),
		keyFile:     filepath.Join(dir, "key.pem"),
		der:         cert.Certificate[0],
		fingerprint: fp,
	}
	if err := os.WriteFile(tc.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tc.der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tc.keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, tc
}

// waitAnnounced waits until the peer announces path as active.
func waitAnnounced(ctx context.Context, t *testing.T, sess *subscribe.Session, path string) {
	t.Helper()
	ann, err := sess.Announced(ctx, "")
	if err != nil {
		t.Fatalf("Announced: %v", err)
	}
	defer ann.Close()
	for {
		a, err := ann.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for the announcement of %q: %v", path, err)
		}
		if a.Path == path && a.Active {
			return
		}
		t.Logf("announcement %+v", a)
	}
}

// recordBroadcast reads the catalog of b with catalog.Watch, subscribes every
// rendition it lists and records each track until it ends. Frames are
// returned per track in the order the model delivered them.
func recordBroadcast(ctx context.Context, t *testing.T, b *model.Broadcast) (*catalog.Catalog, map[string][]expectedFrame) {
	t.Helper()
	return recordBroadcastBeside(ctx, t, b, nil)
}

// recordBroadcastBeside is recordBroadcast with another reader of b: once
// every rendition is subscribed, and before any frame is read, subscribed
// is called (nil: none) to start that reader and return once it has
// subscribed too. A subscribed track keeps only its newest group of those
// its readers have all read (subscribe's SetKeepGroups(1)), and a reader
// that joins later starts at its newest group, as a live joiner does:
// the reader that subscribed second used to miss the groups the first
// had read by then (an audio group is one frame: "received 187 frames,
// published 189" under -race at load 40, or the export's file short).
func recordBroadcastBeside(ctx context.Context, t *testing.T, b *model.Broadcast, subscribed func(*catalog.Catalog)) (*catalog.Catalog, map[string][]expectedFrame) {
	t.Helper()
	w, err := catalog.Watch(b, catalog.WatchOptions{})
	if err != nil {
		t.Fatalf("catalog.Watch: %v", err)
	}
	defer w.Close()
	cat, err := w.Next(ctx)
	if err != nil {
		t.Fatalf("catalog: %v", err)
	}

	ready := model.NewReadySet()
	var consumers []*model.Consumer
	for _, r := range cat.Renditions() {
		tr, err := b.Track(r.Name)
		if err != nil {
			t.Fatalf("track %q: %v", r.Name, err)
		}
		// A latency far above the recording's length: every group is
		// waited for, none skipped.
		c := tr.Subscribe(time.Minute)
		c.Watch(ready)
		consumers = append(consumers, c)
	}
	defer func() {
		for _, c := range consumers {
			c.Close()
		}
	}()

	if subscribed != nil {
		subscribed(cat)
	}
	got := map[string][]expectedFrame{}
	index := map[string]int{}
	lastGroup := map[string]uint64{}
	ended := 0
	drain := func(c *model.Consumer) {
		name := c.Track().Name()
		for {
			ev, ok := c.Next()
			if !ok {
				return
			}
			switch ev.Kind {
			case model.EventFrame:
				if n := len(got[name]); n == 0 || ev.Group != lastGroup[name] {
					index[name] = 0
				}
				lastGroup[name] = ev.Group
				got[name] = append(got[name], expectedFrame{
					Group: ev.Group, Index: index[name], TS: ev.Frame.Timestamp,
					Keyframe: ev.Keyframe, Payload: ev.Frame.Payload,
				})
				index[name]++
			case model.EventDiscontinuity:
				t.Errorf("%s: unexpected discontinuity before group %d", name, ev.Group)
			case model.EventEnd:
				if ev.Err != nil {
					t.Errorf("%s: track ended with %v", name, ev.Err)
				}
				ended++
				return
			}
		}
	}
	for _, c := range consumers {
		drain(c)
	}
	var taken []*model.Consumer
	for ended < len(consumers) {
		select {
		case <-ready.Wakeup():
		case <-ctx.Done():
			t.Fatalf("recording: %d of %d tracks ended before the deadline (%d video, %d audio frames so far)",
				ended, len(consumers), len(got["video"]), len(got["audio"]))
		}
		taken = ready.Take(taken[:0])
		for _, c := range taken {
			drain(c)
		}
	}
	return cat, got
}

// checkCatalog compares the catalog our session parsed with the JSON the
// reference published (both through package catalog).
func checkCatalog(t *testing.T, got *catalog.Catalog, publishedJSON string) {
	t.Helper()
	want, err := catalog.Parse([]byte(publishedJSON))
	if err != nil {
		t.Fatalf("published catalog %s: %v", publishedJSON, err)
	}
	if !reflect.DeepEqual(got, want) {
		gb, _ := json.Marshal(got)
		t.Errorf("catalog\n got %s\nwant %s (published %s)", gb, mustJSON(want), publishedJSON)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// checkSampleCatalog checks the published catalog carries the sample's
// configuration (so a catalog that round-trips but lost fields fails).
func checkSampleCatalog(t *testing.T, cat *catalog.Catalog, m *manifest) {
	t.Helper()
	v, ok := cat.Video.Renditions["video"]
	if !ok {
		t.Fatalf("catalog has no video rendition: %s", mustJSON(cat))
	}
	vc := m.track("video").Config
	if v.Codec != vc["codec"] || hex.EncodeToString(v.Description) != vc["description"] ||
		v.ContainerKind() != "legacy" || v.CodedWidth == nil || int(*v.CodedWidth) != vc["codedWidth"] {
		t.Errorf("video rendition %s, published config %v", mustJSON(v), vc)
	}
	a, ok := cat.Audio.Renditions["audio"]
	if !ok {
		t.Fatalf("catalog has no audio rendition: %s", mustJSON(cat))
	}
	ac := m.track("audio").Config
	if a.Codec != ac["codec"] || hex.EncodeToString(a.Description) != ac["description"] ||
		a.ContainerKind() != "legacy" || int(a.SampleRate) != ac["sampleRate"] || int(a.NumberOfChannels) != ac["numberOfChannels"] {
		t.Errorf("audio rendition %s, published config %v", mustJSON(a), ac)
	}
}

// TestDialReferencePublisherRecordsEveryFrame: the reference publisher
// listens on raw QUIC with a self-signed certificate; our client dials it
// with the fingerprint pin, sees the announcement, reads the catalog and
// records both tracks. Every frame must arrive with its bytes, timestamp,
// group sequence and keyframe flag.
func TestDialReferencePublisherRecordsEveryFrame(t *testing.T) {
	ref := needReference(t)
	for _, tc := range []struct {
		name       string
		audioGroup int    // audio frames per group
		closeDelay string // ms between the last frame and the end of the tracks
	}{
		{name: "OneAudioFramePerGroup", audioGroup: 1, closeDelay: "500"},
		// @moq/net sends SUBSCRIBE_END and FINs the subscribe stream as soon
		// as a track closes, before the last group's stream is out: the
		// groups below SUBSCRIBE_END must still be recorded.
		{name: "TrackEndsRightAfterLastFrame", audioGroup: 4, closeDelay: "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			m := sampleBroadcast("interop/dial.hang", tc.audioGroup)
			recordReferenceServer(ctx, t, ref, m, "--close-delay-ms", tc.closeDelay)
		})
	}
}

// recordReferenceServer runs the reference publisher as a raw QUIC server
// (with flags added to its own), dials it with the fingerprint pin,
// records m and compares the recording (recordPublished). It returns the
// finished publisher, whose log tells what it negotiated.
func recordReferenceServer(ctx context.Context, t *testing.T, ref *reference, m *manifest, flags ...string) *refProcess {
	t.Helper()
	return recordReferenceServerAs(ctx, t, ref, m, "", nil, flags...)
}

// recordReferenceServerAs is recordReferenceServer with our client offering
// only versions (nil: all) and requiring the session to run want ("": any).
func recordReferenceServerAs(ctx context.Context, t *testing.T, ref *reference, m *manifest, want string, versions []string, flags ...string) *refProcess {
	t.Helper()
	_, cert := ourCert(t)
	pub := ref.start(ctx, t, "publish", append([]string{
		"--manifest", m.write(t), "--listen", "127.0.0.1:0",
		"--cert", cert.certFile, "--key", cert.keyFile, "--speed", "2"}, flags...)...)
	port := pub.expect(ctx, "listening", nil).Port
	sess, err := subscribe.Dial(ctx, fmt.Sprintf("moql://127.0.0.1:%d/", port), subscribe.Options{
		TLSFingerprint: cert.fingerprint,
		Reconnect:      subscribe.Backoff{Disabled: true},
		Versions:       versions,
	})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	if got := sess.Version(); want != "" && got != want {
		t.Fatalf("negotiated %q, want %s", got, want)
	}
	recordPublished(ctx, t, sess, m, pub)
	return pub
}

// recordReferenceClient starts our server (raw QUIC only), has the
// reference publisher dial it (with flags added to its own) and records m
// from the accepted session like a relay would (recordPublished). It
// returns the finished publisher.
func recordReferenceClient(ctx context.Context, t *testing.T, ref *reference, m *manifest, flags ...string) *refProcess {
	t.Helper()
	return recordReferenceClientAs(ctx, t, ref, m, "", nil, flags...)
}

// recordReferenceClientAs is recordReferenceClient with our server
// accepting only versions (nil: all) and requiring the session to run
// want ("": any).
func recordReferenceClientAs(ctx context.Context, t *testing.T, ref *reference, m *manifest, want string, versions []string, flags ...string) *refProcess {
	t.Helper()
	srv, cert := listenWithOurCert(t, versions...)
	pub := ref.start(ctx, t, "publish", append([]string{
		"--manifest", m.write(t), "--connect", srv.Addr().String(),
		"--ca", cert.certFile, "--server-name", "localhost", "--speed", "2"}, flags...)...)
	sess, err := srv.Accept(ctx)
	if err != nil {
		t.Fatalf("Accept: %v", err)
	}
	if got := sess.Version(); want != "" && got != want {
		t.Fatalf("negotiated %q, want %s", got, want)
	}
	recordPublished(ctx, t, sess, m, pub)
	return pub
}

// listenWithOurCert starts our server on loopback (raw QUIC only) with a
// fresh certificate from ourCert; it closes when the test ends.
func listenWithOurCert(t *testing.T, versions ...string) (*subscribe.Server, *testCert) {
	t.Helper()
	tlsCert, cert := ourCert(t)
	srv, err := subscribe.Listen("127.0.0.1:0", subscribe.ServerOptions{
		Certificates:        []tls.Certificate{tlsCert},
		DisableWebTransport: true,
		Versions:            versions,
	})
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv, cert
}

// recordPublished waits for m's broadcast on sess, records it and compares
// the recording with what the reference publisher pub reports, then closes
// sess and waits for pub to exit.
func recordPublished(ctx context.Context, t *testing.T, sess *subscribe.Session, m *manifest, pub *refProcess) {
	t.Helper()
	waitAnnounced(ctx, t, sess, m.Broadcast)
	pubDone := collectPublished(ctx, pub)
	cat, got := recordBroadcast(ctx, t, sess.Broadcast(m.Broadcast))
	checkRecording(ctx, t, m, pubDone, cat, got)
	_ = sess.Close()
	pub.wait(ctx)
}

// published is what the reference publisher reported: the catalog JSON it
// wrote and the groups it opened. An empty catalog means it failed first.
type published struct {
	catalog string
	groups  []event
}

// collectPublished reads the reference publisher's events up to "done" in
// the background, while the test records.
func collectPublished(ctx context.Context, pub *refProcess) <-chan published {
	out := make(chan published, 1)
	go func() {
		var p published
		defer func() { out <- p }()
		for {
			select {
			case ev, ok := <-pub.events:
				if !ok || ev.Event == "error" || ev.Event == "garbage" {
					p = published{}
					return
				}
				switch ev.Event {
				case "catalog":
					p.catalog = ev.JSON
				case "group":
					p.groups = append(p.groups, ev)
				case "done":
					return
				}
			case <-ctx.Done():
				p = published{}
				return
			}
		}
	}()
	return out
}

// checkRecording compares what our session recorded with what the reference
// published.
func checkRecording(ctx context.Context, t *testing.T, m *manifest, pubDone <-chan published, cat *catalog.Catalog, got map[string][]expectedFrame) {
	t.Helper()
	p := awaitPublished(ctx, t, pubDone)
	checkCatalog(t, cat, p.catalog)
	checkSampleCatalog(t, cat, m)
	compareRecording(t, m, p, got)
}

// awaitPublished waits for what the reference publisher reported.
func awaitPublished(ctx context.Context, t *testing.T, pubDone <-chan published) published {
	t.Helper()
	var p published
	select {
	case p = <-pubDone:
	case <-ctx.Done():
		t.Fatal("reference publisher never reported done")
	}
	if p.catalog == "" {
		t.Fatal("reference publisher failed before done; see its stderr")
	}
	return p
}

// compareRecording compares every track of the recording with the frames
// of m, in the groups the publisher reported.
func compareRecording(t *testing.T, m *manifest, p published, got map[string][]expectedFrame) {
	t.Helper()
	want := m.expected(t, p.groups)
	for _, tr := range m.Tracks {
		compareFrames(t, tr.Name, want[tr.Name], got[tr.Name])
	}
}

// TestReferenceClientPublishesIntoOurServer: our server listens (raw QUIC
// only); the reference client dials it, trusting our self-signed
// certificate, and publishes. We accept the session, wait for its
// announcement and record it like a relay would. Audio groups hold 5 frames
// here, so multi-frame audio groups are covered too.
func TestReferenceClientPublishesIntoOurServer(t *testing.T) {
	ref := needReference(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	recordReferenceClient(ctx, t, ref, sampleBroadcast("interop/ingest.hang", 5))
}

// TestReferencePublisherRefusalsEndOurTracks: @moq/net refuses a TRACK for
// an unknown broadcast with a reset that reaches us as a bare FIN under Deno,
// and never answers one for an unknown track of a known broadcast. Both must
// end our track, not hang: the first with ErrRefused, the second with
// ErrTimeout, after the request timeout and once the connection proved
// alive (twice the time it takes to find a silent peer).
func TestReferencePublisherRefusalsEndOurTracks(t *testing.T) {
	ref := needReference(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	_, cert := ourCert(t)
	m := sampleBroadcast("interop/refuse.hang", 1)
	pub := ref.start(ctx, t, "publish",
		"--manifest", m.write(t), "--listen", "127.0.0.1:0",
		"--cert", cert.certFile, "--key", cert.keyFile, "--wait-ms", "60000")
	port := pub.expect(ctx, "listening", nil).Port

	const (
		requestTimeout  = time.Second
		keepAlive, idle = 500 * time.Millisecond, 2 * time.Second
	)
	sess, err := subscribe.Dial(ctx, fmt.Sprintf("moql://127.0.0.1:%d/", port), subscribe.Options{
		TLSFingerprint: cert.fingerprint,
		Reconnect:      subscribe.Backoff{Disabled: true},
		RequestTimeout: requestTimeout,
		KeepAlive:      keepAlive, IdleTimeout: idle,
	})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	waitAnnounced(ctx, t, sess, m.Broadcast)

	for _, tc := range []struct {
		name, broadcast, track string
		want                   error
		within                 time.Duration
	}{
		// kindOf waits for the catalog first, so allow two request timeouts.
		{"UnknownBroadcast", "interop/absent.hang", "video", subscribe.ErrRefused, 3 * requestTimeout},
		// Then up to twice the silence timeout, which QUIC's PTO floor
		// stretches on a loaded machine: twice that again.
		{"UnknownTrack", m.Broadcast, "absent", subscribe.ErrTimeout, 3*requestTimeout + 4*(keepAlive+idle)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := sess.Broadcast(tc.broadcast).Track(tc.track)
			if err != nil {
				if errors.Is(err, subscribe.ErrRefused) {
					return
				}
				t.Fatalf("Track: %v, want nil or ErrRefused", err)
			}
			c := tr.Subscribe(time.Minute)
			defer c.Close()
			ready := model.NewReadySet()
			c.Watch(ready)
			start := time.Now()
			deadline := time.After(tc.within + 5*time.Second)
			for {
				ev, ok := c.Next()
				if !ok {
					select {
					case <-ready.Wakeup():
						ready.Take(nil)
						continue
					case <-deadline:
						t.Fatalf("track still open %v after the request", time.Since(start))
					}
				}
				if ev.Kind != model.EventEnd {
					t.Fatalf("unexpected event %+v", ev)
				}
				if !errors.Is(ev.Err, tc.want) {
					t.Fatalf("track ended with %v, want %v", ev.Err, tc.want)
				}
				if d := time.Since(start); d > tc.within {
					t.Errorf("the end took %v, want at most %v", d, tc.within)
				}
				t.Logf("ended after %v: %v", time.Since(start).Round(time.Millisecond), ev.Err)
				return
			}
		})
	}
}
