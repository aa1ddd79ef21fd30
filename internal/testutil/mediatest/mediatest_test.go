package mediatest_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
)

func frames(id int, ts ...int64) []mux.Frame {
	var out []mux.Frame
	for _, t := range ts {
		out = append(out, mux.Frame{TrackID: id, Timestamp: t})
	}
	return out
}

func TestInterleaveFollowsTheJitterBuffersOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		ins  []mediatest.Input
		want string // track:timestamp in output order
	}{
		{
			"SmallestTimestampFirst",
			[]mediatest.Input{{Frames: frames(1, 0, 30, 60)}, {Frames: frames(2, 0, 20, 40, 60)}},
			"1:0 2:0 2:20 1:30 2:40 1:60 2:60",
		},
		{
			// Decode order 0 90 30 60: the B-frames 30 and 60 keep the key
			// 90 of the frame before them, so audio at 40 goes first.
			"BFramesDoNotOvertakeTheFrameBeforeThem",
			[]mediatest.Input{{Frames: frames(1, 0, 90, 30, 60)}, {Frames: frames(2, 40, 80)}},
			"1:0 2:40 2:80 1:90 1:30 1:60",
		},
		{
			"EqualKeysGoToTheEarlierInput",
			[]mediatest.Input{{Frames: frames(2, 10, 20)}, {Frames: frames(1, 10, 20)}},
			"2:10 1:10 2:20 1:20",
		},
		{"NoInputs", nil, ""},
		{
			"NegativeTimestamps",
			[]mediatest.Input{{Frames: frames(1, -50, 0)}, {Frames: frames(2, -20)}},
			"1:-50 2:-20 1:0",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, f := range mediatest.Interleave(tc.ins...) {
				got = append(got, strconv.Itoa(f.TrackID)+":"+strconv.FormatInt(f.Timestamp, 10))
			}
			if s := strings.Join(got, " "); s != tc.want {
				t.Errorf("order %q, want %q", s, tc.want)
			}
		})
	}
}

func TestInputOfKeepsEverySampleFrameInDecodeOrder(t *testing.T) {
	for _, name := range []string{"h264", "h264-annexb", "aac"} {
		s := mediatest.LoadSample(name)
		in := mediatest.InputOf(s, 7)
		if in.Track.ID != 7 || in.Track.Codec != s.Codec || in.Track.Width != s.Width || in.Track.SampleRate != s.SampleRate {
			t.Errorf("%s: track %+v", name, in.Track)
		}
		if want := map[string]mux.Kind{"video": mux.Video, "audio": mux.Audio}[s.Kind]; in.Track.Kind != want {
			t.Errorf("%s: kind %v, want %v", name, in.Track.Kind, want)
		}
		if len(in.Frames) != len(s.Frames) {
			t.Fatalf("%s: %d frames, sample has %d", name, len(in.Frames), len(s.Frames))
		}
		for i, f := range in.Frames {
			sf := s.Frames[i]
			if f.TrackID != 7 || f.Timestamp != sf.Timestamp || f.Keyframe != sf.Keyframe || len(f.Payload) != len(sf.Payload) {
				t.Fatalf("%s frame %d: %+v", name, i, f)
			}
		}
	}
	if d := mediatest.LoadSample("h264-annexb").Description; d != nil {
		t.Errorf("the Annex B form has a description: %x", d)
	}
	if d := samples.MustLoadSample("h264").Description; d == nil {
		t.Error("the AVCC form has no description")
	}
}

func TestShiftLeavesTheInputAlone(t *testing.T) {
	in := mediatest.Input{Frames: frames(1, 0, 10)}
	out := in.Shift(100)
	if in.Frames[0].Timestamp != 0 || out.Frames[0].Timestamp != 100 || out.Frames[1].Timestamp != 110 {
		t.Errorf("in %v, shifted %v", in.Frames, out.Frames)
	}
}

func TestMeanPayloadIsPerFrame(t *testing.T) {
	fs := []mux.Frame{{Payload: make([]byte, 10)}, {Payload: make([]byte, 20)}}
	if got := mediatest.MeanPayload(fs); got != 15 {
		t.Errorf("MeanPayload = %d, want 15", got)
	}
	if got := mediatest.MeanPayload(nil); got != 0 {
		t.Errorf("MeanPayload(nil) = %d", got)
	}
}

// TestProbeReadsWhatFFmpegWrote makes a short file with ffmpeg and checks
// that Probe sees its streams, packets and duration, and that DecodeClean
// accepts it and Run reports a failing command.
func TestProbeReadsWhatFFmpegWrote(t *testing.T) {
	tl := mediatest.SystemFFmpeg(t)
	path := filepath.Join(t.TempDir(), "t.mkv")
	mediatest.Run(t, tl.FFmpeg, "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10:duration=1",
		"-f", "lavfi", "-i", "sine=duration=1:sample_rate=48000", "-c:v", "mpeg4", "-g", "5", "-c:a", "pcm_s16le", path)
	tl.DecodeClean(t, path)
	mediatest.DecodeClean(t, path)
	p := mediatest.Probe(t, path, "-count_frames")
	if len(p.Streams) != 2 || p.Streams[0].CodecType != "video" || p.Streams[0].Width != 64 || p.Streams[1].Channels != 1 {
		t.Fatalf("streams %+v", p.Streams)
	}
	if p.Streams[0].NbReadFrames != "10" {
		t.Errorf("%s decoded frames, want 10", p.Streams[0].NbReadFrames)
	}
	video := p.PacketsOf(0)
	if len(video) != 10 || video[0].PTS == nil || *video[0].PTS != 0 || video[0].Flags[0] != 'K' || video[1].CodecType != "video" {
		t.Errorf("video packets %+v", video)
	}
	if d, err := p.Format.Seconds(); err != nil || d < 0.9 || d > 1.1 {
		t.Errorf("duration %q (%v), want about 1 s", p.Format.Duration, err)
	}
}

