package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"
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
	pub := ref.start(ctx, t, "publish",
		"--manifest", m.write(t), "--listen", "127.0.0.1:0",
		"--cert", cert.certFile, "--key", cert.keyFile, "--speed", "4", "--linger-ms", "10000")
	port := pub.expect(ctx, "listening", nil).Port
	sub := ref.start(ctx, t, "subscribe",
		"--connect", fmt.Sprintf("127.0.0.1:%d", port), "--ca", cert.certFile,
		"--broadcast", m.Broadcast, "--announced", "false", "--max-ms", "30000")

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
