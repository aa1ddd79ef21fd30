package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/internal/testutil/udpproxy"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
)

// recordFor is how much media each case records; a resume case records
// more, so that its outage sits in the middle.
const (
	recordFor       = 2500 * time.Millisecond
	recordForResume = 6 * time.Second
)

// The outage of a resume case: the recorder that dials sees its connection
// time out (outageDial well above its idle timeout, which QUIC stretches to
// three probe timeouts when a loaded machine inflates the RTT) and resumes
// on a new one; a
// publisher that dials keeps its connection through outageAccept (below
// the idle timeout of both sides), QUIC retransmitting what was lost.
// A recorder that accepts does not join a publisher's new connection to
// the recording its old one fed (each accepted session is recorded on its
// own), so the accept role covers the outage a connection survives.
const (
	idleDial     = time.Second
	outageDial   = 3 * time.Second
	idleAccept   = 3 * time.Second
	outageAccept = 500 * time.Millisecond
)

// rig is what the cases share: one live demo broadcast per packaging,
// published from the start of the test. Each case has a publisher of its
// own (a server the recorder dials, or a session that dials the
// recorder's listener) that serves them, so that its log is the case's.
type rig struct {
	cert tls.Certificate
	pin  string
	bcs  map[string]*model.Broadcast
	pub  []*model.Broadcast // every broadcast of bcs, in the order published
}

func newRig(t *testing.T) *rig {
	t.Helper()
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	cert, pin, err := subscribe.SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r := &rig{cert: cert, pin: pin, bcs: map[string]*model.Broadcast{}}
	for _, p := range packagings {
		b := model.NewBroadcast(broadcastName(p))
		// Like a relay keeping ~20 s of past groups (the one-frame audio
		// groups; video keeps all a test run makes, up to model.MaxLag):
		// a resume on a loaded machine may take seconds, and what it
		// missed must still be there.
		go demo.Publish(ctx, b, demo.Options{Realtime: true, Container: catalog.ContainerKind(p), KeepGroups: 1000})
		r.bcs[b.Name()] = b
		r.pub = append(r.pub, b)
		m := model.NewBroadcast(broadcastName(p + "-" + pathMarkers))
		go demo.Publish(ctx, m, demo.Options{Realtime: true, Container: catalog.ContainerKind(p), KeepGroups: 1000, Markers: true})
		r.bcs[m.Name()] = m
		r.pub = append(r.pub, m)
	}
	return r
}

// serve starts a publisher server of every broadcast of the rig, logging
// to log, until the returned stop is called.
func (r *rig) serve(t *testing.T, log *slog.Logger) (addr string, stop func()) {
	t.Helper()
	srv, err := subscribe.Listen("127.0.0.1:0", subscribe.ServerOptions{
		Certificates: []tls.Certificate{r.cert}, Publish: r.pub, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := srv.Accept(ctx); err != nil {
				return
			}
		}
	}()
	return srv.Addr().String(), func() {
		cancel()
		srv.Close()
		<-done
	}
}

func broadcastName(packaging string) string { return "matrix-" + packaging }

// clock returns where broadcast name's own clock is: the timestamp of the
// newest media frame published on any of its tracks. It is not the time
// since the rig started it: a publisher starved of the CPU falls behind
// the wall clock and catches up later (under the race detector and two
// busy loops, the CMAF broadcasts, whose fragments cost most to write,
// ran 128-153 s behind it), and a check that placed a rebased file by the
// wall clock looked for it that far from where it was.
func (r *rig) clock(name string) time.Duration {
	var newest int64
	for _, tn := range r.bcs[name].TrackNames() {
		tr, err := r.bcs[name].Track(tn)
		if err != nil {
			continue
		}
		g := tr.NewestGroup()
		// The newest group may be empty yet (just opened) or a
		// marker's: the one before it then says where the clock is.
		for range 3 {
			if g == nil {
				break
			}
			frames, _, _ := g.Frames(0)
			for _, f := range frames {
				if !f.Marker {
					newest = max(newest, f.Timestamp)
				}
			}
			if g.Sequence() == 0 {
				break
			}
			g = tr.Group(g.Sequence() - 1)
		}
	}
	return time.Duration(newest) * time.Microsecond
}

// result is what one case recorded.
type result struct {
	file     string
	info     []record.FileInfo
	tracks   []record.TrackInfo
	logs     *logBuffer    // the recorder's
	pubLogs  *logBuffer    // the publisher's (the server it dials, or the session that dials it)
	began    time.Duration // the broadcast's own clock when the recording began (rig.clock)
	outage   time.Duration // 0: none
	dropped  int64         // datagrams the outage dropped
	duration time.Duration // asked of the recorder
	err      error         // connecting or recording failed
}