// TestOnlyTestCodeImportsMediatest keeps this package out of binaries: it
// imports testing and holds test-only helpers. Test code imports it, and so
// may the test support under internal/testutil (cmdtest), which
// internal/layering keeps out of binaries in turn.
func TestOnlyTestCodeImportsMediatest(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
	const self = "github.com/moq-export/moq-export/internal/testutil/mediatest"
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		if rel, err := filepath.Rel(root, path); err == nil && strings.HasPrefix(rel, filepath.Join("internal", "testutil")+string(filepath.Separator)) {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if imp.Path.Value == strconv.Quote(self) {
				t.Errorf("%s imports %s; only _test.go files may", path, self)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestLargestGapFindsTheHole(t *testing.T) {
	for _, tc := range []struct {
		ts  []float64
		at  int
		gap float64
	}{
		{nil, 0, 0},
		{[]float64{1}, 0, 0},
		{[]float64{0, 0.5, 1, 3, 3.5}, 3, 2},
		{[]float64{0, 4, 4.5, 9}, 3, 4.5},
	} {
		if at, gap := mediatest.LargestGap(tc.ts); at != tc.at || gap != tc.gap {
			t.Errorf("mediatest.LargestGap(%v) = %d, %v; want %d, %v", tc.ts, at, gap, tc.at, tc.gap)
		}
	}
}

func TestReorderIsHowFarBeforeTheLastFrameACutCanLeaveAHole(t *testing.T) {
	for _, tc := range []struct {
		ts   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{0, 1, 2, 3}, 0},
		// I P B B, as x264 stores them: the P shown after the two Bs.
		{[]float64{0, 3, 1, 2, 6, 4, 5}, 2},
		{[]float64{0, 2, 1, 3}, 1},
	} {
		if got := mediatest.Reorder(tc.ts); got != tc.want {
			t.Errorf("mediatest.Reorder(%v) = %v, want %v", tc.ts, got, tc.want)
		}
	}
}

func TestCutGapIsTheLaterOfAHoleTheCutLeftAndItsOwn(t *testing.T) {
	// Frames 1 s apart, sorted, with I P B B reordering (2 s).
	for _, tc := range []struct {
		name string
		ts   []float64
		at   int
	}{
		{"a long cut", []float64{0, 1, 2, 3, 10, 11}, 4},
		{"a short cut after both B-frames", []float64{0, 1, 2, 3, 6, 7}, 4},
		// x264's I P B B cut after the P: frames 4 and 5 left out, the new
		// timeline 3 frames after the P, the two holes alike.
		{"a cut after the P as long as the B-frames it left out", []float64{0, 1, 2, 3, 6, 9, 10}, 5},
		{"a cut after the P longer than the B-frames it left out", []float64{0, 1, 2, 3, 6, 10, 11}, 5},
		{"a frame lost before a short cut", []float64{0, 4, 5, 6, 9, 10}, 1},
	} {
		if at, _ := mediatest.CutGap(tc.ts, 2, 1); at != tc.at {
			t.Errorf("%s: mediatest.CutGap(%v, 2, 1) at %d, want %d", tc.name, tc.ts, at, tc.at)
		}
	}
}

func TestLeftOutByTheCutExemptsOnlyFramesWithinTheReorderBeforeTheCut(t *testing.T) {
	// Frames 1 s apart, sorted; the cut is the frame before the largest
	// gap (at 3, the frame at 10 resumes after it).
	for _, tc := range []struct {
		name    string
		ts      []float64
		i, at   int
		reorder float64
		want    bool
	}{
		{"both B-frames before the cut's P left out", []float64{0, 1, 4, 10}, 2, 3, 2, true},
		{"the second B-frame left out", []float64{0, 1, 2, 4, 10}, 3, 4, 2, true},
		{"a frame lost before the reorder window", []float64{0, 2, 3, 4, 10}, 1, 4, 2, false},
		{"a frame lost without reordering", []float64{0, 1, 3, 10}, 2, 3, 0, false},
		{"the cut itself", []float64{0, 1, 2, 10}, 3, 3, 2, false},
		{"after the cut", []float64{0, 1, 10, 12}, 3, 2, 2, false},
	} {
		if got := mediatest.LeftOutByTheCut(tc.ts, tc.i, tc.at, tc.reorder, 1); got != tc.want {
			t.Errorf("%s: mediatest.LeftOutByTheCut(%v, %d, %d, %v, 1) = %v, want %v", tc.name, tc.ts, tc.i, tc.at, tc.reorder, got, tc.want)
		}
	}
}
