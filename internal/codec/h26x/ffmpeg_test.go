package h26x_test

import (
	"bytes"
	"math"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/codec/h26x"
	"github.com/moq-export/moq-export/internal/samples"
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
		s := samples.MustLoadSample(name)
		if got := s.MustAnnexB(); got != s {
			t.Errorf("%s: AnnexB returned a different sample", name)
		}
	}
}

// TestDTSFollowsX264DecodeOrder re-encodes the h264 sample exactly as
// scripts/mktestdata.sh does and compares the estimator with the DTS ffmpeg
// wrote into that MP4: once the reorder window is full (the SPS's depth,
// two, plus one frame) they are the same decode times, within the
// microsecond the two roundings of a 30 fps grid differ by.
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
		// Before that the start's: the keyframe's PTS, then 1 ms steps.
		const startup = 3
		if got := dts - ffDTS; i >= startup && (got < -2 || got > 2) {
			t.Errorf("frame %d: DTS %d, ffmpeg %d: %d us apart", i, dts, ffDTS, got)
		}
	}
	if d.Fallbacks != 0 {
		t.Errorf("%d frames fell back to PTS minus reserve", d.Fallbacks)
	}
}

// ebml appends one Matroska element with an 8-byte size field.
func ebml(dst []byte, id uint32, data []byte) []byte {
	for shift := (bits.Len32(id) - 1) / 8 * 8; shift >= 0; shift -= 8 {
		dst = append(dst, byte(id>>shift))
	}
	n := uint64(len(data))
	dst = append(dst, 0x01, byte(n>>48), byte(n>>40), byte(n>>32), byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	return append(dst, data...)
}

func ebmlUint(id uint32, v uint64) []byte {
	return ebml(nil, id, []byte{byte(v >> 56), byte(v >> 48), byte(v >> 40), byte(v >> 32), byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// minimalMKV is the least Matroska file ffmpeg reads: one video track whose
// CodecPrivate is record, and one cluster of SimpleBlocks holding payloads.
// It exists to hand a decoder configuration record to ffmpeg's decoder.
func minimalMKV(codecID string, record []byte, width, height int, frames []samples.SampleFrame, payloads [][]byte) []byte {
	var hdr []byte
	hdr = append(hdr, ebmlUint(0x4286, 1)...)
	hdr = append(hdr, ebmlUint(0x42F7, 1)...)
	hdr = append(hdr, ebmlUint(0x42F2, 4)...)
	hdr = append(hdr, ebmlUint(0x42F3, 8)...)
	hdr = append(hdr, ebml(nil, 0x4282, []byte("matroska"))...)
	hdr = append(hdr, ebmlUint(0x4287, 4)...)
	hdr = append(hdr, ebmlUint(0x4285, 2)...)

	var video, track, seg, cluster []byte
	video = append(ebmlUint(0xB0, uint64(width)), ebmlUint(0xBA, uint64(height))...)
	track = append(track, ebmlUint(0xD7, 1)...)
	track = append(track, ebmlUint(0x73C5, 1)...)
	track = append(track, ebmlUint(0x83, 1)...)
	track = append(track, ebml(nil, 0x86, []byte(codecID))...)
	track = append(track, ebml(nil, 0x63A2, record)...)
	track = append(track, ebml(nil, 0xE0, video)...)
	seg = ebml(seg, 0x1549A966, ebmlUint(0x2AD7B1, 1000000))
	seg = ebml(seg, 0x1654AE6B, ebml(nil, 0xAE, track))
	cluster = ebmlUint(0xE7, 0)
	for i, f := range frames {
		ms := (f.Timestamp + 500) / 1000
		flags := byte(0)
		if f.Keyframe {
			flags = 0x80
		}
		block := append([]byte{0x81, byte(ms >> 8), byte(ms), flags}, payloads[i]...)
		cluster = ebml(cluster, 0xA3, block)
	}
	seg = ebml(seg, 0x1F43B675, cluster)
	return ebml(ebml(nil, 0x1A45DFA3, hdr), 0x18538067, seg)
}

// TestBuiltConfigRecordDecodesInFFmpeg hands the records built from the
// browser form (no description, parameter sets in band) to ffmpeg as
// Matroska CodecPrivate, with the Normalizer's AVCC frames: this is what
// mux/mkv and mux/flv write for a browser broadcast.
func TestBuiltConfigRecordDecodesInFFmpeg(t *testing.T) {
	for _, vs := range videoSamples(t) {
		t.Run(vs.codec.String(), func(t *testing.T) {
			s := vs.sample.MustAnnexB()
			n := mustNormalizer(t, vs.codec, nil)
			payloads := make([][]byte, len(s.Frames))
			for i, f := range s.Frames {
				units, err := n.Frame(f.Payload)
				if err != nil {
					t.Fatal(err)
				}
				payloads[i] = h26x.AppendAVCC(nil, units)
			}
			record := n.Config()

			if record == nil {
				t.Fatal("no record after the whole stream")
			}
			if vs.codec == h26x.H265 && bytes.Equal(record, vs.sample.Description) {
				t.Fatal("record is ffmpeg's own; the test would prove nothing")
			}
			codecID := map[h26x.Codec]string{h26x.H264: "V_MPEG4/ISO/AVC", h26x.H265: "V_MPEGH/ISO/HEVC"}[vs.codec]
			path := filepath.Join(t.TempDir(), "x.mkv")
			if err := os.WriteFile(path, minimalMKV(codecID, record, s.Width, s.Height, s.Frames, payloads), 0o644); err != nil {
				t.Fatal(err)
			}
			checkDecodes(t, path, "matroska", len(s.Frames))
		})
	}
}
