package flv

import (
	"testing"

	moqexport "github.com/moq-export/moq-export"
	"github.com/moq-export/moq-export/internal/mediatest"
	"github.com/moq-export/moq-export/mux"
)

// TestEnhancedCodecsDecodeCleanWithNewFFmpeg writes the Enhanced RTMP
// codecs and checks them with the ffmpeg from Debian testing that
// scripts/ffmpeg-testing.sh unpacks (Debian 12's ffmpeg cannot read them).
func TestEnhancedCodecsDecodeCleanWithNewFFmpeg(t *testing.T) {
	tl := mediatest.NewFFmpeg(t)
	cases := []struct {
		name    string
		samples []string
		codecs  map[string]string
		noDesc  bool // drop the catalog description, as browsers publish Opus
	}{
		{"HEVC", []string{"h265"}, map[string]string{"video": "hevc"}, false},
		{"HEVCAnnexBWithoutDescription", []string{"h265-annexb"}, map[string]string{"video": "hevc"}, false},
		{"AV1", []string{"av1"}, map[string]string{"video": "av1"}, false},
		{"AV1WithoutAV1C", []string{"av1"}, map[string]string{"video": "av1"}, true},
		{"VP9", []string{"vp9"}, map[string]string{"video": "vp9"}, false},
		{"Opus", []string{"opus"}, map[string]string{"audio": "opus"}, false},
		{"OpusWithoutDescription", []string{"opus"}, map[string]string{"audio": "opus"}, true},
		{"HEVCAndOpus", []string{"h265", "opus"}, map[string]string{"video": "hevc", "audio": "opus"}, false},
		{"AV1AndAAC", []string{"av1", "aac"}, map[string]string{"video": "av1", "audio": "aac"}, false},
		{"H264AndOpus", []string{"h264", "opus"}, map[string]string{"video": "h264", "audio": "opus"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var samples []*moqexport.Sample
			var tracks []mux.Track
			for i, n := range tc.samples {
				s := mediatest.LoadSample(n)
				samples = append(samples, s)
				tr := mediatest.TrackOf(s, i+1)
				if tc.noDesc {
					tr.Description = nil
				}
				tracks = append(tracks, tr)
			}
			frames := interleave(1_000_000, samples...)
			path := writeFile(t, tc.name+".flv", Options{}, tracks, frames)
			tl.DecodeClean(t, path)
			got := probe(t, tl, path)
			if len(got) != len(tc.codecs) {
				t.Fatalf("ffprobe found %d streams, want %d", len(got), len(tc.codecs))
			}
			for i, tr := range tracks {
				kind := tr.Kind.String()
				st := got[kind]
				if st == nil || st.codec != tc.codecs[kind] {
					t.Fatalf("%s stream: %+v, want codec %s", kind, st, tc.codecs[kind])
				}
				in := framesOfTrack(frames, i+1)
				if st.frames != len(in) {
					t.Errorf("%s: ffmpeg decoded %d frames, %d written", kind, st.frames, len(in))
				}
				if kind == "audio" && st.channels != tr.Channels {
					t.Errorf("audio: %d channels, want %d", st.channels, tr.Channels)
				}
				if kind == "video" && st.width != tr.Width {
					t.Errorf("video: width %d, want %d", st.width, tr.Width)
				}
				checkTimestamps(t, kind, st, in)
			}
		})
	}
}
