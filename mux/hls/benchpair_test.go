package hls_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/hls"
	"github.com/moq-export/moq-export/mux/mp4"
)

// BenchmarkPairedPackaging measures what BenchmarkPackaging's "mp4-file"
// and "hls" measure, MP4 file output and an HLS package through
// hls.DirStore of the same h264+aac media, but interleaved: both outputs
// are open at once, each 4 s pass of the media goes into one and then the
// other (which one first alternates), and the process's CPU time is read
// around each pass. One operation is one pass into both.
//
// Run one after the other, as BenchmarkPackaging's sub-benchmarks are, the
// two are measured seconds apart, and on this project's machines (virtual
// machines sharing a host) what the kernel's part of a frame costs, mostly
// copying it into the page cache, moves by 2x and more from one second to
// the next, for both alike. Passes a few hundred microseconds apart see
// the same machine (docs/hls.md, Cost).
//
// It reports each output's CPU time per frame over all its passes
// (opening and closing included), and over the passes that neither open
// nor close an output and are not among its first three (where a package
// creates its files: the playlists and the MPD at the first boundary,
// their spares at the second): what a frame costs in a running recording,
// each of those passes holding one segment boundary, without the
// per-output cost. ratio-per-frame is the ratio hls/mp4-file of the
// latter, ratio-median-pass that of the median of those passes (the
// machine at its quicker moments), ratio-all that of all passes. The
// collector runs between passes, paced as GOGC=100 would pace it, and
// each cycle's CPU time is shared by the bytes each output allocated: run
// where it fell, a cycle of a few milliseconds in one output's pass moved
// a run's ratio by 0.1.
//
// MOQ_BENCH_PASSES sets the passes per output (default 16, 64 s; more
// than three), MOQ_BENCH_DIR the parent directory (a tmpfs: /dev/shm),
// MOQ_BENCH_KEEP=1 leaves the outputs in place, MOQ_BENCH_TRACE=FILE
// writes each pass's CPU time and allocated bytes. scripts/bench-hls.sh
// PAIRED=1 runs it.
func BenchmarkPairedPackaging(b *testing.B) {
	v, a := mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2)
	passes := int64(16)
	if p, err := strconv.Atoi(os.Getenv("MOQ_BENCH_PASSES")); err == nil && p > 0 {
		passes = int64(p)
	}
	frames := mediatest.Interleave(v, a)
	span := mediatest.LoadSample("h264").Duration()
	dir, err := os.MkdirTemp(os.Getenv("MOQ_BENCH_DIR"), "bench")
	if err != nil {
		b.Fatal(err)
	}
	if os.Getenv("MOQ_BENCH_KEEP") == "" {
		defer os.RemoveAll(dir)
	}
	type output struct {
		name string
		open func(n int) (mux.Muxer, func())

		w       mux.Muxer
		done    func()
		pass    int64 // passes written into the open output
		outputs int
		cpu     time.Duration   // all passes and closes
		plain   time.Duration   // settled passes: neither the first three nor a close
		nPlain  int64           // frames of those passes
		perPass []time.Duration // each of those passes, without the collector
		// Bytes allocated since the collector last ran, in all passes and
		// in the settled passes.
		since, sincePlain uint64
	}
	outs := []*output{
		{name: "mp4-file", open: func(n int) (mux.Muxer, func()) {
			return openMP4File(b, filepath.Join(dir, fmt.Sprintf("bench-%d.mp4", n)))
		}},
		{name: "hls", open: func(n int) (mux.Muxer, func()) {
			return openHLSDir(b, filepath.Join(dir, fmt.Sprintf("pkg-%d", n)))
		}},
	}
	var trace *os.File
	if p := os.Getenv("MOQ_BENCH_TRACE"); p != "" {
		if trace, err = os.Create(p); err != nil {
			b.Fatal(err)
		}
		defer trace.Close()
	}
	closeOut := func(o *output) {
		if err := o.w.Close(); err != nil {
			b.Fatal(err)
		}
		o.done()
		o.w, o.pass = nil, 0
	}
	// The collector runs between passes, paced as GOGC=100 paces it (a
	// cycle once the heap has grown by what was live after the last one,
	// 4 MB at least), and what a cycle costs is shared between the outputs
	// by the bytes each allocated since the one before.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	heap := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/live:bytes"}}
	allocated := func() uint64 {
		metrics.Read(heap[:1])
		return heap[0].Value.Uint64()
	}
	var goal uint64
	collect := func() {
		var since uint64
		for _, o := range outs {
			since += o.since
		}
		if since < goal {
			return
		}
		c0 := cpuTime()
		runtime.GC()
		c := float64(cpuTime() - c0)
		for _, o := range outs {
			if since > 0 {
				o.cpu += time.Duration(c * float64(o.since) / float64(since))
				o.plain += time.Duration(c * float64(o.sincePlain) / float64(since))
			}
			o.since, o.sincePlain = 0, 0
		}
		metrics.Read(heap[1:])
		goal = max(heap[1].Value.Uint64(), 4<<20)
	}
	// The first passes of a package create its files (at the first
	// boundary each playlist and the MPD, at the second their spares):
	// per-output costs, like the opening.
	const settle = 3
	// One pass of the media into o, its pass-th since the recording began.
	write := func(o *output, pass int64) {
		a0 := allocated()
		c0 := cpuTime()
		plain := o.pass >= settle
		if o.w != nil && o.pass == passes {
			closeOut(o)
			plain = false
		}
		if o.w == nil {
			o.outputs++
			o.w, o.done = o.open(o.outputs)
			mediatest.Write(b, o.w, mediatest.Tracks(v, a), nil)
			plain = false
		}
		for _, fr := range frames {
			fr.Timestamp += pass * span
			if err := o.w.WriteFrame(fr); err != nil {
				b.Fatal(err)
			}
		}
		o.pass++
		c := cpuTime() - c0
		al := allocated() - a0
		if trace != nil {
			fmt.Fprintf(trace, "%s %d %v %d %d\n", o.name, pass, plain, c.Nanoseconds(), al)
		}
		o.cpu += c
		o.since += al
		if plain {
			o.plain += c
			o.perPass = append(o.perPass, c)
			o.sincePlain += al
			o.nPlain += int64(len(frames))
		}
	}
	b.SetBytes(mediatest.MeanPayload(frames) * int64(len(frames)) * 2)
	b.ReportAllocs()
	runtime.GC()
	var pass int64
	for b.Loop() {
		first := int(pass % 2)
		write(outs[first], pass)
		write(outs[1-first], pass)
		collect()
		pass++
	}
	for _, o := range outs {
		if o.w != nil {
			a0 := allocated()
			c0 := cpuTime()
			closeOut(o)
			o.cpu += cpuTime() - c0
			o.since += allocated() - a0
		}
	}
	goal = 0
	collect()
	n := float64(pass * int64(len(frames)))
	perFrame := func(o *output) float64 {
		if o.nPlain == 0 {
			return 0
		}
		return float64(o.plain) / float64(o.nPlain)
	}
	for _, o := range outs {
		b.ReportMetric(float64(o.cpu)/n, o.name+"-cpu-ns/frame")
		b.ReportMetric(perFrame(o), o.name+"-plain-ns/frame")
		fixed := (float64(o.cpu-o.plain) - perFrame(o)*(n-float64(o.nPlain))) / float64(o.outputs)
		b.ReportMetric(fixed/1000, o.name+"-fixed-µs/output")
	}
	mp, hp := perFrame(outs[0]), perFrame(outs[1])
	if mp > 0 {
		b.ReportMetric(hp/mp, "ratio-per-frame")
	}
	b.ReportMetric(float64(outs[1].cpu)/float64(outs[0].cpu), "ratio-all")
	if m := median(outs[0].perPass); m > 0 {
		b.ReportMetric(float64(median(outs[1].perPass))/float64(m), "ratio-median-pass")
	}
	b.ReportMetric(float64(outs[0].outputs), "outputs")
	b.ReportMetric(float64(passes*int64(len(frames))), "frames/output")
}

// median returns the median of d (0 when empty); d is sorted.
func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[len(d)/2]
}

// openMP4File creates the MP4 file path and returns its writer and what
// closes the file after the writer.
func openMP4File(b *testing.B, path string) (mux.Muxer, func()) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	return mp4.NewWriter(f, mp4.Options{Path: path}), func() { f.Close() }
}

// openHLSDir creates the package directory pkg and returns an HLS writer
// into it through a DirStore, as -f hls writes, and what closes the store
// after the writer.
func openHLSDir(b *testing.B, pkg string) (mux.Muxer, func()) {
	if err := os.Mkdir(pkg, 0o755); err != nil {
		b.Fatal(err)
	}
	st, err := hls.OpenDirStore(pkg)
	if err != nil {
		b.Fatal(err)
	}
	return hls.NewWriter(hls.Options{Store: st}), func() { st.Close() }
}
