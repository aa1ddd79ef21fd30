package mkv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/mux"
)

// TestEachCodecMuxesToAFileThatDecodesAndSeeks muxes every sample of
// testdata alone into a finalized file and checks it with ffmpeg (clean
// decode), ffprobe (codec, packet count, first/last timestamps, duration)
// and mkvmerge (no errors or warnings, codec ID, duration).
func TestEachCodecMuxesToAFileThatDecodesAndSeeks(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe", "mkvmerge")
	tests := []struct {
		name, sample string
		change       func(*input)
		probeCodec   string
		codecID      string
		docType      string
	}{
		{"H264WithAvcC", "h264", nil, "h264", "V_MPEG4/ISO/AVC", "matroska"},
		{"H265WithHvcC", "h265", nil, "hevc", "V_MPEGH/ISO/HEVC", "matroska"},
		{"AV1WithAv1C", "av1", nil, "av1", "V_AV1", "webm"},
		{"AV1BuildsAv1CFromSequenceHeader", "av1", func(in *input) { in.track.Description = nil }, "av1", "V_AV1", "webm"},
		{"VP8", "vp8", nil, "vp8", "V_VP8", "webm"},
		{"VP8SizeFromKeyframe", "vp8", func(in *input) { in.track.Width, in.track.Height = 0, 0 }, "vp8", "V_VP8", "webm"},
		{"VP9", "vp9", nil, "vp9", "V_VP9", "webm"},
		{"VP9SizeFromKeyframe", "vp9", func(in *input) { in.track.Width, in.track.Height = 0, 0 }, "vp9", "V_VP9", "webm"},
		{"OpusWithOpusHead", "opus", nil, "opus", "A_OPUS", "webm"},
		{"OpusBuildsOpusHead", "opus", func(in *input) { in.track.Description = nil }, "opus", "A_OPUS", "webm"},
		{"AACWithASC", "aac", nil, "aac", "A_AAC", "matroska"},
		{"AACBuildsASC", "aac", func(in *input) { in.track.Description = nil }, "aac", "A_AAC", "matroska"},
		{"FLAC", "flac", nil, "flac", "A_FLAC", "matroska"},
		{"MP3", "mp3", nil, "mp3", "A_MPEG/L3", "matroska"},
		{"AC3", "ac3", nil, "ac3", "A_AC3", "matroska"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := sampleInput(t, tc.sample, 7)
			if tc.change != nil {
				tc.change(&in)
			}
			path := muxFile(t, "out.mkv", Options{}, in)
			decodeClean(t, path)

			p := probe(t, path)
			if len(p.Streams) != 1 || p.Streams[0].CodecName != tc.probeCodec {
				t.Fatalf("ffprobe streams %+v, want one %s", p.Streams, tc.probeCodec)
			}
			if in.track.Kind == mux.Video && (p.Streams[0].Width != 320 || p.Streams[0].Height != 180) {
				t.Errorf("size %dx%d, want 320x180", p.Streams[0].Width, p.Streams[0].Height)
			}
			got, want := p.streamPTS(t, 0), expectedPTS(in, in.frames[0].Timestamp)
			if tc.sample == "opus" {
				// ffmpeg shifts Opus by the CodecDelay (the OpusHead
				// pre-skip) so that the first decoded sample is at 0.
				skip := int64(0)
				if in.track.Description != nil {
					skip = (int64(binary.LittleEndian.Uint16(in.track.Description[10:]))*1000 + 24000) / 48000
				}
				for i := range want {
					want[i] -= skip
				}
			}
			if len(got) != len(in.frames) {
				t.Fatalf("ffprobe counts %d packets, wrote %d frames", len(got), len(in.frames))
			}
			if !equalWithin(got, want, 1) {
				t.Errorf("packet times (ms) differ from the input:\n got %v\nwant %v", got, want)
			}
			dur, err := strconv.ParseFloat(p.Format.Duration, 64)
			if err != nil || dur <= 0 {
				t.Errorf("ffprobe format duration %q, want a positive number", p.Format.Duration)
			}

			m := mkvmergeClean(t, path)
			if len(m.Tracks) != 1 || m.Tracks[0].Properties.CodecID != tc.codecID {
				t.Errorf("mkvmerge tracks %+v, want codec %s", m.Tracks, tc.codecID)
			}
			wantDur := in.dur
			if d := m.Container.Properties.Duration / 1e6; d < wantDur/1000-2 || d > wantDur/1000+2 {
				t.Errorf("mkvmerge duration %d ms, want %d ms", d, wantDur/1000)
			}
			if dt := docType(t, path); dt != tc.docType {
				t.Errorf("DocType %q, want %q", dt, tc.docType)
			}
		})
	}
}

func equalWithin(a, b []int64, tol int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if d := a[i] - b[i]; d < -tol || d > tol {
			return false
		}
	}
	return true
}

// docType reads the DocType from the EBML header with mkvinfo.
func docType(t *testing.T, path string) string {
	t.Helper()
	out, _ := run(t, "mkvinfo", path)
	for line := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "|+ Document type: "); ok {
			return v
		}
	}
	t.Fatalf("no DocType in mkvinfo output:\n%s", out)
	return ""
}

var _ = bytes.Equal
var _ = errors.Is
var _ = os.Create
var _ = filepath.Join
var _ = slices.Equal[[]int]
