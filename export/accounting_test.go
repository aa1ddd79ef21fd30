package export_test

import (
	"context"
	"testing"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/model"
)

// TestFramesNoKeyframeLedToAreCountedOnTheirTrack: a video track whose
// first group opens with three delta frames (a CMAF group need not open
// with a keyframe) is read from its keyframe on; the three frames before
// it, which no decoder could show, are counted in the track's
// DroppedNoKeyframe, apart from the frames received. Before, only the
// model's Consumer.Dropped knew of them, and nothing showed it.
func TestFramesNoKeyframeLedToAreCountedOnTheirTrack(t *testing.T) {
	t.Parallel()
	bc := model.NewBroadcast("delta")
	ct := bc.CreateTrack(catalog.TrackName)
	writeCatalog(t, ct, "h264")
	ct.Close(nil)
	video := bc.CreateTrack("h264")
	video.SetKeepGroups(100)
	g, _ := video.CreateGroup(0)
	for i := range 10 {
		sync := model.SyncDelta
		if i == 3 {
			sync = model.SyncKey
		}
		g.WriteFrame(model.Frame{Timestamp: int64(i) * 33_333, Sync: sync, Payload: []byte{byte(i)}})
	}
	g.Close(nil)
	g, _ = video.CreateGroup(1)
	for i := range 10 {
		g.WriteFrame(model.Frame{Timestamp: int64(10+i) * 33_333, Payload: []byte{byte(i)}})
	}
	g.Close(nil)
	video.Close(nil)
	rec := newRecorder()
	e := export.New(bc, rec, export.Options{})
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	stats := e.TrackStats()
	if len(stats) != 1 {
		t.Fatalf("track stats %+v", stats)
	}
	if s := stats[0]; s.DroppedNoKeyframe != 3 || s.Received != 17 || s.Written != 17 {
		t.Errorf("received %d, written %d, dropped for want of a keyframe %d; want 17, 17 and 3", s.Received, s.Written, s.DroppedNoKeyframe)
	}
}
