package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/moq-export/moq-export/subscribe"
)

// recordReference collects the "catalog", "track" (TRACK_INFO) and "frame" events of a reference subscriber
// until its "done" event, grouped per track and sorted into publish order. received, when not nil, is
// called with the frames so far (in arrival order) after each frame.
func recordReference(ctx context.Context, t *testing.T, sub *refProcess, received func(map[string][]expectedFrame)) (catalogJSON string, frames map[string][]expectedFrame, tracks []event) {
	t.Helper()
	frames = map[string][]expectedFrame{}
	for {
		ev := sub.next(ctx)
		switch ev.Event {
		case "track":
			tracks = append(tracks, ev)
		case "catalog":
			catalogJSON = ev.JSON
		case "frame":
			if ev.Wire != ev.TS {
				t.Errorf("%s group %d frame %d: moq-lite timestamp %d us differs from the container's %d us",
					ev.Track, ev.Group, ev.Index, ev.Wire, ev.TS)
			}
			frames[ev.Track] = append(frames[ev.Track], expectedFrame{
				Group: ev.Group, Index: ev.Index, TS: ev.TS, Keyframe: ev.Index == 0, Payload: ev.Data,
			})
			if received != nil {
				received(frames)
			}
		case "timeout":
			t.Errorf("reference subscriber timed out: %s", ev.raw)
		case "done":
			for _, f := range frames {
				sortFrames(f)
			}
			return catalogJSON, frames, tracks
		}
	}
}

// TestReferenceLoopbackDeliversEveryFrame runs the reference publisher
// against the reference subscriber, with no Go session in between. It checks
// the harness itself (the QUIC adapter, the manifest, the event channel and
// the comparison): when it fails, the interop tests below cannot be trusted.
func TestReferenceLoopbackDeliversEveryFrame(t *testing.T) {
	ref := needReference(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	cert := newTestCert(t)
	m := sampleBroadcast("loopback.hang", 1)
	pub, addr := listeningReference(ctx, t, ref, cert, m)
	sub := subscribingReference(ctx, t, ref, cert, m, addr)

	// The publisher's events: the catalog it wrote, then the groups it opened.
	published := pub.expect(ctx, "catalog", nil).JSON
	var groups []event
	pub.expect(ctx, "done", func(ev event) {
		if ev.Event == "group" {
			groups = append(groups, ev)
		}
	})
	want := m.expected(t, groups)

	gotCatalog, got, _ := recordReference(ctx, t, sub, nil)
	if !jsonEqual(t, gotCatalog, published) {
		t.Errorf("catalog received %s, published %s", gotCatalog, published)
	}
	for _, tr := range m.Tracks {
		compareFrames(t, tr.Name, want[tr.Name], got[tr.Name])
	}
	sub.wait(ctx)
	pub.wait(ctx)
}

// listeningReference starts the reference publisher of m on a free
// loopback port (at 4x speed, lingering 10 s for its subscriber to close)
// and returns it and its address once it listens.
func listeningReference(ctx context.Context, t *testing.T, ref *reference, cert *testCert, m *manifest) (*refProcess, string) {
	t.Helper()
	pub := ref.start(ctx, t, "publish",
		"--manifest", m.write(t), "--listen", "127.0.0.1:0",
		"--cert", cert.certFile, "--key", cert.keyFile, "--speed", "4", "--linger-ms", "10000")
	return pub, fmt.Sprintf("127.0.0.1:%d", pub.expect(ctx, "listening", nil).Port)
}

// subscribingReference starts the reference subscriber of m's broadcast at
// addr, subscribing at once (without waiting for the announcement) and
// recording for at most 30 s.
func subscribingReference(ctx context.Context, t *testing.T, ref *reference, cert *testCert, m *manifest, addr string) *refProcess {
	t.Helper()
	return ref.start(ctx, t, "subscribe", "--connect", addr, "--ca", cert.certFile,
		"--broadcast", m.Broadcast, "--announced", "false", "--max-ms", "30000")
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("catalog %q: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("catalog %q: %v", b, err)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

// TestTheReferencePublisherServesItsCatalogToASubscriberThatComesLate: the
// reference publisher writes its catalog as it starts, before it listens;
// a subscriber whose subscription comes more than @moq/net's cache window
// later (DEFAULT_LATENCY_MAX_MS, 5 s, for a track that sets none) still
// gets it, as it does from a hang publisher: @moq/publish serves the
// catalog with @moq/json's producer, which keeps the catalog's group open
// for its deltas, and @moq/net keeps an open group cached. The rig once
// wrote it as a closed group, which @moq/net drops from its cache 5 s
// after it was written: on a loaded machine, where Deno takes 5-10 s to
// start, the subscriber waited for a catalog that was never sent and the
// publisher gave up ("no subscriber for video, audio after 20000 ms":
// TestReferenceLoopbackDeliversEveryFrame failed so 3 times in 6 at load
// 60-77, and a reference restart case once in 160 under -race).
func TestTheReferencePublisherServesItsCatalogToASubscriberThatComesLate(t *testing.T) {
	ref := needReference(t)
	const late = 6 * time.Second // past the 5 s window
	for _, subscriber := range []string{"moq-export", "the reference subscriber"} {
		t.Run(subscriber, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
			defer cancel()
			cert := newTestCert(t)
			m := sampleBroadcast("interop/late.hang", 1)
			pub, addr := listeningReference(ctx, t, ref, cert, m)
			time.Sleep(late)
			if subscriber == "moq-export" {
				sess, err := subscribe.Dial(ctx, "moql://"+addr+"/", subscribe.Options{
					TLSFingerprint: cert.fingerprint,
					Reconnect:      subscribe.Backoff{Disabled: true},
				})
				if err != nil {
					t.Fatalf("Dial: %v", err)
				}
				t.Cleanup(func() { _ = sess.Close() })
				recordPublished(ctx, t, sess, m, pub)
				return
			}
			sub := subscribingReference(ctx, t, ref, cert, m, addr)
			pubDone := collectPublished(ctx, pub)
			gotCatalog, got, _ := recordReference(ctx, t, sub, nil)
			p := awaitPublished(ctx, t, pubDone)
			if !jsonEqual(t, gotCatalog, p.catalog) {
				t.Errorf("catalog received %s, published %s", gotCatalog, p.catalog)
			}
			compareRecording(t, m, p, got)
			sub.wait(ctx)
			pub.wait(ctx)
		})
	}
}
