package export_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux/mkv"
)

// corrupted copies one loop of the demo into a new broadcast, with video
// frame badVideo given a byte before its NAL units (as a legacy timestamp
// left in place: the lengths no longer add up) and audio frame badAudio
// an ADTS header. It returns the broadcast and how many video frames the
// export must drop: the bad one and the rest of its GOP.
func corrupted(t *testing.T, badVideo, badAudio int) (*model.Broadcast, int) {
	t.Helper()
	src := model.NewBroadcast("demo")
	if err := demo.Publish(context.Background(), src, demo.Options{Loops: 1, KeepGroups: 1000}); err != nil {
		t.Fatal(err)
	}
	dst := model.NewBroadcast("demo")
	dropVideo := 0
	n, dropping := map[string]int{}, false
	mediatest.CopyTracks(t, src, dst, []string{catalog.TrackName, "h264", "aac"}, func(name string, i int, f model.Frame) []byte {
		p := f.Payload
		switch {
		case name == "h264" && n[name] == badVideo:
			p = append([]byte{0x06}, p...)
			dropping = true
		case name == "aac" && n[name] == badAudio:
			l := len(p) + 7
			p = append([]byte{0xff, 0xf1, 0x50, 0x80, byte(l >> 3), byte(l<<5) | 0x1f, 0xfc}, p...)
		}
		if name == "h264" {
			if i == 0 && n[name] != badVideo {
				dropping = false
			}
			if dropping {
				dropVideo++
			}
		}
		n[name]++
		return p
	})
	return dst, dropVideo
}

// TestAPayloadThatIsNotWhatItsCodecSaysIsDroppedCountedAndWarnedOnce: a
// video frame whose NAL unit lengths do not add up and an AAC frame with
// an ADTS header are never written (the video up to its next keyframe),
// each counted on its track and warned once per track; ffmpeg decodes the
// file without a message and finds every other frame.
func TestAPayloadThatIsNotWhatItsCodecSaysIsDroppedCountedAndWarnedOnce(t *testing.T) {
	bc, dropVideo := corrupted(t, 35, 50)
	var logs bytes.Buffer
	f, path := mediatest.CreateFile(t, "out.mkv")
	w := mkv.NewWriter(f, mkv.Options{})
	e := export.New(bc, w, export.Options{CheckPayloads: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	want := map[string]int64{"h264": int64(dropVideo), "aac": 1}
	var written int64
	for _, ts := range e.TrackStats() {
		if ts.DroppedMalformed != want[ts.Name] {
			t.Errorf("%s: %d dropped as malformed, want %d", ts.Name, ts.DroppedMalformed, want[ts.Name])
		}
		written += ts.Written
	}
	if dropVideo < 2 {
		t.Fatalf("the bad video frame drops %d frames; pick one inside a GOP", dropVideo)
	}
	if n := strings.Count(logs.String(), "is not what its codec says"); n != 2 {
		t.Errorf("%d warnings, want one per track:\n%s", n, logs.String())
	}
	mediatest.DecodeClean(t, path)
	p := mediatest.Probe(t, path)
	if int64(len(p.Packets)) != written || written != 309-int64(dropVideo)-1 {
		t.Errorf("%d packets, %d written; want %d", len(p.Packets), written, 309-dropVideo-1)
	}
}
