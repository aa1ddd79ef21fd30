package flv

import (
	"io"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
)

// BenchmarkMuxFLV muxes sample pairs to io.Discard. One op is one frame:
// ns/op is ns/frame, allocs/op is allocs/frame, and MB/s counts payload
// bytes.
func BenchmarkMuxFLV(b *testing.B) {
	for _, bc := range []struct{ name, video, audio string }{
		{"H264AVCC+AAC", "h264", "aac"},
		{"H264AnnexB+AAC", "h264-annexb", "aac"},
		{"HEVC+Opus", "h265", "opus"},
		{"AV1+Opus", "av1", "opus"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			v, a := mediatest.LoadSample(bc.video), mediatest.LoadSample(bc.audio)
			period := max(v.Duration(), a.Duration())
			mediatest.BenchMux(b, NewWriter(io.Discard, Options{}), period,
				mediatest.InputOf(v, 1), mediatest.InputOf(a, 2))
		})
	}
}
