package mediatest

import (
	"path/filepath"
	"testing"

	"github.com/moq-export/moq-export/internal/format/webvtt"
	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/mux"
)

// Cues returns the cues of the first subtitle stream of the file (or
// playlist) at path as ffmpeg extracts them (`ffmpeg -copyts -i path -map
// 0:s:0 -f webvtt -`: the file's own times, not moved to make an Opus
// stream's pre-skip start at 0), failing t when ffmpeg reports an error or
// the output is not WebVTT.
func Cues(t testing.TB, path string) []webvtt.Cue {
	t.Helper()
	RequireTools(t, system.FFmpeg)
	return system.Cues(t, path)
}

// Cues is Cues with tl's ffmpeg.
func (tl Tools) Cues(t testing.TB, path string) []webvtt.Cue {
	t.Helper()
	stdout, stderr := Run(t, tl.FFmpeg, "-v", "error", "-copyts", "-i", path, "-map", "0:s:0", "-f", "webvtt", "-")
	if stderr != "" {
		t.Fatalf("ffmpeg extracting the subtitles of %s reported errors:\n%s", filepath.Base(path), stderr)
	}
	cues, err := webvtt.Parse([]byte(stdout))
	if err != nil {
		t.Fatalf("ffmpeg's WebVTT of %s: %v\n%s", filepath.Base(path), err, stdout)
	}
	return cues
}

// PublishedCues returns the cues of the WebVTT sample as a demo broadcast
// publishes them over loops loops (each loop one sample length later), on
// the broadcast's timeline, minus origin.
func PublishedCues(loops int, origin int64) []webvtt.Cue {
	s := samples.MustLoadSample(samples.WebVTTName)
	var out []webvtt.Cue
	for l := range loops {
		for _, f := range s.Frames {
			cues, err := webvtt.Parse(f.Payload)
			if err != nil {
				panic(err)
			}
			for _, c := range cues {
				shift := f.Timestamp + int64(l)*s.Duration() - cues[0].Start - origin
				c.Start += shift
				c.End += shift
				out = append(out, c)
			}
		}
	}
	return out
}

// TextInput returns the WebVTT sample, played loops times back to back, as
// track id the way the export engine hands it to a muxer: one frame per
// cue, in WebM's block layout, with its duration.
func TextInput(id, loops int) Input {
	s := samples.MustLoadSample(samples.WebVTTName)
	in := Input{Track: mux.Track{ID: id, Name: s.Name, Kind: mux.Text, Codec: s.Codec, Language: "en", Label: "English"}}
	for _, c := range PublishedCues(loops, 0) {
		in.Frames = append(in.Frames, mux.Frame{TrackID: id, Timestamp: c.Start, Duration: c.End - c.Start, Keyframe: true, Payload: c.AppendBlock(nil)})
	}
	return in
}

// CheckCues fails t unless got has the cues of want, in order: the same
// text, and start and end within 1 ms.
func CheckCues(t testing.TB, got, want []webvtt.Cue) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d cues, want %d:\n got %+v\nwant %+v", len(got), len(want), got, want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Text != w.Text || abs(g.Start-w.Start) > 1000 || abs(g.End-w.End) > 1000 {
			t.Fatalf("cue %d is %s --> %s %q, want %s --> %s %q", i, webvtt.FormatTime(g.Start), webvtt.FormatTime(g.End), g.Text,
				webvtt.FormatTime(w.Start), webvtt.FormatTime(w.End), w.Text)
		}
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