// record runs case c: connects as c.role says over c.transport, records
// c.packaging's broadcast over c.version into c.container, cutting the
// network mid-way on the resume path.
func (r *rig) record(t *testing.T, c matrixCase) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res := result{file: filepath.Join(t.TempDir(), "rec."+c.container), logs: &logBuffer{}, pubLogs: &logBuffer{}, duration: recordFor}
	log := slog.New(slog.NewTextHandler(res.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pubLog := slog.New(slog.NewTextHandler(res.pubLogs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	idle := time.Duration(0)
	if c.path == pathResume {
		res.duration = recordForResume
		res.outage, idle = outageDial, idleDial
		if c.role == roleAccept {
			res.outage, idle = outageAccept, idleAccept
		}
	}
	opts := subscribe.Options{TLSFingerprint: r.pin, Versions: []string{c.version.name}, Logger: log,
		Reconnect: subscribe.Backoff{Min: 20 * time.Millisecond, Max: 100 * time.Millisecond}}
	if idle > 0 {
		opts.KeepAlive, opts.IdleTimeout = 100*time.Millisecond, idle
	}
	var src record.Source
	var px *udpproxy.Proxy
	via := func(addr string) string {
		if c.path != pathResume {
			return addr
		}
		var err error
		if px, err = udpproxy.New(addr); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { px.Close() })
		return px.Addr()
	}
	switch c.role {
	case roleDial:
		addr, stop := r.serve(t, pubLog)
		defer stop()
		sess, err := subscribe.Dial(ctx, scheme(c.transport)+"://"+via(addr)+"/", opts)
		if err != nil {
			res.err = fmt.Errorf("dial: %w", err)
			return res
		}
		defer sess.Close()
		src = record.SessionSource(sess)
	case roleAccept:
		so := subscribe.ServerOptions{Certificates: []tls.Certificate{r.cert}, Logger: log,
			DisableWebTransport: c.transport != transportWebTransport}
		if idle > 0 {
			so.KeepAlive, so.IdleTimeout = 100*time.Millisecond, idle
		}
		srv, err := subscribe.Listen("127.0.0.1:0", so)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		po := opts
		po.Role, po.Logger = subscribe.RolePublisher, pubLog
		pub, err := subscribe.Dial(ctx, scheme(c.transport)+"://"+via(srv.Addr().String())+"/", po)
		if err != nil {
			res.err = fmt.Errorf("publisher dial: %w", err)
			return res
		}
		defer pub.Close()
		if err := pub.Publish(r.bcs[c.broadcast()]); err != nil {
			t.Fatal(err)
		}
		sess, err := srv.Accept(ctx)
		if err != nil {
			res.err = fmt.Errorf("accept: %w", err)
			return res
		}
		defer sess.Close()
		src = record.SessionSource(sess)
	}
	out, err := record.Files(res.file, record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ro := record.Options{Output: out, Duration: res.duration, KeepTimestamps: true, Logger: log,
		// A frame a loaded machine delays is not what this test is
		// about: the audio a resume fetches back (one FETCH per one-frame
		// group) may take seconds on a busy machine.
		Delay: 4 * time.Second, MaxDelay: 8 * time.Second}
	if res.outage > 0 {
		var cut atomic.Bool
		ro.ProgressInterval = 50 * time.Millisecond
		ro.Progress = func(s record.Stats) {
			// Cut once a second of media is in the file.
			if s.Frames >= 70 && cut.CompareAndSwap(false, true) {
				px.Blackhole(true)
				time.AfterFunc(res.outage, func() { px.Blackhole(false) })
			}
		}
	}
	rec, err := record.New(ro)
	if err != nil {
		t.Fatal(err)
	}
	res.began = r.clock(c.broadcast())
	if err := rec.Record(ctx, src, c.broadcast()); err != nil {
		res.err = fmt.Errorf("record: %w", err)
	}
	res.info, res.tracks = rec.Files(), rec.Tracks()
	if dir := os.Getenv("MOQ_E2E_KEEP"); dir != "" {
		// Keep the file for a look: MOQ_E2E_KEEP=/tmp/m go test ./e2e
		if b, err := os.ReadFile(res.file); err == nil {
			os.WriteFile(filepath.Join(dir, strings.ReplaceAll(c.String(), "/", "_")+"."+c.container), b, 0o644)
		}
		os.WriteFile(filepath.Join(dir, strings.ReplaceAll(c.String(), "/", "_")+".log"), []byte(res.logs.String()), 0o644)
		os.WriteFile(filepath.Join(dir, strings.ReplaceAll(c.String(), "/", "_")+".pub.log"), []byte(res.pubLogs.String()), 0o644)
	}
	if px != nil {
		res.dropped = px.Dropped()
	}
	return res
}

// tails returns the last lines of the recorder's log and of the
// publisher's, for failure messages: what each side saw of a stall.
func (res result) tails() string {
	return "log:\n" + res.logs.tail() + "publisher log:\n" + res.pubLogs.tail()
}

// logBuffer collects a case's log.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// tail returns the last lines of the log, for failure messages, without
// the groups dropped once a track had closed: they come in bursts of
// hundreds at the end of a recording and would hide what went before.
func (l *logBuffer) tail() string {
	var b strings.Builder
	dropped := 0
	for line := range strings.Lines(l.String()) {
		if strings.Contains(line, `msg="moq: group dropped"`) && strings.Contains(line, "model: closed") {
			dropped++
			continue
		}
		b.WriteString(line)
	}
	if dropped > 0 {
		fmt.Fprintf(&b, "(and %d groups dropped because their track had closed)\n", dropped)
	}
	s := b.String()
	if len(s) > 6000 {
		s = "...\n" + s[len(s)-6000:]
	}
	return s
}
