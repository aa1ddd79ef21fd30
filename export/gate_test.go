package export_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
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
	ct := bc.CreateTrack(catalog.TrackName)
	writeCatalog(t, ct, "h264", "aac")
	ct.Close(nil)
	video, audio := bc.CreateTrack("h264"), bc.CreateTrack("aac")
	// A remote track is subscribed by the export itself, so nothing it
	// received is dropped before the export's consumer is there.
	audio.SetKeepGroups(1000)
	g, _ := video.CreateGroup(1)
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

// pollUntil polls e until until holds, for up to 10 s; state says what
// the test sees when it times out.
func pollUntil(t *testing.T, e *export.Export, what string, until func() bool, state func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !until() {
		if err := e.Poll(); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %s", what, state())
		}
		time.Sleep(time.Millisecond)
	}
}

// audioRun checks that the audio written from from on steps one AAC
// frame at a time (what comes after a restart), and returns its frames.
func (r *recorder) audioRun(t *testing.T, from int64) int {
	t.Helper()
	var prev int64 = -1
	n := 0
	for _, f := range r.frames {
		if r.tracks[f.TrackID].Name != "aac" || f.Timestamp < from {
			continue
		}
		if prev >= 0 && (f.Timestamp-prev < aacFrame-1 || f.Timestamp-prev > aacFrame+1) {
			t.Fatalf("audio after the restart steps from %d to %d", prev, f.Timestamp)
		}
		prev = f.Timestamp
		n++
	}
	return n
}

// backfillAudio writes the aac groups (one frame each) before the oldest
// one tr holds, back to the one at or before target: a backfill handler's
// work.
func backfillAudio(tr *model.Track, target int64) error {
	seq, ts, ok := tr.OldestGroup()
	for ok && ts > target && seq > 0 {
		seq--
		ts = int64(seq) * aacFrame
		if err := writeAudioGroup(tr, seq); err != nil {
			return err
		}
	}
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
			return backfillAudio(tr, target)
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

// TestAudioRestartsAtTheVideoKeyframeAfterAPublisherRestart: a recording
// joined live (h264 GOP at 1 s, aac backfilled to it) when the publisher
// restarts: both tracks start a new timeline, the video at its keyframe at
// 20 s, the audio at its newest frame 600 ms later. The audio is
// backfilled to the keyframe before it is read on, as at a live join,
// whichever track's restart is read first; without that, it would start
// 600 ms after the picture.
func TestAudioRestartsAtTheVideoKeyframeAfterAPublisherRestart(t *testing.T) {
	for _, order := range []string{"audio first", "video first", "video rewinds in place"} {
		t.Run(order, func(t *testing.T) {
			t.Parallel()
			var (
				mu      sync.Mutex
				targets []int64
				filled  int // backfills that returned
			)
			nFilled := func() int { mu.Lock(); defer mu.Unlock(); return filled }
			bc, tracks := liveJoin(t, func(tr *model.Track) func(context.Context, int64) error {
				return func(ctx context.Context, target int64) error {
					mu.Lock()
					targets = append(targets, target)
					mu.Unlock()
					defer func() {
						mu.Lock()
						filled++
						mu.Unlock()
					}()
					return backfillAudio(tr, target)
				}
			})
			video, audio := tracks[0], tracks[1]
			rec := newRecorder()
			// The wall clock stands still: the restarts of both tracks
			// come within the jitter delay of each other however slowly
			// this test runs, as a restarted publisher's tracks do (a
			// silent audio track would otherwise let the video run on
			// after 200 ms of wall time, and the audio's backfill would
			// come late).
			frozen := time.Now()
			e := export.New(bc, rec, export.Options{Delay: 200 * time.Millisecond, MaxDelay: 2 * time.Second,
				Now: func() time.Time { return frozen }})
			poll := func(until func() bool) {
				t.Helper()
				pollUntil(t, e, "the restart", until, func() string { return fmt.Sprint(rec.countByName()) })
			}
			poll(func() bool { return e.Stats().Frames > 0 })
			written := len(rec.frames)
			// A loaded machine may deschedule this test for longer than
			// the delay here: the frozen clock makes it nothing to the
			// export (the video-first case failed this way before).
			time.Sleep(250 * time.Millisecond)

			// The restart: the new session's groups, on the same clock
			// 19 s later. Video's group 0 holds the GOP from 20 s.
			key := int64(20_000_000)
			restartVideo := func() {
				video.Discontinuity()
				video.SetStart(0)
				g, _ := video.CreateGroup(0)
				for i := range 30 {
					g.WriteFrame(model.Frame{Timestamp: key + int64(i)*33_333, Payload: []byte{byte(i)}})
				}
				g.Close(nil)
			}
			var liveAudio uint64 // the audio's first live group of the new timeline
			restartAudio := func() {
				liveAudio = uint64((key+600_000)/aacFrame) + 1
				audio.Discontinuity()
				audio.SetStart(liveAudio)
				for seq := liveAudio; seq < liveAudio+20; seq++ {
					writeAudioGroup(audio, seq)
				}
			}
			if order == "video rewinds in place" {
				// The video's new session went on with the next group
				// number, taken for the same session: its clock went
				// back (to 500 ms) without a new timeline.
				key = 500_000
				restartVideo = func() {
					g, _ := video.CreateGroup(2)
					for i := range 30 {
						g.WriteFrame(model.Frame{Timestamp: key + int64(i)*33_333, Payload: []byte{byte(i)}})
					}
					g.Close(nil)
				}
			}
			if order != "video first" {
				restartAudio()
				// Let the export read the audio's restart first.
				settle := time.Now().Add(50 * time.Millisecond)
				poll(func() bool { return time.Now().After(settle) })
				restartVideo()
			} else {
				restartVideo()
				poll(func() bool { return len(rec.frames) > written })
				restartAudio()
			}
			// Until the restart's backfill returned (closing the track
			// before would cut it short: under -race on a loaded machine
			// it once stopped 8 groups short), or long enough to see
			// that none will.
			settle := time.Now().Add(time.Second)
			poll(func() bool { return nFilled() > 1 || time.Now().After(settle) })
			video.Close(nil)
			audio.Close(nil)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := e.Run(ctx); err != nil {
				t.Fatalf("Run: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(targets) != 2 || targets[1] != key {
				t.Fatalf("backfill targets %v, want the join's and one at the restart keyframe %d", targets, key)
			}
			// The first frame of each track after the restart, as the
			// muxer got it (the jitter buffer may shift the new timeline,
			// both tracks alike).
			after := map[string]mux.Frame{}
			for _, f := range rec.frames {
				name := rec.tracks[f.TrackID].Name
				if _, ok := after[name]; !ok && f.Discontinuity {
					after[name] = f
				}
			}
			v, a := after["h264"], after["aac"]
			if !v.Discontinuity || !a.Discontinuity {
				t.Fatalf("no discontinuity on both tracks: %+v", after)
			}
			if a.Timestamp > v.Timestamp || v.Timestamp-a.Timestamp >= aacFrame {
				t.Fatalf("after the restart audio starts at %d, video at %d: want the audio within one frame before the keyframe",
					a.Timestamp, v.Timestamp)
			}
			// And the audio runs on without a hole from there to the
			// live groups.
			n := rec.audioRun(t, a.Timestamp)
			if want := int(liveAudio+20) - int(key/aacFrame); n != want {
				t.Fatalf("%d audio frames after the restart, want %d (backfilled to the keyframe, then 20 live)", n, want)
			}
		})
	}
}
