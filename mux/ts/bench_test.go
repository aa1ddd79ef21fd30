package ts_test

import (
	"io"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux/ts"
)

// BenchmarkMuxTS muxes the H.264 (B-frames, AVCC) and AAC samples, looped
// with advancing timestamps. One op is one frame: ns/op and allocs/op are
// per frame, MB/s counts payload bytes in.
func BenchmarkMuxTS(b *testing.B) {
	const loop = 4_100_000 // µs, past the end of both samples
	mediatest.BenchMux(b, ts.NewWriter(io.Discard, ts.Options{}), loop,
		mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2))
}
