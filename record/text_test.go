package record_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/format/webvtt"
	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
)

// recordDemo publishes one loop of the demo with renditions, records it
// into dir/out and returns the path.
func recordDemo(t *testing.T, renditions []string, out string, opts record.Options) (string, *record.Recorder) {
	t.Helper()
	bc := model.NewBroadcast("demo")
	if err := demo.Publish(context.Background(), bc, demo.Options{Renditions: renditions, Loops: 1, KeepGroups: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), out)
	var err error
	if opts.Output, err = record.Files(path, record.FileOptions{}); err != nil {
		t.Fatal(err)
	}
	opts.Delay = time.Hour
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	rec, err := record.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Record(context.Background(), record.Local(bc), "demo"); err != nil {
		t.Fatal(err)
	}
	return path, rec
}

// origin is where a file of the samples starts: the earliest first
// timestamp among them.
func origin(names ...string) int64 {
	o := int64(1 << 62)
	for _, s := range names {
		o = min(o, samples.MustLoadSample(s).Frames[0].Timestamp)
	}
	return o
}

func TestSubtitlesAreRecordedIntoMKVAndWebMWithTheirPublishedTimesAndText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ out, video, audio string }{
		{"demo.mkv", "h264", "aac"},
		{"demo.webm", "vp9", "opus"},
		{"demo.mp4", "h264", "aac"},
	} {
		t.Run(tc.out, func(t *testing.T) {
			t.Parallel()
			path, rec := recordDemo(t, []string{tc.video, tc.audio, samples.WebVTTName}, tc.out, record.Options{})
			if s := rec.Stats(); s.Skipped != 0 || s.Tracks != 3 {
				t.Errorf("Stats: %d renditions skipped, %d tracks; want all 3 recorded", s.Skipped, s.Tracks)
			}
			mediatest.DecodeClean(t, path)
			p := mediatest.Probe(t, path)
			var sub map[string]string
			for _, s := range p.Streams {
				if s.CodecType == "subtitle" {
					sub = s.Tags
					want := "webvtt"
					if strings.HasSuffix(tc.out, ".mp4") {
						want = "mov_text" // tx3g: ffmpeg reads no wvtt (mux/mp4)
					}
					if s.CodecName != want {
						t.Errorf("subtitle codec %q, want %s", s.CodecName, want)
					}
				}
			}
			title := "title"
			if strings.HasSuffix(tc.out, ".mp4") {
				title = "handler_name" // the label names the handler
			}
			if sub == nil || sub["language"] != "eng" || sub[title] != "English" {
				t.Fatalf("ffprobe lists no English subtitle stream: %+v", p.Streams)
			}
			mediatest.CheckCues(t, mediatest.Cues(t, path), mediatest.PublishedCues(1, origin(tc.video, tc.audio)))
			if strings.HasSuffix(tc.out, ".mkv") {
				out, _ := mediatest.Run(t, "mkvmerge", "-J", path)
				var m struct {
					Errors, Warnings []string
					Tracks           []struct{ Type, Codec string }
				}
				if err := json.Unmarshal([]byte(out), &m); err != nil {
					t.Fatal(err)
				}
				if len(m.Errors)+len(m.Warnings) > 0 || len(m.Tracks) != 3 || m.Tracks[2].Type != "subtitles" {
					t.Fatalf("mkvmerge: %s", out)
				}
			}
		})
	}
}

func TestContainersWithoutSubtitlesSkipTheTextRenditionAndSayWhy(t *testing.T) {
	t.Parallel()
	for _, out := range []string{"demo.flv", "demo.ts"} {
		t.Run(out, func(t *testing.T) {
			t.Parallel()
			var log lockedBuffer
			logger := slog.New(slog.NewTextHandler(&log, nil))
			path, rec := recordDemo(t, []string{"h264", "aac", samples.WebVTTName}, out, record.Options{Logger: logger})
			if s := rec.Stats(); s.Skipped != 1 || s.Tracks != 2 {
				t.Errorf("Stats: %d renditions skipped, %d tracks; want the subtitles skipped and counted", s.Skipped, s.Tracks)
			}
			p := mediatest.Probe(t, path)
			if len(p.Streams) != 2 {
				t.Fatalf("%d streams, want video and audio", len(p.Streams))
			}
			if !strings.Contains(log.String(), "rendition not exported") || !strings.Contains(log.String(), `cannot carry codec \"vtt\"`) {
				t.Fatalf("no warning names the skipped subtitles:\n%s", log.String())
			}
		})
	}
}

