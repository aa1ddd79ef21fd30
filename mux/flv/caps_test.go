package flv

import (
	"bytes"
	"io"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
)

func TestSupportsIsWhatAddTrackAccepts(t *testing.T) {
	mediatest.CheckSupports(t, Caps, func() mux.Muxer { return NewWriter(&bytes.Buffer{}, Options{}) },
		"aac", "av1", "h264", "h264-annexb", "h265", "h265-annexb", "mp3", "opus", "vp9")
	if Caps.PerKind[mux.Video] != 1 || Caps.PerKind[mux.Audio] != 1 {
		t.Errorf("FLV limits %v", Caps.PerKind)
	}
}

func TestStatsCountWhatIsWritten(t *testing.T) {
	mediatest.CheckStats(t, "stats.flv", func(w io.Writer) mux.Muxer { return NewWriter(w, Options{}) })
}
