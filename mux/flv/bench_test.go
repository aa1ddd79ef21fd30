package flv

import (
	"io"
	"testing"

	"github.com/moq-export/moq-export/mux"
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
			v, a := loadSample(bc.video), loadSample(bc.audio)
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
		})
	}
}
