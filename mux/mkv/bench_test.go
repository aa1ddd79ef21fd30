package mkv

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
)

// BenchmarkMuxMKV measures the per-frame cost of muxing h264+aac: one
// operation is one frame, b.SetBytes is the mean payload size, so MB/s is
// payload throughput. "live" writes the unknown-size form to io.Discard;
// "file" writes a finalized file to disk (Close included per pass).
func BenchmarkMuxMKV(b *testing.B) {
	v, a := mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2)
	frames := mediatest.Interleave(v, a)
	span := mediatest.LoadSample("h264").Duration() + 100_000
	run := func(b *testing.B, open func() (io.Writer, func())) {
		b.SetBytes(mediatest.MeanPayload(frames))
		b.ReportAllocs()
		var w *Writer
		var done func()
		pass := int64(0)
		for i := 0; b.Loop(); i++ {
			j := i % len(frames)
			if j == 0 {
				if w != nil && pass%16 == 0 {
					if err := w.Close(); err != nil {
						b.Fatal(err)
					}
					done()
					w = nil
				}
				if w == nil {
					out, d := open()
					w, done = NewWriter(out, Options{}), d
					mediatest.Write(b, w, mediatest.Tracks(v, a), nil)
				}
				pass++
			}
			f := frames[j]
			f.Timestamp += pass * span
			if err := w.WriteFrame(f); err != nil {
				b.Fatal(err)
			}
		}
		if w != nil {
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			done()
		}
	}
	b.Run("live", func(b *testing.B) {
		run(b, func() (io.Writer, func()) { return io.Discard, func() {} })
	})
	b.Run("file", func(b *testing.B) {
		dir := b.TempDir()
		run(b, func() (io.Writer, func()) {
			f, err := os.Create(filepath.Join(dir, "bench.mkv"))
			if err != nil {
				b.Fatal(err)
			}
			return f, func() { f.Close() }
		})
	})
}

var _ mux.Muxer = (*Writer)(nil)
