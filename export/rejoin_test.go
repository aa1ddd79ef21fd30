package export_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/model"
)

// TestAudioResumesAfterARestartThatLandsWhileItsRejoinBackfillRuns: the
// publisher restarts (both tracks start a new timeline, the audio is
// backfilled to the video's new keyframe before it is read on), and
// restarts again while that backfill runs (its FETCH fails with the lost
// session). The audio's next read, right after the first backfill ended,
// is the second restart: it starts a second backfill, to the second
// keyframe, and the audio resumes there and runs on to its last live
// group. Before, the second backfill was started while the first one's end
// was being handled, and was forgotten with it: the audio was never read
// again (the cmaf audio of a soak's publisher restart that "did not
// resume", 25 s and 80 s until the recorder was killed), and the
// recording could not end.
func TestAudioResumesAfterARestartThatLandsWhileItsRejoinBackfillRuns(t *testing.T) {
	t.Parallel()
	key1, key2 := int64(20_000_000), int64(40_000_000)
	var (
		video, audio *model.Track
		mu           sync.Mutex
		targets      []int64
	)
	// restart starts a new timeline on both tracks at key: video group 0
	// holds the GOP from key, the audio's live groups start 600 ms later.
	restart := func(key int64) (liveAudio uint64) {
		liveAudio = uint64((key+600_000)/aacFrame) + 1
		audio.Discontinuity()
		audio.SetStart(liveAudio)
		for seq := liveAudio; seq < liveAudio+20; seq++ {
			writeAudioGroup(audio, seq)
		}
		video.Discontinuity()
		video.SetStart(0)
		g, _ := video.CreateGroup(0)
		for i := range 30 {
			g.WriteFrame(model.Frame{Timestamp: key + int64(i)*33_333, Payload: []byte{byte(i)}})
		}
		g.Close(nil)
		return liveAudio
	}
	var liveAudio2 uint64
	bc, tracks := liveJoin(t, func(tr *model.Track) func(context.Context, int64) error {
		return func(ctx context.Context, target int64) error {
			mu.Lock()
			targets = append(targets, target)
			n := len(targets)
			mu.Unlock()
			if n == 2 {
				// The first restart's backfill: the publisher restarts
				// again, and this FETCH fails with its session.
				liveAudio2 = restart(key2)
				return errors.New("session lost")
			}
			return backfillAudio(tr, target)
		}
	})
	video, audio = tracks[0], tracks[1]
	rec := newRecorder()
	// A frozen wall clock, as in the test above: the restarts of both
	// tracks come within the jitter delay of each other however slowly
	// this runs.
	frozen := time.Now()
	e := export.New(bc, rec, export.Options{Delay: 200 * time.Millisecond, MaxDelay: 2 * time.Second,
		Now: func() time.Time { return frozen }})
	poll := func(what string, until func() bool) {
		t.Helper()
		pollUntil(t, e, what, until, func() string {
			mu.Lock()
			defer mu.Unlock()
			return fmt.Sprintf("backfill targets %v, written %v", targets, rec.countByName())
		})
	}
	poll("the live join", func() bool { return e.Stats().Frames > 0 })
	restart(key1)
	nTargets := func() int { mu.Lock(); defer mu.Unlock(); return len(targets) }
	poll("the second restart's backfill", func() bool { return nTargets() == 3 })
	// The audio resumes at the second keyframe.
	poll("the audio after the second restart", func() bool {
		for _, f := range rec.frames {
			if rec.tracks[f.TrackID].Name == "aac" && f.Timestamp >= key2 {
				return true
			}
		}
		return false
	})
	video.Close(nil)
	audio.Close(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(targets) != 3 || targets[1] != key1 || targets[2] != key2 {
		t.Fatalf("backfill targets %v, want the join's, then %d and %d (the restarts' keyframes)", targets, key1, key2)
	}
	// After the second restart the audio starts within a frame before the
	// keyframe and runs on without a hole.
	if n, want := rec.audioRun(t, key2-aacFrame), int(liveAudio2+20)-int(key2/aacFrame); n != want {
		t.Fatalf("%d audio frames after the second restart, want %d (backfilled to its keyframe, then 20 live)", n, want)
	}
}
