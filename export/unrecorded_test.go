package export_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/flv"
	"github.com/moq-export/moq-export/mux/mkv"
	"github.com/moq-export/moq-export/mux/mp4"
	"github.com/moq-export/moq-export/mux/ts"
)

// withheld copies loops of the demo's catalog and audio into a new
// broadcast whose video rendition (in the catalog, with its avcC) gets no
// frame: its track ends empty when ended is set, else it stays open and
// silent (a subscription that never delivers). It returns the broadcast,
// the number of audio frames and the last one's timestamp.
func withheld(t *testing.T, ended bool, loops int) (*model.Broadcast, int64, int64) {
	t.Helper()
	src := model.NewBroadcast("demo")
	if err := demo.Publish(context.Background(), src, demo.Options{Loops: loops, KeepGroups: 10000}); err != nil {
		t.Fatal(err)
	}
	dst := model.NewBroadcast("demo")
	video := dst.CreateTrack("h264")
	if ended {
		video.Close(nil)
	} else {
		t.Cleanup(func() { video.Close(nil) })
	}
	var audio, end int64
	mediatest.CopyTracks(t, src, dst, []string{catalog.TrackName, "aac"}, func(name string, _ int, f model.Frame) []byte {
		if name == "aac" {
			audio, end = audio+1, f.Timestamp
		}
		return f.Payload
	})
	return dst, audio, end
}

// TestATrackThatGotNoFrameIsLeftOutOfAFileThatDecodesAndIsReported: a
// video rendition whose track delivers nothing (ended empty, or open and
// silent through a 2 s recording) leaves every container decodable by
// ffmpeg without a message, holding every audio frame the export wrote
// (all of them when the video track ended), and the export warns that the
// track was not recorded, which its TrackStats show as Written 0. MPEG-TS
// drops audio while it waits for a video keyframe, for at most 10 s: the
// open case has audio enough for that.
func TestATrackThatGotNoFrameIsLeftOutOfAFileThatDecodesAndIsReported(t *testing.T) {
	containers := []struct {
		ext string
		new func(w io.Writer, path string) mux.Muxer
	}{
		{"mkv", func(w io.Writer, _ string) mux.Muxer { return mkv.NewWriter(w, mkv.Options{}) }},
		{"fragmented.mp4", func(w io.Writer, _ string) mux.Muxer { return mp4.NewWriter(w, mp4.Options{}) }},
		{"mp4", func(w io.Writer, path string) mux.Muxer { return mp4.NewWriter(w, mp4.Options{Path: path}) }},
		{"ts", func(w io.Writer, _ string) mux.Muxer { return ts.NewWriter(w, ts.Options{}) }},
		{"flv", func(w io.Writer, _ string) mux.Muxer { return flv.NewWriter(w, flv.Options{}) }},
	}
	for _, ended := range []bool{true, false} {
		for _, c := range containers {
			name := c.ext + "/video open and silent"
			if ended {
				name = c.ext + "/video ended empty"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				loops := 1
				if !ended {
					loops = 8
				}
				bc, audio, last := withheld(t, ended, loops)
				if !ended && last < 14_000_000 {
					t.Fatalf("%d loops of the demo last %d µs: too short for MPEG-TS's 10 s wait; raise them", loops, last)
				}
				var logs bytes.Buffer
				f, path := mediatest.CreateFile(t, "out."+c.ext)
				m := c.new(f, path)
				opts := export.Options{CheckPayloads: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
				if !ended {
					opts.MaxDuration = 2 * time.Second // the open track never ends the export
				}
				e := export.New(bc, m, opts)
				if err := e.Run(context.Background()); err != nil {
					t.Fatal(err)
				}
				if err := m.Close(); err != nil {
					t.Fatal(err)
				}
				f.Close()
				var written int64
				for _, s := range e.TrackStats() {
					switch s.Name {
					case "h264":
						if s.Written != 0 {
							t.Errorf("h264: %d frames written, want 0", s.Written)
						}
					case "aac":
						written = s.Written
					}
				}
				if ended && written != audio {
					t.Errorf("%d audio frames written, want all %d", written, audio)
				}
				if written == 0 {
					t.Fatal("no audio frame written")
				}
				if l := logs.String(); !strings.Contains(l, "track not recorded") || !strings.Contains(l, "track=h264") {
					t.Errorf("no warning that track h264 was not recorded:\n%s", l)
				}
				mediatest.DecodeClean(t, path)
				p := mediatest.Probe(t, path)
				if len(p.Streams) != 1 || p.Streams[0].CodecType != "audio" {
					t.Errorf("streams %+v, want the audio alone", p.Streams)
				}
				if int64(len(p.Packets)) != written {
					t.Errorf("%d packets in the file, %d audio frames written", len(p.Packets), written)
				}
			})
		}
	}
}
