package export_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/internal/testutil/allocs"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/mkv"
	"github.com/moq-export/moq-export/subscribe"
)

// The end-to-end frame path, as a recording pays for it: a producer writes
// one H.264 track into a model broadcast; in process the export reads that
// broadcast, over loopback QUIC our publisher serves it (moq-lite, legacy
// container) to a dialled session whose broadcast the export reads; the
// export orders the frames (jitter) into an MKV muxer on a writer.
//
// The producer keeps at most window frames ahead of the muxer. Without that
// bound a producer outruns the publisher, the model prunes the groups
// nobody read in time, and a wait for frames that were never going to come
// hangs (what a first draft of this benchmark did). With it, every frame is
// delivered: the window is far below what a track keeps (8 groups of 30
// frames, model.MaxLag of media time), and the export never gives up on a
// group (Latency of an hour). A wait that sees no progress for stallLimit
// fails the run instead of hanging; it is a guard, nothing depends on it.

// window bounds the frames written but not yet muxed (2 groups).
const window = 60

// stallLimit is how long a wait may see no frame muxed before it fails.
const stallLimit = 30 * time.Second

// e2eFrame is one frame the producer cycles through.
type e2eFrame struct {
	ts       int64 // µs, within one cycle
	keyframe bool  // opens a group
	payload  []byte
}

