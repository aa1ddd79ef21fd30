package subscribe

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/model"
)

// cmafPeer serves pb on loopback and returns our session's view of it.
func cmafPeer(t *testing.T, ctx context.Context, pb *model.Broadcast) *model.Broadcast {
	t.Helper()
	srv, url, pin, err := ServeLoopback(pb, ServerOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	sess, err := Dial(ctx, url, Options{TLSFingerprint: pin, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess.Broadcast(pb.Name())
}

func writeCatalog(t *testing.T, b *model.Broadcast, js []byte) {
	t.Helper()
	g, err := b.CreateTrack(catalog.TrackName).AppendGroup()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.WriteFrame(model.Frame{Payload: js}); err != nil {
		t.Fatal(err)
	}
	g.Close(nil)
}

func TestCMAFTrackWithoutAReadableInitEndsWithErrBadInit(t *testing.T) {
	checkGoroutines(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pb := model.NewBroadcast("bad")
	writeCatalog(t, pb, []byte(`{"video":{"renditions":{"0.m4s":{"codec":"avc1.64001e","container":{"kind":"cmaf","init":"AAAA"}}}}}`))
	pb.CreateTrack("0.m4s")
	tr, err := cmafPeer(t, ctx, pb).Track("0.m4s")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := readEvents(ctx, tr.Subscribe(time.Hour), func([]model.Event) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	if end := evs[len(evs)-1]; end.Kind != model.EventEnd || !errors.Is(end.Err, catalog.ErrBadInit) {
		t.Fatalf("track ended with %+v, want ErrBadInit", end)
	}
}

// TestBadCMAFFrameIsSkippedWithTheDeltaFramesAfterIt: a frame that does
// not parse costs that frame and the delta frames that depend on it, up to
// the next keyframe; the track goes on.
func TestBadCMAFFrameIsSkippedWithTheDeltaFramesAfterIt(t *testing.T) {
	checkGoroutines(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The demo in cmaf, as its publisher would send it.
	src := model.NewBroadcast("demo")
	if err := demo.Publish(ctx, src, demo.Options{Renditions: []string{"h264"}, Loops: 1, KeepGroups: 1 << 10, Container: catalog.ContainerCMAF}); err != nil {
		t.Fatal(err)
	}
	st, _ := src.Track("0.m4s")
	g0, _, _ := st.Group(0).Frames(0)
	g1, _, _ := st.Group(1).Frames(0)
	if len(g0) < 6 || len(g1) < 2 {
		t.Fatalf("demo groups of %d and %d frames", len(g0), len(g1))
	}
	cs, _ := src.Track(catalog.TrackName)
	cf, _, _ := cs.Group(0).Frames(0)

	pb := model.NewBroadcast("cmaf")
	writeCatalog(t, pb, cf[0].Payload)
	pt := pb.CreateTrack("0.m4s")
	pt.SetKeepGroups(1 << 10)
	write := func(frames []model.Frame, bad int) {
		g, err := pt.AppendGroup()
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range frames {
			if i == bad {
				f.Payload = f.Payload[:len(f.Payload)/2] // cut inside the mdat
			}
			if err := g.WriteFrame(f); err != nil {
				t.Fatal(err)
			}
		}
		g.Close(nil)
	}
	write(g0[:1], -1)
	tr, err := cmafPeer(t, ctx, pb).Track("0.m4s")
	if err != nil {
		t.Fatal(err)
	}
	c := tr.Subscribe(time.Hour)
	if _, err := readEvents(ctx, c, func(evs []model.Event) bool { return frameCount(evs) == 1 }); err != nil {
		t.Fatal(err)
	}
	// Group 1 of the publisher: the rest of the demo's group 0, its frame
	// 3 cut short; then the demo's group 1.
	write(g0, 3)
	write(g1, -1)
	pt.Close(nil)
	evs, err := readEvents(ctx, c, func([]model.Event) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	var got []model.Event
	for _, e := range evs {
		if e.Kind == model.EventFrame {
			got = append(got, e)
		}
	}
	// Frames 0-2 of the demo's group, then nothing until the keyframe
	// that opens group 2.
	if len(got) != 3+len(g1) || !got[0].Keyframe || got[3].Group != 2 || !got[3].Keyframe {
		t.Fatalf("%d frames (want %d), first of group 2: %+v", len(got), 3+len(g1), got[min(3, len(got)-1)])
	}
	if end := evs[len(evs)-1]; end.Kind != model.EventEnd || end.Err != nil {
		t.Fatalf("track ended with %+v", end)
	}
}
