package flv

import (
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
)

// TestEnhancedCodecsDecodeCleanWithNewFFmpeg writes the Enhanced RTMP
// codecs and checks them with the ffmpeg from Debian testing that
// scripts/ffmpeg-testing.sh unpacks (Debian 12's ffmpeg cannot read them).
func TestEnhancedCodecsDecodeCleanWithNewFFmpeg(t *testing.T) {
	tl := mediatest.NewFFmpeg(t)
	cases := []codecCase{
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
			checkCodecCase(t, tl, tc, 1_000_000, func(t *testing.T, kind string, st *probeStream, tr mux.Track) {
				if kind == "audio" && st.channels != tr.Channels {
					t.Errorf("audio: %d channels, want %d", st.channels, tr.Channels)
				}
				if kind == "video" && st.width != tr.Width {
					t.Errorf("video: width %d, want %d", st.width, tr.Width)
				}
			})
		})
	}
}
