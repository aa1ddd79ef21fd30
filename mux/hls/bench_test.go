package hls_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/hls"
	"github.com/moq-export/moq-export/mux/mp4"
)

// BenchmarkPackaging compares, in one run, HLS packaging with MP4 file
// output of the same h264+aac media: one operation is one frame (MB/s
// counts payload), each output holds 64 s of media (16 passes of the
// 4 s samples) and is then closed, the close inside the time: "mp4-file"
// writes a file and finishes it into a regular MP4, "hls" writes a package
// into a directory (a file per segment written in place, each playlist
// rewritten by rename after each segment, the MPD too, the state every
// few segments); "hls-memory" keeps the
// package's files in memory. MOQ_BENCH_DIR=/dev/shm puts both outputs on
// a tmpfs.
func BenchmarkPackaging(b *testing.B) {
	v, a := mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2)
	for _, tc := range []struct {
		name string
		open func(dir string) (mux.Muxer, func())
	}{
		{"mp4-file", func(dir string) (mux.Muxer, func()) {
			path := filepath.Join(dir, "bench.mp4")
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			return mp4.NewWriter(f, mp4.Options{Path: path}), func() { f.Close() }
		}},
		{"hls-memory", func(string) (mux.Muxer, func()) {
			return hls.NewWriter(hls.Options{Store: memStore{}}), func() {}
		}},
		{"hls", func(dir string) (mux.Muxer, func()) {
			pkg := filepath.Join(dir, "pkg")
			os.RemoveAll(pkg)
			if err := os.MkdirAll(pkg, 0o755); err != nil {
				b.Fatal(err)
			}
			return hls.NewWriter(hls.Options{Store: renameStore(pkg)}), func() {}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			frames := mediatest.Interleave(v, a)
			span := mediatest.LoadSample("h264").Duration()
			dir := b.TempDir()
			if d := os.Getenv("MOQ_BENCH_DIR"); d != "" {
				// Both outputs on another file system (a tmpfs: what the
				// packaging costs without the disk's journal).
				var err error
				if dir, err = os.MkdirTemp(d, "bench"); err != nil {
					b.Fatal(err)
				}
				defer os.RemoveAll(dir)
			}
			var w mux.Muxer
			var done func()
			closeOut := func() {
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				done()
				w = nil
			}
			b.SetBytes(mediatest.MeanPayload(frames))
			b.ReportAllocs()
			pass := int64(0)
			for i := 0; b.Loop(); i++ {
				j := i % len(frames)
				if j == 0 {
					if w != nil && pass%16 == 0 {
						closeOut()
					}
					if w == nil {
						w, done = tc.open(dir)
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
				closeOut()
			}
		})
	}
}

// renameStore is a Store over a directory that writes each file to a
// temporary name and renames it, as record's directory package does.
type renameStore string

func (d renameStore) WriteFile(name string, data []byte) error {
	tmp := filepath.Join(string(d), "."+name+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(string(d), name))
}

// WriteNewFile writes a segment in place (hls.NewFileStore), as record's
// directory package does.
func (d renameStore) WriteNewFile(name string, data []byte) error {
	return os.WriteFile(filepath.Join(string(d), name), data, 0o644)
}

func (d renameStore) ReadFile(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(string(d), name))
}
