package ts_test

import (
	"io"
	"testing"

	"github.com/moq-export/moq-export/mux/ts"
)

// BenchmarkMuxTS muxes the H.264 (B-frames, AVCC) and AAC samples, looped
// with advancing timestamps. One op is one frame: ns/op and allocs/op are
// per frame, MB/s counts payload bytes in.
func BenchmarkMuxTS(b *testing.B) {
	v, a := sampleInput("h264", 1), sampleInput("aac", 2)
	frames := interleave(v, a)
	var payload int64
	for _, f := range frames {
		payload += int64(len(f.Payload))
	}
	const loop = 4_100_000 // µs, past the end of both samples
	w := ts.NewWriter(io.Discard, ts.Options{})
	for _, in := range []input{v, a} {
		if err := w.AddTrack(in.track); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(payload / int64(len(frames)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f := frames[i%len(frames)]
		f.Timestamp += int64(i/len(frames)) * loop
		if err := w.WriteFrame(f); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}
