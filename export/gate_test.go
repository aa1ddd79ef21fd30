package export_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/model"
)

const aacFrame = 21_333 // µs, 1024 samples at 48 kHz

// liveJoin returns a broadcast as a recorder joining it live sees it: the
// h264 track holds the GOP that began at 1 s (30 frames), the aac track
// only its newest frames (one per group, groups 47 to 93, from 1.003 s);
// both are live (open). backfill, when set, is the aac track's backfill
// handler.
func liveJoin(t *testing.T, backfill func(tr *model.Track) func(context.Context, int64) error) (*model.Broadcast, []*model.Track) {
	t.Helper()
	bc := model.NewBroadcast("live")
	cat, err := demo.Catalog([]string{"h264", "aac"})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := cat.Marshal()
	ct := bc.CreateTrack(catalog.TrackName)
	g, _ := ct.AppendGroup()
	g.WriteFrame(model.Frame{Payload: data})
	g.Close(nil)
	ct.Close(nil)
	video, audio := bc.CreateTrack("h264"), bc.CreateTrack("aac")
	// A remote track is subscribed by the export itself, so nothing it
	// received is dropped before the export's consumer is there.
	audio.SetKeepGroups(1000)
	g, _ = video.CreateGroup(1)
	for i := range 30 {
		g.WriteFrame(model.Frame{Timestamp: 1_000_000 + int64(i)*33_333, Payload: []byte{byte(i)}})
	}
	g.Close(nil)
	for seq := uint64(47); seq <= 93; seq++ {
		writeAudioGroup(audio, seq)
	}
	if backfill != nil {
		audio.HandleBackfill(backfill(audio))
	}
	return bc, []*model.Track{video, audio}
}

