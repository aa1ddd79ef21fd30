package subscribe

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/model"
)

// TestRenditionAddedByACatalogUpdateIsReadInItsContainer: a recorder asks
// for a rendition as soon as its own catalog watch shows the update that
// adds it, which may be before the session learned that update. The
// session waits for the snapshot naming the track instead of assuming the
// legacy container, so a loc rendition added late decodes as loc.
func TestRenditionAddedByACatalogUpdateIsReadInItsContainer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, err := demo.CatalogIn([]string{"h264"}, catalog.ContainerLOC)
	if err != nil {
		t.Fatal(err)
	}
	updated, err := demo.CatalogIn([]string{"h264", "aac"}, catalog.ContainerLOC)
	if err != nil {
		t.Fatal(err)
	}
	pub := model.NewBroadcast("live")
	catTrack := pub.CreateTrack(catalog.TrackName)
	writeCatalog := func(c *catalog.Catalog) {
		data, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		g, _ := catTrack.AppendGroup()
		g.WriteFrame(model.Frame{Payload: data})
		g.Close(nil)
	}
	writeCatalog(first)
	aac := mustSample(t, "aac")
	audio := pub.CreateTrack("aac")
	audio.SetKeepGroups(100000)
	pub.CreateTrack("h264")

	srv, url, pin, err := ServeLoopback(pub, ServerOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	sess, err := Dial(ctx, url, Options{TLSFingerprint: pin, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	bc := sess.Broadcast("live")
	if _, err := bc.Track("h264"); err != nil {
		t.Fatal(err)
	}
	sess.mu.Lock()
	rb := sess.remotes["live"]
	sess.mu.Unlock()
	waitFor(t, "the first catalog learned", func() bool { return rb.knownKind("h264") != "" })
	// The rendition is asked for before the session saw the update.
	tr, err := bc.Track("aac")
	if err != nil {
		t.Fatal(err)
	}
	writeCatalog(updated)
	// A live subscription starts at the newest group: publish at the
	// sample's pace until three frames arrived.
	go func() {
		for _, f := range aac.Frames {
			g, _ := audio.AppendGroup() // every AAC frame is a keyframe: a group each
			g.WriteFrame(model.Frame{Timestamp: f.Timestamp, Payload: f.Payload})
			g.Close(nil)
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	got, err := readEvents(ctx, tr.Subscribe(0), func(evs []model.Event) bool { return frameCount(evs) >= 3 })
	if err != nil {
		t.Fatalf("%v after %d events", err, len(got))
	}
	byTS := map[int64][]byte{}
	for _, f := range aac.Frames {
		byTS[f.Timestamp] = f.Payload
	}
	for _, ev := range got {
		if ev.Kind != model.EventFrame {
			continue
		}
		if want, ok := byTS[ev.Frame.Timestamp]; !ok || !bytes.Equal(ev.Frame.Payload, want) {
			t.Fatalf("frame at %d µs (%d bytes) is not the sample's: the loc rendition was not read as loc", ev.Frame.Timestamp, len(ev.Frame.Payload))
		}
	}
}