func TestTextNoneRecordsNoSubtitles(t *testing.T) {
	t.Parallel()
	path, rec := recordDemo(t, []string{"h264", "aac", samples.WebVTTName}, "demo.mkv", record.Options{Text: []string{}})
	if s := rec.Stats(); s.Skipped != 0 {
		t.Errorf("Stats.Skipped %d: a rendition the selection leaves out is not a skip", s.Skipped)
	}
	if p := mediatest.Probe(t, path); len(p.Streams) != 2 {
		t.Fatalf("%d streams with Text: none, want 2", len(p.Streams))
	}
}

// utf8Cues are the cues the utf8 sample publishes, as WebVTT cues on a file
// that starts at origin: each shows until the next, the last until the
// clear; the text as published (ffmpeg resolves the references that carry
// its markup characters in the WebVTT cues).
func utf8Cues(origin int64) []webvtt.Cue {
	var out []webvtt.Cue
	for i := range samples.WebVTTCues {
		end := int64(i+1) * 1_000_000
		if i == samples.WebVTTCues-1 {
			end = samples.UTF8ClearAt
		}
		out = append(out, webvtt.Cue{Start: int64(i)*1_000_000 - origin, End: end - origin, Text: samples.UTF8CueText(i)})
	}
	return out
}

// A "utf8" text rendition (plain text, each cue shown until the next or an
// empty payload clears it) is recorded as WebVTT cues: ffmpeg extracts
// from MKV, WebM and MP4 the published text, markup characters included,
// and starts, each ending where the next begins, the last at the clear.
func TestUTF8CuesAreRecordedAsWebVTTCuesEndingAtTheNext(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ out, video, audio string }{
		{"utf8.mkv", "h264", "aac"},
		{"utf8.webm", "vp9", "opus"},
		{"utf8.mp4", "h264", "aac"},
	} {
		t.Run(tc.out, func(t *testing.T) {
			t.Parallel()
			path, rec := recordDemo(t, []string{tc.video, tc.audio, samples.UTF8Name}, tc.out, record.Options{})
			if s := rec.Stats(); s.Skipped != 0 || s.Tracks != 3 {
				t.Errorf("Stats: %d renditions skipped, %d tracks; want all 3 recorded", s.Skipped, s.Tracks)
			}
			mediatest.DecodeClean(t, path)
			p := mediatest.Probe(t, path)
			subs := 0
			for _, s := range p.Streams {
				if s.CodecType == "subtitle" {
					subs++
				}
			}
			if subs != 1 {
				t.Fatalf("%d subtitle streams, want 1: %+v", subs, p.Streams)
			}
			mediatest.CheckCues(t, mediatest.Cues(t, path), utf8Cues(origin(tc.video, tc.audio)))
		})
	}
}

// A "ttml" text rendition is recorded nowhere: Matroska defines no TTML
// codec (so ffmpeg reads none), and the MP4 muxer writes no stpp. It is
// skipped with a warning and counted, and the media is recorded.
func TestTTMLRenditionsAreSkippedCountedAndNamed(t *testing.T) {
	t.Parallel()
	for _, out := range []string{"ttml.mkv", "ttml.mp4"} {
		t.Run(out, func(t *testing.T) {
			t.Parallel()
			var log lockedBuffer
			logger := slog.New(slog.NewTextHandler(&log, nil))
			path, rec := recordDemo(t, []string{"h264", "aac", samples.TTMLName}, out, record.Options{Logger: logger})
			if s := rec.Stats(); s.Skipped != 1 || s.Tracks != 2 {
				t.Errorf("Stats: %d renditions skipped, %d tracks; want the TTML one skipped and counted", s.Skipped, s.Tracks)
			}
			if p := mediatest.Probe(t, path); len(p.Streams) != 2 {
				t.Fatalf("%d streams, want video and audio", len(p.Streams))
			}
			if !strings.Contains(log.String(), "rendition not exported") || !strings.Contains(log.String(), "ttml") {
				t.Fatalf("no warning names the skipped TTML rendition:\n%s", log.String())
			}
		})
	}
}
