package flv

import (
	"io"
	"testing"

	moqexport "github.com/moq-export/moq-export"
	"github.com/moq-export/moq-export/mux"
)

// BenchmarkMuxFLV muxes the H.264 (AVCC, B-frames) and AAC samples to
// io.Discard. One op is one frame: ns/op is ns/frame, allocs/op is
// allocs/frame, and MB/s counts payload bytes.
func BenchmarkMuxFLV(b *testing.B) {
	v, a := moqexport.MustLoadSample("h264"), moqexport.MustLoadSample("aac")
	frames := interleave(0, v, a)
	period := max(v.Duration(), a.Duration())
	var bytes int64
	for _, f := range frames {
		bytes += int64(len(f.Payload))
	}
	b.SetBytes(bytes / int64(len(frames)))
	b.ReportAllocs()

	w := NewWriter(io.Discard, Options{})
	for _, tr := range []mux.Track{trackOf(1, v), trackOf(2, a)} {
		if err := w.AddTrack(tr); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f := frames[i%len(frames)]
		f.Timestamp += int64(i/len(frames)) * period
		if err := w.WriteFrame(f); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}