// runLive exports bc into rec: polls until the live join wrote its first
// frames, then the end of the media tracks, then Run to the end.
func runLive(t *testing.T, bc *model.Broadcast, tracks []*model.Track, rec *recorder, opts export.Options) {
	t.Helper()
	e := export.New(bc, rec, opts)
	// Poll until the gate opened (backfills run in the background and the
	// first frames leave only after it), then let the live tracks end.
	deadline := time.Now().Add(10 * time.Second)
	for e.Stats().Frames == 0 {
		if err := e.Poll(); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the start gate never opened")
		}
		time.Sleep(time.Millisecond)
	}
	for _, tr := range tracks {
		tr.Close(nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func writeAudioGroup(tr *model.Track, seq uint64) error {
	g, err := tr.CreateGroup(seq)
	if err != nil {
		return err
	}
	g.WriteFrame(model.Frame{Timestamp: int64(seq) * aacFrame, Payload: []byte{byte(seq)}})
	g.Close(nil)
	return nil
}

// firstTimestamps returns the first timestamp written per track name.
func (r *recorder) firstTimestamps() map[string]int64 {
	out := map[string]int64{}
	for _, f := range r.frames {
		name := r.tracks[f.TrackID].Name
		if _, ok := out[name]; !ok {
			out[name] = f.Timestamp
		}
	}
	return out
}

func TestStartGateBackfillsAudioToTheFirstVideoKeyframe(t *testing.T) {
	var targets []int64
	bc, tracks := liveJoin(t, func(tr *model.Track) func(context.Context, int64) error {
		return func(ctx context.Context, target int64) error {
			targets = append(targets, target)
			seq, ts, _ := tr.OldestGroup()
			for ts > target && seq > 0 {
				seq--
				ts = int64(seq) * aacFrame
				if err := writeAudioGroup(tr, seq); err != nil {
					return err
				}
			}
			return nil
		}
	})
	rec := newRecorder()
	runLive(t, bc, tracks, rec, export.Options{Delay: 200 * time.Millisecond})
	if len(targets) != 1 || targets[0] != 1_000_000 {
		t.Fatalf("backfill targets %v, want one at the video keyframe 1000000", targets)
	}
	first := rec.firstTimestamps()
	if first["h264"] != 1_000_000 || first["aac"] > first["h264"] || first["h264"]-first["aac"] >= aacFrame {
		t.Fatalf("first timestamps %v: audio must start within one frame before the video", first)
	}
	if n := rec.countByName()["aac"]; n != 48 {
		t.Fatalf("%d aac frames, want 48 (one backfilled, 47 live)", n)
	}
}

// TestFailedOrSlowBackfillIsHarmless: a backfill that fails, or one that
// only returns when its context ends, costs at most the bounded wait; the
// recording holds every live frame and audio starts at its first one.
func TestFailedOrSlowBackfillIsHarmless(t *testing.T) {
	for _, tt := range []struct {
		name string
		fn   func(context.Context, int64) error
	}{
		{"Fails", func(context.Context, int64) error { return errors.New("peer refused FETCH") }},
		{"Hangs", func(ctx context.Context, _ int64) error { <-ctx.Done(); return ctx.Err() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			called := false
			bc, tracks := liveJoin(t, func(*model.Track) func(context.Context, int64) error {
				return func(ctx context.Context, target int64) error {
					called = true
					return tt.fn(ctx, target)
				}
			})
			rec := newRecorder()
			start := time.Now()
			runLive(t, bc, tracks, rec, export.Options{Delay: 300 * time.Millisecond})
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("export took %v with a stuck backfill, want about the 300ms bound", took)
			}
			if !called {
				t.Fatal("backfill was not asked for")
			}
			if first := rec.firstTimestamps(); first["aac"] != 47*aacFrame {
				t.Errorf("aac starts at %d, want its first live frame", first["aac"])
			}
			if c := rec.countByName(); c["aac"] != 47 || c["h264"] != 30 {
				t.Errorf("frames %v, want 47 aac and 30 h264", c)
			}
		})
	}
}

// TestStartGateOpensAfterTheDelayWhenATrackStaysSilent: the audio track
// never receives anything; the video is held by the gate only until the
// jitter delay passed.
func TestStartGateOpensAfterTheDelayWhenATrackStaysSilent(t *testing.T) {
	bc := model.NewBroadcast("live")
	cat, _ := demo.Catalog([]string{"h264", "aac"})
	data, _ := cat.Marshal()
	g, _ := bc.CreateTrack(catalog.TrackName).AppendGroup()
	g.WriteFrame(model.Frame{Payload: data})
	g.Close(nil)
	video, audio := bc.CreateTrack("h264"), bc.CreateTrack("aac")
	backfilled := false
	audio.HandleBackfill(func(context.Context, int64) error { backfilled = true; return nil })
	g, _ = video.AppendGroup()
	for i := range 30 {
		g.WriteFrame(model.Frame{Timestamp: int64(i) * 33_333, Payload: []byte{byte(i)}})
	}
	now := time.Unix(1000, 0)
	rec := newRecorder()
	e := export.New(bc, rec, export.Options{Delay: 500 * time.Millisecond, Now: func() time.Time { return now }})
	for range 3 {
		if err := e.Poll(); err != nil {
			t.Fatal(err)
		}
	}
	if len(rec.tracks) != 2 || len(rec.frames) != 0 {
		t.Fatalf("before the delay: %d tracks, %d frames written", len(rec.tracks), len(rec.frames))
	}
	// Past the gate's deadline, then past the jitter buffer's hold for the
	// silent track: the video flows.
	for range 2 {
		now = now.Add(600 * time.Millisecond)
		if err := e.Poll(); err != nil {
			t.Fatal(err)
		}
	}
	if n := rec.countByName()["h264"]; n == 0 {
		t.Fatal("the video stayed held after the delay")
	}
	if backfilled {
		t.Error("backfill asked of a track without a frame")
	}
}

// TestStartGateWaitsUpToMaxDelayForALateFirstGroup: where the delay may
// grow (files), the start waits up to MaxDelay for a track's first frame,
// so a video group that comes 1.2 s after the audio (a loaded machine) is
// written whole instead of dropped as late.
func TestStartGateWaitsUpToMaxDelayForALateFirstGroup(t *testing.T) {
	bc := model.NewBroadcast("live")
	cat, _ := demo.Catalog([]string{"h264", "aac"})
	data, _ := cat.Marshal()
	g, _ := bc.CreateTrack(catalog.TrackName).AppendGroup()
	g.WriteFrame(model.Frame{Payload: data})
	g.Close(nil)
	video, audio := bc.CreateTrack("h264"), bc.CreateTrack("aac")
	audio.SetKeepGroups(1000)
	for seq := uint64(0); seq < 60; seq++ {
		writeAudioGroup(audio, seq)
	}
	now := time.Unix(1000, 0)
	rec := newRecorder()
	e := export.New(bc, rec, export.Options{Delay: 500 * time.Millisecond, MaxDelay: 3 * time.Second, Now: func() time.Time { return now }})
	for range 2 {
		if err := e.Poll(); err != nil {
			t.Fatal(err)
		}
		now = now.Add(600 * time.Millisecond)
	}
	if len(rec.frames) != 0 {
		t.Fatalf("%d frames written before the video's first group, within MaxDelay", len(rec.frames))
	}
	g, _ = video.AppendGroup()
	for i := range 30 {
		g.WriteFrame(model.Frame{Timestamp: int64(i) * 33_333, Payload: []byte{byte(i)}})
	}
	g.Close(nil)
	video.Close(nil)
	audio.Close(nil)
	for range 20 {
		if err := e.Poll(); err != nil {
			t.Fatal(err)
		}
		now = now.Add(100 * time.Millisecond)
	}
	if n := rec.countByName()["h264"]; n != 30 {
		t.Fatalf("%d video frames written, want the whole first group (30); stats %+v", n, e.Stats())
	}
	if n := rec.countByName()["aac"]; n != 60 {
		t.Fatalf("%d audio frames written, want 60", n)
	}
}
