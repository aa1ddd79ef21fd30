package faults

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
)

// TestAFileLosesNothingOfARenditionThatStallsAlone: the publisher's audio
// stalls for 1.5 s, 1.3 s into the recording, while its video goes on;
// then the audio it held comes at once. A file waits up to --max-delay
// (5 s) for a track that lags, so every frame published is in it: from
// the first to the last of the 6 s, no hole in either track, nothing
// dropped late, and ffmpeg decodes it clean. Before, the audio was taken
// for a silent track after 500 ms of wall time without a frame and
// declared idle, and what it sent then was dropped as late (a loaded
// recorder, whose audio fell 0.6 s behind its video, lost 27 audio frames
// of an MKV file this way: issue 26).
func TestAFileLosesNothingOfARenditionThatStallsAlone(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	const seconds = 6
	forEverySelectionAndContainer(t, func(t *testing.T, dir, file string, args []string) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		b := model.NewBroadcast("live")
		// The clock starts once the recorder subscribed to every track,
		// so the stall falls early in the recording however long the
		// recorder took to start.
		hold := make(chan struct{})
		go cmdtest.HoldUntilSubscribed([]*model.Broadcast{b}, hold, io.Discard)
		go demo.Publish(ctx, b, demo.Options{Realtime: true, Hold: hold,
			Stall: demo.Stall{Rendition: "aac", From: 1300 * time.Millisecond, For: 1500 * time.Millisecond}})
		srv, _, pin, err := subscribe.ServeLoopback(b, subscribe.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		r := cmdtest.StartRecorder(t, ctx, dir, append([]string{"moql://" + srv.Addr().String() + "/", "--tls-fingerprint", pin,
			"--keep-timestamps", "--duration", "6s", "--summary", "summary.json", "-v"}, args...)...)
		if err := r.Wait(); err != nil {
			t.Fatalf("exit: %v\n%s", err, r.Stamped.String())
		}
		for _, pt := range cmdtest.ReadSummary(t, filepath.Join(dir, "summary.json")).PerTrack {
			if pt.DroppedLate > 0 || pt.Gaps > 0 {
				t.Errorf("%s: received %d, written %d, dropped late %d, gaps %d", pt.Track, pt.Received, pt.Written, pt.DroppedLate, pt.Gaps)
			}
		}
		path := filepath.Join(dir, file)
		cmdtest.DecodeAtFileTimes(t, path)
		got := cmdtest.PacketsByCodec(t, path)
		if len(got) != 2 {
			t.Fatalf("streams %v", cmdtest.Keys(got))
		}
		// The publisher's first frames are at its clock's start (the
		// video's first keyframe, the audio backfilled to it).
		for codec, sp := range got {
			first, last := sp.Pts[0], sp.Pts[len(sp.Pts)-1]
			t.Logf("%s: %d packets, %.3f-%.3f s", codec, len(sp.Pts), first, last)
			if first > 0.2 || last < seconds-0.2 {
				t.Errorf("%s spans %.3f-%.3f s, want the publisher's 0-%d s", codec, first, last, seconds)
			}
			cmdtest.CheckContinuous(t, file, sp)
		}
		if t.Failed() {
			t.Logf("the recorder's log:\n%s", r.Stamped.String())
		}
	})
}
