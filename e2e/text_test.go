package e2e

import (
	"context"
	"crypto/tls"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/format/webvtt"
	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
)

// TestTextRenditionsCrossEveryFamilyPackagingAndTheContainersThatCarryThem
// extends the matrix with a WebVTT rendition: the demo with subtitles,
// live over the newest version of each protocol family, in the legacy and
// loc packagings (cmaf has no text form here), into MKV and HLS (which
// carry it: every cue recorded has its published time, length and text)
// and FLV (which skips it, saying so).
func TestTextRenditionsCrossEveryFamilyPackagingAndTheContainersThatCarryThem(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	cert, pin, err := subscribe.SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var pub []*model.Broadcast
	for _, p := range []string{"legacy", "loc"} {
		b := model.NewBroadcast("text-" + p)
		go demo.Publish(ctx, b, demo.Options{Renditions: []string{"h264", "aac", samples.WebVTTName}, Realtime: true, Container: catalog.ContainerKind(p), KeepGroups: 1000})
		pub = append(pub, b)
	}
	srv, err := subscribe.Listen("127.0.0.1:0", subscribe.ServerOptions{Certificates: []tls.Certificate{cert}, Publish: pub, DisableWebTransport: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	go func() {
		for {
			if _, err := srv.Accept(ctx); err != nil {
				return
			}
		}
	}()
	for _, version := range []string{"moq-lite-06", "moq-transport-22"} {
		for _, packaging := range []string{"legacy", "loc"} {
			for _, container := range []string{"mkv", "m3u8", "flv"} {
				t.Run(version+"_"+packaging+"_"+container, func(t *testing.T) {
					t.Parallel()
					logs := &logBuffer{}
					log := slog.New(slog.NewTextHandler(logs, nil))
					rctx, rcancel := context.WithTimeout(ctx, 60*time.Second)
					defer rcancel()
					sess, err := subscribe.Dial(rctx, "moql://"+srv.Addr().String()+"/", subscribe.Options{TLSFingerprint: pin, Versions: []string{version}, Logger: log})
					if err != nil {
						t.Fatal(err)
					}
					defer sess.Close()
					path := filepath.Join(t.TempDir(), "rec."+container)
					out, err := record.Files(path, record.FileOptions{})
					if err != nil {
						t.Fatal(err)
					}
					rec, err := record.New(record.Options{Output: out, Duration: 3500 * time.Millisecond, KeepTimestamps: true, Logger: log, Delay: 4 * time.Second, MaxDelay: 8 * time.Second})
					if err != nil {
						t.Fatal(err)
					}
					if err := rec.Record(rctx, record.SessionSource(sess), "text-"+packaging); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() {
						if t.Failed() {
							t.Logf("tracks: %+v\nlog:\n%s", rec.Tracks(), logs.tail())
						}
					})
					switch container {
					case "flv":
						for _, s := range mediatest.Probe(t, path).Streams {
							if s.CodecType == "subtitle" {
								t.Fatalf("FLV with a subtitle stream")
							}
						}
						if !strings.Contains(logs.String(), `cannot carry codec \"vtt\"`) {
							t.Fatalf("FLV skipped the subtitles without a word:\n%s", logs.tail())
						}
					case "mkv":
						checkLiveCues(t, mediatest.Cues(t, path), true)
					case "m3u8":
						checkLiveCues(t, mediatest.Cues(t, filepath.Join(filepath.Dir(path), "s0.m3u8")), false)
					}
				})
			}
		}
	}
}

// checkLiveCues checks the cues of ~3.5 s of the looping demo: at least
// two, one a second, each lasting its published 800 ms with the text of
// its place in the sample (cue i of a loop starts at i s); absolute says
// the file keeps the broadcast's timestamps, so each start is also where
// its text was published.
func checkLiveCues(t *testing.T, cues []webvtt.Cue, absolute bool) {
	t.Helper()
	if len(cues) < 2 {
		t.Fatalf("%d cues in 3.5 s of one cue a second: %+v", len(cues), cues)
	}
	text := func(c webvtt.Cue) int {
		for i := range samples.WebVTTCues {
			if c.Text == samples.WebVTTCueText(i) {
				return i
			}
		}
		t.Fatalf("cue %+v: not a text the demo published", c)
		return -1
	}
	near := func(a, b int64) bool { return a-b <= 1000 && b-a <= 1000 }
	for i, c := range cues {
		if !near(c.End-c.Start, samples.WebVTTCueDuration) {
			t.Fatalf("cue %d lasts %d µs, published %d", i, c.End-c.Start, samples.WebVTTCueDuration)
		}
		n := text(c)
		if absolute {
			sec := (c.Start + 500_000) / 1_000_000
			if !near(c.Start, sec*1_000_000) || int(sec%samples.WebVTTCues) != n {
				t.Fatalf("cue %d %q at %s: published at %d s of a loop", i, c.Text, webvtt.FormatTime(c.Start), n)
			}
		}
		if i > 0 {
			if prev := cues[i-1]; !near(c.Start-prev.Start, 1_000_000) || n != (text(prev)+1)%samples.WebVTTCues {
				t.Fatalf("cues %d and %d: %s %q then %s %q, published a second apart in order", i-1, i, webvtt.FormatTime(prev.Start), prev.Text, webvtt.FormatTime(c.Start), c.Text)
			}
		}
	}
}
