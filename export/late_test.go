package export_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
)

// addRecorder is a recorder that notes how many frames it had written
// when each track was added.
type addRecorder struct {
	*recorder
	addedAt map[string]int
}

func (r *addRecorder) AddTrack(t mux.Track) error {
	r.addedAt[t.Name] = len(r.frames)
	return r.recorder.AddTrack(t)
}

// TestARenditionAddedWhileTheVideoIsReadJoinsAtItsKeyframe: the publisher
// adds an audio rendition to its catalog at 2 s, then writes the video's
// keyframe of 2 s, while the recorder is in the middle of reading the
// video (the catalog update lands after the reader took its list of
// tracks to read). The rendition is in the muxer before that keyframe
// is written, so FLV and MP4 outputs with {n} start their next file at
// it, where the audio begins. Before, the keyframe left with the frames
// read alongside it, the update was read at the next poll, and the next
// file began a GOP later (TestLateRenditionStartsTheNextNumberedFile
// under load: the second FLV file started at the 3 s keyframe).
func TestARenditionAddedWhileTheVideoIsReadJoinsAtItsKeyframe(t *testing.T) {
	t.Parallel()
	bc := model.NewBroadcast("late")
	ct := bc.CreateTrack(catalog.TrackName)
	writeCatalog(t, ct, "h264")
	video := bc.CreateTrack("h264")
	const step = 33_333
	gop := func(seq uint64, frames int) *model.Group {
		g, _ := video.CreateGroup(seq)
		for i := range frames {
			g.WriteFrame(model.Frame{Timestamp: int64(seq)*1_000_000 + int64(i)*step, Payload: []byte{byte(i)}})
		}
		return g
	}
	g0 := gop(0, 30)
	g0.Close(nil)
	g1 := gop(1, 29)
	rec := &addRecorder{recorder: newRecorder(), addedAt: map[string]int{}}
	// The publisher's next writes happen while the export pushes the
	// video's frame of 1.967 s (the jitter buffer asks the time then).
	var publish func()
	now := func() time.Time {
		if p := publish; p != nil {
			publish = nil
			p()
		}
		return time.Now()
	}
	e := export.New(bc, rec, export.Options{Delay: 500 * time.Millisecond, MaxDelay: 5 * time.Second, Now: now})
	poll := func(what string, until func() bool) {
		t.Helper()
		pollUntil(t, e, what, until, func() string {
			return fmt.Sprintf("written %v, tracks added at %v", rec.countByName(), rec.addedAt)
		})
	}
	poll("the first 59 video frames", func() bool { return len(rec.frames) == 59 })
	audio := bc.CreateTrack("aac")
	publish = func() {
		writeCatalog(t, ct, "h264", "aac")
		g1.Close(nil)
		gop(2, 30).Close(nil)
		for seq := uint64(0); seq < 50; seq++ {
			g, _ := audio.CreateGroup(seq)
			g.WriteFrame(model.Frame{Timestamp: 2_000_000 + int64(seq)*aacFrame, Payload: []byte{byte(seq)}})
			g.Close(nil)
		}
	}
	g1.WriteFrame(model.Frame{Timestamp: 1_000_000 + 29*step, Payload: []byte{29}})
	poll("the audio", func() bool { return rec.countByName()["aac"] > 0 })
	at, ok := rec.addedAt["aac"]
	if !ok {
		t.Fatalf("the audio rendition was never added: tracks added at %v", rec.addedAt)
	}
	// The 2 s keyframe is video frame 61 (index 60).
	if at > 60 {
		t.Fatalf("the audio was added after %d frames were written, past the 2 s keyframe (frame 61): the last written %v", at, rec.handed[max(0, at-3):at])
	}
	video.Close(nil)
	audio.Close(nil)
	ct.Close(nil)
}
