package ts_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/ts"
)

func TestSupportsIsWhatAddTrackAccepts(t *testing.T) {
	mediatest.CheckSupports(t, ts.Caps, func() mux.Muxer { return ts.NewWriter(&bytes.Buffer{}, ts.Options{}) },
		"aac", "ac3", "h264", "h264-annexb", "h265", "h265-annexb", "mp3", "opus")
	if len(ts.Caps.PerKind) != 0 {
		t.Errorf("TS limits %v", ts.Caps.PerKind)
	}
}

func TestStatsCountWhatIsWritten(t *testing.T) {
	mediatest.CheckStats(t, "stats.ts", func(w io.Writer) mux.Muxer { return ts.NewWriter(w, ts.Options{}) })
}
