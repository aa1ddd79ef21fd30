package mkv

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
)

func TestSupportsIsWhatAddTrackAccepts(t *testing.T) {
	matroska := []string{"aac", "ac3", "av1", "flac", "h264", "h264-annexb", "h265", "h265-annexb", "mp3", "opus", "vp8", "vp9"}
	for _, tc := range []struct {
		docType string
		caps    mux.Caps
		want    []string
	}{
		{"matroska", Caps, matroska},
		{"auto", Caps, matroska},
		{"webm", WebMCaps, []string{"av1", "opus", "vp8", "vp9"}},
	} {
		t.Run(tc.docType, func(t *testing.T) {
			docType := strings.TrimPrefix(tc.docType, "auto")
			mediatest.CheckSupports(t, tc.caps, func() mux.Muxer { return NewWriter(&bytes.Buffer{}, Options{DocType: docType}) }, tc.want...)
		})
	}
}

func TestStatsCountWhatIsWritten(t *testing.T) {
	mediatest.CheckStats(t, "stats.mkv", func(w io.Writer) mux.Muxer { return NewWriter(w, Options{}) })
}
