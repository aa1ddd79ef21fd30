package hls_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/hls"
)

// BenchmarkPackaging compares, in one run, HLS packaging with MP4 file
// output of the same h264+aac media: one operation is one frame (MB/s
// counts payload), each output holds 64 s of media (16 passes of the
// 4 s samples) and is then closed, the close inside the time. Each output
// is new (a new file, a new package directory), as a recording's is;
// removing them is outside the time. "mp4-file" writes a file and
// finishes it into a regular MP4; "hls" writes a package into a directory
// through hls.DirStore, what the command writes (one media file per
// rendition, segments appended; each playlist, the MPD and the state
// swapped in atomically);
// "hls-memory" keeps the package's files in memory. Neither output
// fsyncs. Besides the wall time per frame, cpu-ns/op is the process's CPU
// time per frame, sys-ns/op the kernel's part of it. MOQ_BENCH_DIR=/dev/shm
// puts both outputs on a tmpfs; MOQ_BENCH_KEEP=1 leaves them in place
// (scripts/bench-hls.sh KEEP=1 removes them at its end);
// scripts/bench-hls.sh prints the ratio. outputs is how many outputs the
// run made (the last may be shorter) and frames/output how many frames a
// whole one holds: the script runs outputs of several lengths and
// separates what a frame costs from what an output costs once (creating
// its files, finishing it), which a file system sets (docs/hls.md, Cost).
func BenchmarkPackaging(b *testing.B) {
	v, a := mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2)
	// MOQ_BENCH_PASSES sets the passes per output (default 16, 64 s):
	// 150 (10 minutes) shows whether a boundary costs more as the
	// package grows.
	passes := int64(16)
	if p, err := strconv.Atoi(os.Getenv("MOQ_BENCH_PASSES")); err == nil && p > 0 {
		passes = int64(p)
	}
	n := 0
	for _, tc := range []struct {
		name string
		open func(dir string) (mux.Muxer, func())
	}{
		{"mp4-file", func(dir string) (mux.Muxer, func()) {
			n++
			return openMP4File(b, filepath.Join(dir, fmt.Sprintf("bench-%d.mp4", n)))
		}},
		{"hls-memory", func(string) (mux.Muxer, func()) {
			return hls.NewWriter(hls.Options{Store: memStore{}}), func() {}
		}},
		{"hls", func(dir string) (mux.Muxer, func()) {
			n++
			return openHLSDir(b, filepath.Join(dir, fmt.Sprintf("pkg-%d", n)))
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			frames := mediatest.Interleave(v, a)
			span := mediatest.LoadSample("h264").Duration()
			parent := ""
			if d := os.Getenv("MOQ_BENCH_DIR"); d != "" {
				// Both outputs on another file system (a tmpfs: what the
				// packaging costs without the disk's journal).
				parent = d
			}
			dir, err := os.MkdirTemp(parent, "bench")
			if err != nil {
				b.Fatal(err)
			}
			if os.Getenv("MOQ_BENCH_KEEP") == "" {
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
			pass, outputs := int64(0), 0
			cpu0, sys0 := cpuTime(), sysTime()
			for i := 0; b.Loop(); i++ {
				j := i % len(frames)
				if j == 0 {
					if w != nil && pass%passes == 0 {
						closeOut()
					}
					if w == nil {
						w, done = tc.open(dir)
						outputs++
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
			// The process's CPU time (user and system) per frame: what the
			// packaging costs the machine, less moved than the wall time
			// by other work on a shared machine.
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(sysTime()-sys0)/float64(b.N), "sys-ns/op")
			b.ReportMetric(float64(outputs), "outputs")
			b.ReportMetric(float64(passes*int64(len(frames))), "frames/output")
		})
	}
}
