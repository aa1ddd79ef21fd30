package subscribe

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/moq/transport"
	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/model"
	"github.com/quic-go/quic-go"
)

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("MOQ_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// checkGoroutines fails the test when goroutines started during it are
// still running a few seconds after its cleanups.
func checkGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Fatalf("goroutine leak: %d before, %d after\n%s", before, n, buf)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// startServer listens on a loopback port with a fresh self-signed cert.
func startServer(t *testing.T, addr string) (*Server, string) {
	t.Helper()
	cert, pin, err := SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Listen(addr, ServerOptions{Certificates: []tls.Certificate{cert}, Logger: testLogger(t), FingerprintHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	return srv, pin
}

// dialAndAccept dials url with opts and returns that client session and
// the one srv accepted for it. The caller closes the client.
func dialAndAccept(t *testing.T, ctx context.Context, srv *Server, url string, opts Options) (client, peer *Session) {
	t.Helper()
	client, err := Dial(ctx, url, opts)
	if err != nil {
		t.Fatal(err)
	}
	peer, err = srv.Accept(ctx)
	if err != nil {
		client.Close()
		t.Fatal(err)
	}
	return client, peer
}

// expectAnnounced follows the announcements of s and checks that the first
// one starts path. The caller closes the returned feed.
func expectAnnounced(t *testing.T, ctx context.Context, s *Session, path string) *Announcements {
	t.Helper()
	ann, err := s.Announced(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if a, err := ann.Next(ctx); err != nil || a.Path != path || !a.Active {
		ann.Close()
		t.Fatalf("announcement %+v, %v; want %q active", a, err, path)
	}
	return ann
}

// sampleBroadcast builds a broadcast with the demo catalog and empty media
// tracks that keep every group; fill writes the sample frames.
type sampleBroadcast struct {
	b       *model.Broadcast
	samples []*samples.Sample
	tracks  map[string]*model.Track
}

func newSampleBroadcast(t *testing.T, name string, renditions ...string) *sampleBroadcast {
	t.Helper()
	cat, err := demo.Catalog(renditions)
	if err != nil {
		t.Fatal(err)
	}
	if len(renditions) == 0 {
		renditions = demo.DefaultRenditions
	}
	var loaded []*samples.Sample
	for _, name := range renditions {
		loaded = append(loaded, samples.MustLoadSample(name))
	}
	data, err := cat.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	sb := &sampleBroadcast{b: model.NewBroadcast(name), samples: loaded, tracks: map[string]*model.Track{}}
	ct := sb.b.CreateTrack(catalog.TrackName)
	g, _ := ct.AppendGroup()
	g.WriteFrame(model.Frame{Payload: data})
	g.Close(nil)
	for _, s := range loaded {
		tr := sb.b.CreateTrack(s.Name)
		tr.SetKeepGroups(100000)
		sb.tracks[s.Name] = tr
	}
	return sb
}

// fill writes every sample frame (offset added to timestamps), a new group
// at each keyframe, and closes the media tracks when end is set.
func (sb *sampleBroadcast) fill(t *testing.T, offset int64, end bool) {
	for _, s := range sb.samples {
		sb.fillFrames(t, s.Name, offset, 0, len(s.Frames))
		if end {
			sb.tracks[s.Name].Close(nil)
		}
	}
}

// fillFrames writes frames [from, to) of sample name (offset added to
// timestamps), a new group at each keyframe; from must be a keyframe (or 0).
func (sb *sampleBroadcast) fillFrames(t *testing.T, name string, offset int64, from, to int) {
	t.Helper()
	var s *samples.Sample
	for _, x := range sb.samples {
		if x.Name == name {
			s = x
		}
	}
	if s == nil {
		t.Fatalf("no sample %q", name)
	}
	if from > 0 && !s.Frames[from].Keyframe {
		t.Fatalf("%s frame %d is not a keyframe", name, from)
	}
	tr := sb.tracks[name]
	var g *model.Group
	for _, f := range s.Frames[from:to] {
		if f.Keyframe || g == nil {
			if g != nil {
				g.Close(nil)
			}
			var err error
			if g, err = tr.AppendGroup(); err != nil {
				t.Fatal(err)
			}
		}
		g.WriteFrame(model.Frame{Timestamp: f.Timestamp + offset, Payload: f.Payload})
	}
	if g != nil {
		g.Close(nil)
	}
}

// expected returns the frames a subscriber must see for sample s.
func expectedEvents(s *samples.Sample, offset int64) []model.Event {
	var out []model.Event
	seq := uint64(0)
	for i, f := range s.Frames {
		if f.Keyframe && i > 0 {
			seq++
		}
		out = append(out, model.Event{Kind: model.EventFrame, Frame: model.Frame{Timestamp: f.Timestamp + offset, Payload: f.Payload}, Keyframe: f.Keyframe || i == 0, Group: seq})
	}
	return out
}

// readTrack reads events of a consumer until n frames or the end arrived.
func readEvents(ctx context.Context, c *model.Consumer, stop func([]model.Event) bool) ([]model.Event, error) {
	// One ready set per consumer: a consumer queued on a set nobody takes
	// would never be queued on another.
	v, loaded := readySets.LoadOrStore(c, model.NewReadySet())
	rs := v.(*model.ReadySet)
	if !loaded {
		c.Watch(rs)
	}
	var evs []model.Event
	for {
		for {
			ev, ok := c.Next()
			if !ok {
				break
			}
			evs = append(evs, ev)
			if ev.Kind == model.EventEnd || stop(evs) {
				return evs, nil
			}
		}
		select {
		case <-rs.Wakeup():
			rs.Take(nil)
		case <-ctx.Done():
			return evs, fmt.Errorf("%w after %d events", ctx.Err(), len(evs))
		}
	}
}

var readySets sync.Map // *model.Consumer -> *model.ReadySet

func frameCount(evs []model.Event) int {
	n := 0
	for _, e := range evs {
		if e.Kind == model.EventFrame {
			n++
		}
	}
	return n
}

// compareFrames checks got (frames only) against want: bytes, timestamp,
// group, keyframe.
func compareFrames(t *testing.T, name string, got, want []model.Event) {
	t.Helper()
	var frames []model.Event
	for _, e := range got {
		if e.Kind == model.EventFrame {
			frames = append(frames, e)
		}
	}
	if len(frames) != len(want) {
		t.Fatalf("%s: %d frames, want %d", name, len(frames), len(want))
	}
	for i := range want {
		g, w := frames[i], want[i]
		if g.Frame.Timestamp != w.Frame.Timestamp || g.Group != w.Group || g.Keyframe != w.Keyframe || string(g.Frame.Payload) != string(w.Frame.Payload) {
			t.Fatalf("%s frame %d: ts %d group %d key %v len %d; want ts %d group %d key %v len %d", name, i,
				g.Frame.Timestamp, g.Group, g.Keyframe, len(g.Frame.Payload), w.Frame.Timestamp, w.Group, w.Keyframe, len(w.Frame.Payload))
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitWithin(t, 10*time.Second, what, cond)
}

// waitWithin polls cond until it holds, for up to d.
func waitWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var _ = strings.Contains

// subCount returns the number of live subscriptions of s's current
// connection.
func (s *Session) subCount() int {
	f, ok := s.links.Current()
	if !ok {
		return 0
	}
	return len(f.Routed())
}

func mustSample(t *testing.T, name string) *samples.Sample {
	t.Helper()
	s, err := samples.LoadSample(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// quicConfig is the QUIC configuration our sessions use, for tests that
// play a raw QUIC peer.
func quicConfig(keepAlive, idle time.Duration) *quic.Config {
	keepAlive, idle = liveness(keepAlive, idle)
	return transport.QUICConfig(keepAlive, idle)
}