// syntheticH264 returns one group of 30 H.264 frames of size bytes each
// (AVCC: a 4-byte length, then an IDR or non-IDR slice NAL of filler), at
// 30 fps. Muxers do not decode slices, so it measures the path at a fixed
// frame size; it does not decode.
func syntheticH264(size int) []e2eFrame {
	frames := make([]e2eFrame, 30)
	for i := range frames {
		p := make([]byte, size)
		n := size - 4
		p[0], p[1], p[2], p[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
		p[4] = 0x41 // non-IDR slice
		if i == 0 {
			p[4] = 0x65 // IDR slice
		}
		for j := 5; j < size; j++ {
			p[j] = byte(j*7 + i)
		}
		frames[i] = e2eFrame{ts: int64(i) * 33_333, keyframe: i == 0, payload: p}
	}
	return frames
}

// sampleFrames returns the embedded H.264 sample's frames.
func sampleFrames(s *samples.Sample) []e2eFrame {
	out := make([]e2eFrame, len(s.Frames))
	for i, f := range s.Frames {
		out[i] = e2eFrame{ts: f.Timestamp, keyframe: f.Keyframe, payload: f.Payload}
	}
	return out
}

// countingMuxer counts the frames the export hands to the muxer and wakes
// the producer waiting for them.
type countingMuxer struct {
	mux.Muxer
	written atomic.Int64
	wrote   chan struct{}
}

func (m *countingMuxer) WriteFrame(f mux.Frame) error {
	err := m.Muxer.WriteFrame(f)
	m.written.Add(1)
	select {
	case m.wrote <- struct{}{}:
	default:
	}
	return err
}

// pipeline is one end-to-end path under test.
type pipeline struct {
	tb     testing.TB
	frames []e2eFrame
	span   int64 // µs of one cycle of frames
	src    *model.Track
	group  *model.Group
	sent   int64
	m      *countingMuxer
	e      *export.Export
	done   chan error
	stall  *time.Timer
	stop   func()
}

// newPipeline starts an export of one track (frames, cycled, described as
// the embedded sample of that name describes it) into an MKV muxer on w, in process or over loopback QUIC, and waits until the
// export wrote the first frame: from then on every frame sent is recorded.
func newPipeline(tb testing.TB, overQUIC bool, sample string, frames []e2eFrame, w io.Writer) *pipeline {
	tb.Helper()
	cat, err := demo.Catalog([]string{sample})
	if err != nil {
		tb.Fatal(err)
	}
	data, err := cat.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	pub := model.NewBroadcast("bench")
	cg, _ := pub.CreateTrack(catalog.TrackFor(pub.Name())).AppendGroup()
	cg.WriteFrame(model.Frame{Payload: data})
	cg.Close(nil)
	p := &pipeline{tb: tb, frames: frames, src: pub.CreateTrack(sample), done: make(chan error, 1)}
	last := frames[len(frames)-1].ts
	for _, f := range frames {
		last = max(last, f.ts)
	}
	p.span = last - frames[0].ts + 33_333

	var closers []func()
	bc := pub
	if overQUIC {
		bc, closers = serveLoopback(tb, pub)
	}
	p.m = &countingMuxer{Muxer: mkv.NewWriter(w, mkv.Options{}), wrote: make(chan struct{}, 1)}
	p.e = export.New(bc, p.m, export.Options{Delay: time.Second, Latency: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { p.done <- p.e.Run(ctx) }()
	p.stall = time.NewTimer(time.Hour)
	p.stop = func() {
		// The export first (it finalizes the file), then the producer's
		// broadcast (our publisher's subscriptions end), then the
		// sessions.
		cancel()
		if err := <-p.done; err != nil && !errors.Is(err, context.Canceled) {
			tb.Errorf("export: %v", err)
		}
		if st := p.e.Stats(); st.Frames != p.sent || st.Dropped != 0 || st.Skipped != 0 || st.Late != 0 {
			tb.Errorf("sent %d frames, export stats %+v", p.sent, st)
		}
		pub.Close(nil)
		for _, c := range slices.Backward(closers) {
			c()
		}
		p.stall.Stop()
	}
	// The export joins live, at the newest keyframe: feed one frame and
	// wait for it, so that it has joined before the measured frames.
	p.write()
	p.waitWritten(1)
	return p
}

// serveLoopback serves pub from an accepted session on a loopback QUIC
// listener and returns the broadcast as the session that dialled it sees
// it, and what closes both, in order.
func serveLoopback(tb testing.TB, pub *model.Broadcast) (*model.Broadcast, []func()) {
	tb.Helper()
	cert, pin, err := subscribe.SelfSignedCert()
	if err != nil {
		tb.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	srv, err := subscribe.Listen("127.0.0.1:0", subscribe.ServerOptions{Certificates: []tls.Certificate{cert}, Logger: log})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	client, err := subscribe.Dial(ctx, fmt.Sprintf("moql://%s/", srv.Addr()), subscribe.Options{TLSFingerprint: pin, Logger: log})
	if err != nil {
		srv.Close()
		tb.Fatal(err)
	}
	closers := []func(){func() { srv.Close() }, func() { client.Close() }}
	peer, err := srv.Accept(ctx)
	if err == nil {
		err = peer.Publish(pub)
	}
	if err != nil {
		client.Close()
		srv.Close()
		tb.Fatal(err)
	}
	return client.Broadcast(pub.Name()), closers
}

// write produces the next frame, opening a group at each keyframe.
func (p *pipeline) write() {
	i := p.sent % int64(len(p.frames))
	f := p.frames[i]
	if f.keyframe || p.group == nil {
		if p.group != nil {
			p.group.Close(nil)
		}
		var err error
		if p.group, err = p.src.AppendGroup(); err != nil {
			p.tb.Fatal(err)
		}
	}
	ts := f.ts + p.sent/int64(len(p.frames))*p.span
	if err := p.group.WriteFrame(model.Frame{Timestamp: ts, Payload: f.payload}); err != nil {
		p.tb.Fatal(err)
	}
	p.sent++
}

// send produces n frames, staying within window frames of the muxer.
func (p *pipeline) send(n int) {
	for range n {
		if p.sent-p.m.written.Load() >= window {
			p.waitWritten(p.sent - window/2)
		}
		p.write()
	}
}

// waitWritten returns once n frames were muxed. It fails when the export
// ends or nothing moves for stallLimit.
func (p *pipeline) waitWritten(n int64) {
	last := p.m.written.Load()
	if last >= n {
		return
	}
	p.stall.Reset(stallLimit)
	for {
		select {
		case <-p.m.wrote:
		case err := <-p.done:
			p.done <- err
			p.tb.Fatalf("export ended after %d of %d frames: %v", p.m.written.Load(), n, err)
		case <-p.stall.C:
			if p.m.written.Load() == last {
				p.tb.Fatalf("no frame muxed for %v: %d of %d (sent %d)", stallLimit, last, n, p.sent)
			}
			p.stall.Reset(stallLimit)
		}
		if last = p.m.written.Load(); last >= n {
			return
		}
	}
}

// drain waits for every frame sent (stop checks that the export counted
// them all, and dropped or skipped none).
func (p *pipeline) drain() { p.waitWritten(p.sent) }

// BenchmarkEndToEnd records one track into MKV on io.Discard, in process
// and over loopback QUIC, in one run: video, H.264 frames of 4 KB in
// groups of 30; audio, the AAC sample's frames (about 370 bytes), one
// group each as hang publishes audio, so that it measures what a group
// costs. One op is one frame. cpu-ns/frame is the process's CPU time (user
// and system, all goroutines, publisher included) per frame, and
// Gbit/s-on-2-cores the payload rate two cores would carry at that cost.
// allocs/op counts every allocation in the process (publisher and quic-go
// included). own-allocs/frame is this module's on the receiving side, what
// a recorder pays (subscriber, model, export, jitter, muxer),
// own-sending-allocs/frame this module's on the sending side (the
// producer's model track and our publisher), dep-allocs/frame everyone
// else's, both sides (quic-go's run loops serve both); counted with every
// allocation sampled over 600 frames after the timed loop (package
// internal/testutil/allocs).
func BenchmarkEndToEnd(b *testing.B) {
	for _, media := range []struct {
		name, sample string
		frames       []e2eFrame
	}{
		{"video", "h264", syntheticH264(4096)},
		{"audio", "aac", sampleFrames(mediatest.LoadSample("aac"))},
	} {
		size := 0
		for _, f := range media.frames {
			size += len(f.payload)
		}
		size /= len(media.frames)
		for _, path := range []string{"in-process", "loopback-quic"} {
			b.Run(path+"/"+media.name, func(b *testing.B) {
				p := newPipeline(b, path == "loopback-quic", media.sample, media.frames, io.Discard)
				defer p.stop()
				b.SetBytes(int64(size))
				b.ReportAllocs()
				cpu := processCPU()
				for b.Loop() {
					p.send(1)
				}
				p.drain()
				cpu = processCPU() - cpu
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/frame")
				// Payload bits per second that two cores could carry at
				// that cost (the machine is shared: wall-clock MB/s
				// depends on the others' load, the CPU spent per frame
				// much less).
				b.ReportMetric(2*float64(time.Second)/float64(cpu.Nanoseconds())*float64(b.N)*float64(8*size)/1e9, "Gbit/s-on-2-cores")
				const counted = 600
				c := allocs.Count(allocs.Module, func() {
					p.send(counted)
					p.waitWritten(p.sent)
				}, sendingSide...)
				b.ReportMetric(float64(c.Own)/counted, "own-allocs/frame")
				b.ReportMetric(float64(c.OwnApart)/counted, "own-sending-allocs/frame")
				b.ReportMetric(float64(c.Others)/counted, "dep-allocs/frame")
				b.Logf("allocations per frame by package: %s", perFrame(c.ByPackage, counted))
				p.drain()
			})
		}
	}
}

// sendingSide names the functions only the producer and our publisher run
// (internal/testutil/allocs counts what runs through them apart).
var sendingSide = []string{
	"export_test.(*pipeline).write",
	"litepub.(*liteSink)",
	"litepub.(*Publisher).ServeSubscribe",
	"internal/moq/session.Serve",
}

// perFrame lists the allocations per frame of the packages that make most
// (the benchmark log shows ten lines).
func perFrame(by map[string]int64, frames int) string {
	type row struct {
		pkg string
		n   int64
	}
	var rows []row
	for pkg, n := range by {
		rows = append(rows, row{strings.TrimPrefix(pkg, allocs.Module), n})
	}
	sort.Slice(rows, func(i, j int) bool {
		return rows[i].n > rows[j].n || rows[i].n == rows[j].n && rows[i].pkg < rows[j].pkg
	})
	var sb strings.Builder
	for _, r := range rows[:min(len(rows), 8)] {
		if float64(r.n)/float64(frames) >= 0.01 {
			fmt.Fprintf(&sb, "\n  %6.2f %s", float64(r.n)/float64(frames), cmp(r.pkg, "(runtime, std)"))
		}
	}
	return sb.String()
}

func cmp(s, empty string) string {
	if s == "" {
		return empty
	}
	return s
}

// TestEndToEndPathRecordsEveryFrame runs the benchmark's path, in process
// and over loopback QUIC, on the real H.264 and AAC samples (three loops)
// into an MKV file, and checks with ffmpeg that the file decodes and holds
// every frame at its timestamp: the benchmark measures a path that works,
// and it terminates.
func TestEndToEndPathRecordsEveryFrame(t *testing.T) {
	for _, tc := range []struct{ path, sample string }{
		{"in-process", "h264"}, {"loopback-quic", "h264"}, {"in-process", "aac"}, {"loopback-quic", "aac"},
	} {
		frames := sampleFrames(mediatest.LoadSample(tc.sample))
		t.Run(tc.path+"/"+tc.sample, func(t *testing.T) {
			f, name := mediatest.CreateFile(t, "out.mkv")
			p := newPipeline(t, tc.path == "loopback-quic", tc.sample, frames, f)
			p.send(3*len(frames) - 1)
			p.drain()
			var want []int64
			for i := range p.sent {
				want = append(want, frames[i%int64(len(frames))].ts+i/int64(len(frames))*p.span)
			}
			p.stop()
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			mediatest.DecodeClean(t, name)
			pkts := mediatest.Probe(t, name).PacketsOf(0)
			if len(pkts) != len(want) {
				t.Fatalf("%d packets in the file, want %d", len(pkts), len(want))
			}
			got := make([]int64, len(pkts))
			for i, pk := range pkts {
				if pk.PTS == nil {
					t.Fatalf("packet %d has no pts", i)
				}
				got[i] = *pk.PTS // MKV: milliseconds
			}
			slices.Sort(got)
			slices.Sort(want)
			for i := range got {
				wantMS := float64(want[i]-want[0]) / 1000
				if math.Abs(float64(got[i]-got[0])-wantMS) > 1 {
					t.Fatalf("packet %d at %d ms from the first, want %.1f", i, got[i]-got[0], wantMS)
				}
			}
		})
	}
}
