package mp4_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux/mp4"
)

// BenchmarkMuxMP4 measures the per-frame cost of muxing h264+aac: one
// operation is one frame, b.SetBytes is the mean payload size, so MB/s is
// payload throughput. "stream" writes fragments to io.Discard; "file"
// writes to disk and finishes the file every 16 passes of the samples
// (64 s of media), the finish included in the time.
func BenchmarkMuxMP4(b *testing.B) {
	b.Run("stream", func(b *testing.B) {
		const loop = 4_100_000 // µs, past the end of both samples
		mediatest.BenchMux(b, mp4.NewWriter(io.Discard, mp4.Options{}), loop,
			mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2))
	})
	b.Run("file", func(b *testing.B) {
		v, a := mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2)
		frames := mediatest.Interleave(v, a)
		span := mediatest.LoadSample("h264").Duration() + 100_000
		path := filepath.Join(b.TempDir(), "bench.mp4")
		var w *mp4.Writer
		var f *os.File
		closeFile := func() {
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			f.Close()
			w = nil
		}
		b.SetBytes(mediatest.MeanPayload(frames))
		b.ReportAllocs()
		pass := int64(0)
		for i := 0; b.Loop(); i++ {
			j := i % len(frames)
			if j == 0 {
				if w != nil && pass%16 == 0 {
					closeFile()
				}
				if w == nil {
					var err error
					if f, err = os.Create(path); err != nil {
						b.Fatal(err)
					}
					w = mp4.NewWriter(f, mp4.Options{Path: path})
					mediatest.Write(b, w, mediatest.Tracks(v, a), nil)
				}
				pass++
			}
			fr := frames[j]
			fr.Timestamp += pass * span
			if err := w.WriteFrame(fr); err != nil {
				b.Fatal(err)
			}
		}
		if w != nil {
			closeFile()
		}
	})
}

// BenchmarkFinishMP4 measures Close of a file recording of h264+aac: the
// finish into a regular MP4 (and the last fragment). One operation is one
// finish; recording the media before it is not timed. "30min" is the
// recording scripts/bench-vs-ffmpeg.sh makes (72 MB).
func BenchmarkFinishMP4(b *testing.B) {
	for _, bc := range []struct {
		name   string
		passes int
	}{{"1min", 15}, {"30min", 450}} {
		b.Run(bc.name, func(b *testing.B) {
			v, a := mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2)
			frames := mediatest.Interleave(v, a)
			span := mediatest.LoadSample("h264").Duration() + 100_000
			dir := b.TempDir()
			b.ReportAllocs()
			for i := range b.N {
				b.StopTimer()
				// A new file each time: closing a file that O_TRUNC
				// emptied and that was written again makes ext4 start
				// writing it back (auto_da_alloc), which is not the
				// finish's cost.
				path := filepath.Join(dir, fmt.Sprintf("finish-%d.mp4", i))
				if i > 0 {
					os.Remove(filepath.Join(dir, fmt.Sprintf("finish-%d.mp4", i-1)))
				}
				f, err := os.Create(path)
				if err != nil {
					b.Fatal(err)
				}
				w := mp4.NewWriter(f, mp4.Options{Path: path})
				mediatest.Write(b, w, mediatest.Tracks(v, a), nil)
				for pass := range int64(bc.passes) {
					for _, fr := range frames {
						fr.Timestamp += pass * span
						if err := w.WriteFrame(fr); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.StartTimer()
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				f.Close()
				b.StartTimer()
			}
		})
	}
}
