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
// more, so that its outage sits in the middle and the groups it missed are
// fetched back well before the end (the outage lasts until the recorder
// noticed it: 3.1 s and more, see outageDialMax).
const (
	recordFor       = 2500 * time.Millisecond
	recordForResume = 8 * time.Second
)

// The outage of a resume case. A recorder that dials keeps the idle
// timeout a user gets (subscribe's default, 3 s), and the network stays
// cut until it found its connection lost (at most outageDialMax): the
// outage cuts the connection however long a loaded machine takes to
// notice, with no idle timeout shortened for it. (It was 1 s with a fixed
// 3 s outage: under the race detector and a CPU hog the round trip
// through the proxy took 1.4-2.8 s, quic-go took no RTT sample from ACKs
// slower than its probe timeout and so kept the idle timeout at 1 s, and
// the answer to the recorder's SETUP could not come in time, three
// connections in a row.) A publisher that dials keeps its connection
// through outageAccept (below the idle timeout of both sides), QUIC
// retransmitting what was lost. A recorder that accepts does not join a
// publisher's new connection to the recording its old one fed (each
// accepted session is recorded on its own), so the accept role covers the
// outage a connection survives.
const (
	outageDialMax = 10 * time.Second
	idleAccept    = 3 * time.Second
	outageAccept  = 500 * time.Millisecond
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

// options returns the subscribe options of case c's recorder (and of its
// publisher, in the accept role) and the outage its resume path cuts the
// network for (0: until the recorder found its connection lost).
func (r *rig) options(c matrixCase, log *slog.Logger) (opts subscribe.Options, outage time.Duration) {
	opts = subscribe.Options{TLSFingerprint: r.pin, Versions: []string{c.version.name}, Logger: log,
		Reconnect: subscribe.Backoff{Min: 20 * time.Millisecond, Max: 100 * time.Millisecond}}
	if c.path == pathResume {
		// A keep-alive every 100 ms: a dialled connection is found
		// silent 100 ms after its idle timeout, not a second after it,
		// so the outage is no longer than it needs to be.
		opts.KeepAlive = 100 * time.Millisecond
		if c.role == roleAccept {
			opts.IdleTimeout, outage = idleAccept, outageAccept
		}
	}
	return opts, outage
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
	if c.path == pathResume {
		res.duration = recordForResume
	}
	opts, outage := r.options(c, log)
	res.outage = outage
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
		so.KeepAlive, so.IdleTimeout = opts.KeepAlive, opts.IdleTimeout
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
	if c.path == pathResume {
		var cut atomic.Bool
		lost := res.logs.watch("connection lost, reconnecting")
		ro.ProgressInterval = 50 * time.Millisecond
		ro.Progress = func(s record.Stats) {
			// Cut once a second of media is in the file.
			if s.Frames < 70 || !cut.CompareAndSwap(false, true) {
				return
			}
			px.Blackhole(true)
			if res.outage > 0 {
				time.AfterFunc(res.outage, func() { px.Blackhole(false) })
				return
			}
			go func() {
				defer px.Blackhole(false)
				t := time.NewTimer(outageDialMax)
				defer t.Stop()
				select {
				case <-lost:
				case <-t.C:
				case <-ctx.Done():
				}
			}()
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
	// watched is what watch waits for; seen is closed once a line held it.
	watched []byte
	seen    chan struct{}
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.watched != nil && bytes.Contains(p, l.watched) {
		close(l.seen)
		l.watched = nil
	}
	return l.buf.Write(p)
}

// watch returns a channel closed once a line holding s is written (a slog
// handler writes each line whole); one watch at a time.
func (l *logBuffer) watch(s string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = make(chan struct{})
	if bytes.Contains(l.buf.Bytes(), []byte(s)) {
		close(l.seen)
	} else {
		l.watched = []byte(s)
	}
	return l.seen
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Budgets of tail: the start of a log kept (its connection, first
// subscriptions and the join's backfill) and its end.
const (
	logHead = 3000
	logTail = 6000
)

// tail returns the start and the last lines of the log, for failure
// messages, without the groups dropped once a track had closed: they come
// in bursts of hundreds at the end of a recording and would hide what went
// before. The start is kept: a file whose audio begins late is explained
// by its join (when each track was subscribed, whether the backfill
// reached the video's keyframe), which a long resume pushes out of the
// end (hs26's moq-transport-19 resume case, whose last 6,000 characters
// were all the resume's).
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
	if len(s) <= logHead+logTail {
		return s
	}
	head := s[:logHead]
	if i := strings.LastIndexByte(head, '\n'); i >= 0 {
		head = head[:i+1] // whole lines
	}
	return head + "...\n" + s[len(s)-logTail:]
}
