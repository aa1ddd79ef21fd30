package export_test

import (
	"context"
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

// TestALateRenditionInAFileIsBackfilledToItsFirstFrameThoughTheFetchIsSlow:
// an audio rendition a catalog update adds at 2 s is subscribed 170 ms
// later (its first group is the 8th); the FETCH of the 8 before takes
// 1.5 s, a loaded machine's. A file waits for it (up to MaxDelay, as the
// start gate does), so the audio starts at 2 s. Before, a late track's
// backfill had 1 s whatever the output: the audio started at 2.170 s
// (e2e/binary's TestLateRenditionStartsTheNextNumberedFile/flv under a
// CPU hog: "audio starts at 2.170s, the second file at 2.000s").
func TestALateRenditionInAFileIsBackfilledToItsFirstFrameThoughTheFetchIsSlow(t *testing.T) {
	t.Parallel()
	l := newLateAudio(t)
	ct, audio, rec, e, state, gop, write := l.ct, l.audio, l.rec, l.e, l.state, l.gop, l.write
	const first, groups = 8, 50 // the subscription's first group; all of them
	for seq := uint64(first); seq < groups; seq++ {
		write(seq)
	}
	fetched := make(chan error, 1)
	audio.HandleBackfill(func(ctx context.Context, target int64) error {
		select {
		case <-ctx.Done():
			fetched <- ctx.Err()
			return ctx.Err()
		case <-time.After(1500 * time.Millisecond):
		}
		for seq := uint64(0); seq < first; seq++ {
			write(seq)
		}
		fetched <- nil
		return nil
	})
	writeCatalog(t, ct, "h264", "aac")
	gop(2)
	pollUntil(t, e, "the audio", func() bool { return rec.countByName()["aac"] > 0 }, state)
	select {
	case err := <-fetched:
		if err != nil {
			t.Errorf("the backfill (1.5 s) was cut: %v", err)
		}
	default:
		t.Errorf("the audio was read before its backfill ended")
	}
	l.finish(t, groups)
}

// TestALateRenditionWhoseFirstGroupComesAfterItWasTakenIsBackfilledFromIt:
// under load the engine takes a late audio rendition (the catalog
// update) before its subscription brought the first group, group 8 here.
// A backfill fetches what precedes the oldest group the track holds; asked
// while it held none it had nothing to go back from and returned at once:
// e2e/binary's TestLateRenditionStartsTheNextNumberedFile under the whole
// suite, "audio starts at 2.767s, the second file at 2.000s" (its
// subscription's group 36); here the audio started at 2.981 s (the video
// had gone on meanwhile). The backfill waits for the first group, and the
// audio starts at 2 s.
func TestALateRenditionWhoseFirstGroupComesAfterItWasTakenIsBackfilledFromIt(t *testing.T) {
	t.Parallel()
	l := newLateAudio(t)
	ct, audio, rec, e, state, gop, write := l.ct, l.audio, l.rec, l.e, l.state, l.gop, l.write
	const first, groups = 8, 50 // the subscription's first group; all of them
	// The handler keeps model.Track.Backfill's contract as the session's
	// does: it adds the groups before the oldest one held, none when it
	// holds none.
	asked := make(chan struct{}, 1)
	audio.HandleBackfill(func(ctx context.Context, target int64) error {
		select {
		case asked <- struct{}{}:
		default:
		}
		seq, _, ok := audio.OldestGroup()
		if !ok {
			return nil
		}
		for s := range seq {
			write(s)
		}
		return nil
	})
	writeCatalog(t, ct, "h264", "aac")
	gop(2)
	// The subscription's groups come once the engine took the rendition
	// and asked for its backfill, or 300 ms after it took it.
	pollUntil(t, e, "the engine's subscription of the audio", func() bool { return audio.Consumers() > 0 }, state)
	took := time.Now()
	for {
		if err := e.Poll(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-asked:
		default:
			if time.Since(took) < 300*time.Millisecond {
				time.Sleep(time.Millisecond)
				continue
			}
		}
		break
	}
	for seq := uint64(first); seq < groups; seq++ {
		write(seq)
	}
	pollUntil(t, e, "the audio", func() bool { return rec.countByName()["aac"] > 0 }, state)
	l.finish(t, groups)
}

// lateAudio is what the two tests of a late audio rendition's backfill
// share: a file's engine (Delay 0.5 s, MaxDelay 5 s) that has written
// two GOPs of a broadcast's video, and an audio track the catalog does not
// list yet, whose group seq holds one AAC frame at 2 s plus seq frames.
type lateAudio struct {
	ct, video, audio *model.Track
	rec              *recorder
	e                *export.Export
	state            func() string
	gop, write       func(seq uint64)
}

func newLateAudio(t *testing.T) *lateAudio {
	l := &lateAudio{}
	bc := model.NewBroadcast("late")
	l.ct = bc.CreateTrack(catalog.TrackName)
	writeCatalog(t, l.ct, "h264")
	l.video = bc.CreateTrack("h264")
	l.gop = func(seq uint64) {
		g, _ := l.video.CreateGroup(seq)
		for i := range 30 {
			g.WriteFrame(model.Frame{Timestamp: int64(seq)*1_000_000 + int64(i)*33_333, Payload: []byte{byte(i)}})
		}
		g.Close(nil)
	}
	l.gop(0)
	l.gop(1)
	l.rec = newRecorder()
	l.e = export.New(bc, l.rec, export.Options{Delay: 500 * time.Millisecond, MaxDelay: 5 * time.Second})
	l.state = func() string { return fmt.Sprintf("written %v", l.rec.countByName()) }
	pollUntil(t, l.e, "the first two GOPs", func() bool { return len(l.rec.frames) == 60 }, l.state)

	l.audio = bc.CreateTrack("aac")
	l.audio.SetKeepGroups(1000)
	l.write = func(seq uint64) {
		g, _ := l.audio.CreateGroup(seq)
		g.WriteFrame(model.Frame{Timestamp: 2_000_000 + int64(seq)*aacFrame, Payload: []byte{byte(seq)}})
		g.Close(nil)
	}
	return l
}

// finish ends the tracks, runs the engine to its end, and checks that the
// file's audio starts at its first frame, 2 s, with all of its groups.
func (l *lateAudio) finish(t *testing.T, groups int) {
	t.Helper()
	l.video.Close(nil)
	l.audio.Close(nil)
	l.ct.Close(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.e.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := l.rec.firstTimestamps()["aac"]; got != 2_000_000 {
		t.Errorf("the audio starts at %d µs, want 2000000 (its first frame)", got)
	}
	if n := l.rec.countByName()["aac"]; n != groups {
		t.Errorf("%d audio frames written, want %d", n, groups)
	}
}
