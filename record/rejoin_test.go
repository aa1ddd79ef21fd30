package record_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
)

// TestARecordingRestartedOntoItsPackageOfTheSameLiveBroadcastHoldsEveryFrameOnce:
// a live broadcast (the demo, in real time, a keyframe a second) is
// recorded into a package for 1.5 s, and recorded again into it at once
// for 1 s, as a restarted recorder does: the second run joins the
// broadcast at its newest keyframe, which the package holds when the
// first run ended less than a second after it. Every video packet of the
// package is the frame published at its time (its presentation time plus
// the broadcast's time of the package's first frame, the sample looping
// every 4 s) and none comes twice; the audio's times go on without a
// frame twice; ffmpeg decodes the package clean.
func TestARecordingRestartedOntoItsPackageOfTheSameLiveBroadcastHoldsEveryFrameOnce(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	bc := model.NewBroadcast("demo")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go demo.Publish(ctx, bc, demo.Options{Realtime: true})
	// Over QUIC on loopback, as from a relay: a subscription joins the
	// broadcast at its newest group.
	srv, url, pin, err := subscribe.ServeLoopback(bc, subscribe.ServerOptions{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	pkg := filepath.Join(t.TempDir(), "rec", "demo.m3u8")
	for _, d := range []time.Duration{1500 * time.Millisecond, time.Second} {
		out, err := record.Files(pkg, record.FileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := record.Run(ctx, record.Options{URL: url, Dial: subscribe.Options{TLSFingerprint: pin, Logger: quiet()}, Broadcast: "demo",
			Output: out, Format: record.HLS, Duration: d, HLSSegmentDuration: 500 * time.Millisecond, Logger: quiet()}); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Dir(pkg)

	// The published video frames by their time in the sample's loop.
	s := mediatest.LoadSample("h264")
	loop := s.Duration() + 1 // the demo loops a track on its sample's length
	published := map[int64]string{}
	for _, f := range mediatest.InputOf(s, 0).Frames {
		published[f.Timestamp] = hash(f.Payload)
	}
	byHash := map[string]int64{}
	for ts, h := range published {
		byHash[h] = ts
	}
	if len(byHash) != len(published) {
		t.Fatal("the sample's video frames are not all different")
	}
	v := mediatest.Probe(t, filepath.Join(dir, "v0.m3u8"), "-show_data_hash", "sha256").Packets
	if len(v) == 0 {
		t.Fatal("no video in the package")
	}
	first, ok := byHash[v[0].DataHash]
	if !ok {
		t.Fatal("the package's first video packet is no frame of the sample")
	}
	seen := map[int64]bool{}
	lastDTS := int64(-1)
	for i, p := range v {
		pts, dts := micros(p.PTSTime), *p.DTS
		at := ((pts-micros(v[0].PTSTime)+first)%loop + loop) % loop
		if got, want := p.DataHash, publishedAt(published, at); got != want {
			t.Fatalf("video packet %d at %d µs (%d µs into the sample's loop) is not the frame published then (%d packets, the first %d of the sample)",
				i, pts, at, len(v), first)
		}
		if seen[pts] || dts <= lastDTS {
			t.Fatalf("video packet %d at %d µs comes twice or out of order", i, pts)
		}
		seen[pts], lastDTS = true, dts
	}
	a := mediatest.Probe(t, filepath.Join(dir, "a0.m3u8")).Packets
	for i := 1; i < len(a); i++ {
		if d := micros(a[i].PTSTime) - micros(a[i-1].PTSTime); d < 20_000 {
			t.Fatalf("audio packet %d is %d µs after the one before, less than a frame", i, d)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "v0.m3u8"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(b), "#EXT-X-DISCONTINUITY\n") != 1 {
		t.Fatalf("v0.m3u8, want the second run after one discontinuity:\n%s", b)
	}
	mediatest.DecodeClean(t, pkg)
}

// publishedAt returns the hash of the frame published within a
// millisecond of ts (the package's 90 kHz times round the sample's µs).
func publishedAt(published map[int64]string, ts int64) string {
	for d := int64(0); d <= 1000; d++ {
		if h, ok := published[ts-d]; ok {
			return h
		}
		if h, ok := published[ts+d]; ok {
			return h
		}
	}
	return ""
}

func hash(b []byte) string {
	s := sha256.Sum256(b)
	return "SHA256:" + hex.EncodeToString(s[:])
}

// micros reads ffprobe's seconds as µs.
func micros(sec string) int64 {
	f, _ := strconv.ParseFloat(sec, 64)
	if f < 0 {
		return int64(f*1e6 - 0.5)
	}
	return int64(f*1e6 + 0.5)
}
