package h26x_test

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	moqexport "github.com/moq-export/moq-export"
	"github.com/moq-export/moq-export/internal/h26x"
)

func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed; this test decodes the output with it", name)
	}
	return p
}

func run(t *testing.T, name string, args ...string) (stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(needTool(t, name), args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, e.String())
	}
	return o.String(), e.String()
}

// checkDecodes asserts that ffmpeg decodes the elementary stream at path
// without a message and that ffprobe counts frames frames in it.
func checkDecodes(t *testing.T, path, format string, frames int) {
	t.Helper()
	out, _ := run(t, "ffprobe", "-v", "error", "-f", format, "-count_frames", "-select_streams", "v:0",
		"-show_entries", "stream=nb_read_frames", "-of", "default=nw=1:nk=1", path)
	if got, err := strconv.Atoi(strings.TrimSpace(out)); err != nil || got != frames {
		t.Errorf("ffprobe counts %q frames, want %d", strings.TrimSpace(out), frames)
	}
	if _, stderr := run(t, "ffmpeg", "-v", "error", "-f", format, "-i", path, "-f", "null", "-"); stderr != "" {
		t.Errorf("ffmpeg decode messages:\n%s", stderr)
	}
}

func TestAnnexBStreamFromBuiltConfigDecodesInFFmpeg(t *testing.T) {
	for _, vs := range videoSamples(t) {
		t.Run(vs.codec.String(), func(t *testing.T) {
			// Parameter sets go through Parse -> Build -> Parse, so the
			// stream tests the records as well as the framing.
			orig, _, err := h26x.ParseDecoderConfig(vs.codec, vs.sample.Description)
			if err != nil {
				t.Fatal(err)
			}
			built, err := h26x.BuildDecoderConfig(vs.codec, orig)
			if err != nil {
				t.Fatal(err)
			}
			n := mustNormalizer(t, vs.codec, built)
			var es []byte
			for i, f := range vs.sample.Frames {
				units, err := n.Frame(f.Payload)
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				es = h26x.AppendAnnexB(es, [][]byte{h26x.AUD(vs.codec)})
				if f.Keyframe {
					es = h26x.AppendAnnexB(es, n.ParamSets().NALUs())
				}
				es = h26x.AppendAnnexB(es, units)
			}
			format := map[h26x.Codec]string{h26x.H264: "h264", h26x.H265: "hevc"}[vs.codec]
			path := filepath.Join(t.TempDir(), "x."+format)
			if err := os.WriteFile(path, es, 0o644); err != nil {
				t.Fatal(err)
			}
			checkDecodes(t, path, format, len(vs.sample.Frames))
		})
	}
}

func TestSampleAnnexBDecodesInFFmpeg(t *testing.T) {
	for _, vs := range videoSamples(t) {
		t.Run(vs.codec.String(), func(t *testing.T) {
			s, err := vs.sample.AnnexB()
			if err != nil {
				t.Fatal(err)
			}
			var es []byte
			for _, f := range s.Frames {
				es = append(es, f.Payload...)
			}
			format := map[h26x.Codec]string{h26x.H264: "h264", h26x.H265: "hevc"}[vs.codec]
			path := filepath.Join(t.TempDir(), "x."+format)
			if err := os.WriteFile(path, es, 0o644); err != nil {
				t.Fatal(err)
			}
			checkDecodes(t, path, format, len(s.Frames))
		})
	}
}

func TestSampleAnnexBLeavesOtherSamplesAlone(t *testing.T) {
	for _, name := range []string{"aac", "av1", "opus"} {
		s := moqexport.MustLoadSample(name)
		if got := s.MustAnnexB(); got != s {
			t.Errorf("%s: AnnexB returned a different sample", name)
		}
	}
}

// TestDTSFollowsX264DecodeOrder re-encodes the h264 sample exactly as
// scripts/mktestdata.sh does and compares the estimator with the DTS ffmpeg
// wrote into that MP4: after the start-up the two differ by a constant, so
// the spacing of the decode times is the encoder's.
func TestDTSFollowsX264DecodeOrder(t *testing.T) {
	s := videoSamples(t)[0].sample
	mp4 := filepath.Join(t.TempDir(), "h264.mp4")
	run(t, "ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30:duration=4",
		"-c:v", "libx264", "-preset", "veryfast", "-profile:v", "high", "-bf", "2", "-g", "30",
		"-keyint_min", "30", "-sc_threshold", "0", "-b:v", "250k", "-pix_fmt", "yuv420p", mp4)
	out, _ := run(t, "ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
		"packet=pts_time,dts_time", "-of", "csv=p=0", mp4)
	lines := strings.Fields(out)
	if len(lines) != len(s.Frames) {
		t.Fatalf("ffprobe lists %d packets, the sample has %d frames", len(lines), len(s.Frames))
	}
	us := func(v string) int64 {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("ffprobe time %q: %v", v, err)
		}
		return int64(math.Round(f * 1e6))
	}
	n := mustNormalizer(t, h26x.H264, s.Description)
	d := h26x.NewDTS(h26x.H264, 0)
	var offset int64
	for i, line := range lines {
		pt, dt, _ := strings.Cut(line, ",")
		pts, ffDTS := us(pt), us(dt)
		f := s.Frames[i]
		if diff := pts - f.Timestamp - (us(strings.Split(lines[0], ",")[0]) - s.Frames[0].Timestamp); diff < -1 || diff > 1 {
			t.Fatalf("packet %d: ffprobe PTS %d, sample %d: the encoder no longer makes the same GOP", i, pts, f.Timestamp)
		}
		units, err := n.Frame(f.Payload)
		if err != nil {
			t.Fatal(err)
		}
		dts := d.Next(n.ParamSets(), units, f.Timestamp)
		if dts > f.Timestamp {
			t.Errorf("frame %d: DTS %d > PTS %d", i, dts, f.Timestamp)
		}
		const startup = 2 // frames the extractor needs to learn the reorder depth
		switch {
		case i == startup:
			offset = dts - ffDTS
		case i > startup:
			if got := dts - ffDTS; got < offset-2 || got > offset+2 {
				t.Errorf("frame %d: DTS %d, ffmpeg %d: offset %d, was %d", i, dts, ffDTS, got, offset)
			}
		}
	}
	if d.Fallbacks != 0 {
		t.Errorf("%d frames fell back to PTS minus reserve", d.Fallbacks)
	}
	// The reorder delay is at most the two B-frames of the GOP.
	if offset < 0 || offset > 2*33334 {
		t.Errorf("estimated DTS is %d us later than ffmpeg's; want 0 to 2 frames", offset)
	}
}
