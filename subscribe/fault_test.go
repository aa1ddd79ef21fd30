package subscribe

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/testutil/udpproxy"
	"github.com/moq-export/moq-export/internal/varint"
	"github.com/moq-export/moq-export/model"
	"github.com/quic-go/quic-go"
)

// scriptedPublisher is a hand-driven moq-lite-05 publisher on raw QUIC, so
// tests can reset streams and drop connections exactly where they want.
type scriptedPublisher struct {
	t    *testing.T
	ln   *quic.Listener
	pin  string
	subs chan scriptedSub
	wg   sync.WaitGroup
	// refuseTracks is how many TRACK requests to come are reset (13).
	refuseTracks atomic.Int32
}

type scriptedSub struct {
	conn *quic.Conn
	id   uint64
	str  *quic.Stream
}

func newScriptedPublisher(t *testing.T) *scriptedPublisher {
	cert, pin, err := SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	// An own socket and transport, closed at the end: a quic.ListenAddr
	// listener keeps its transport running when its last connection ends
	// by idle timeout after the listener closed.
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	tr := &quic.Transport{Conn: udp}
	ln, err := tr.Listen(&tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{wire.Lite05.ALPN()}}, quicConfig(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	p := &scriptedPublisher{t: t, ln: ln, pin: pin, subs: make(chan scriptedSub, 16)}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.serve(c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); tr.Close(); udp.Close(); p.wg.Wait() })
	return p
}

// serve answers TRACK with timescale 1e6 and hands SUBSCRIBEs to the test;
// announce requests get broadcast "b" active.
func (p *scriptedPublisher) serve(c *quic.Conn) {
	ctx := c.Context()
	if u, err := c.OpenUniStream(); err == nil {
		var s wire.Setup
		u.Write(s.Append([]byte{wire.UniSetup}))
		u.Close()
	}
	go func() {
		for {
			u, err := c.AcceptUniStream(ctx)
			if err != nil {
				return
			}
			u.CancelRead(0)
		}
	}()
	for {
		str, err := c.AcceptStream(ctx)
		if err != nil {
			return
		}
		r := bufio.NewReader(str)
		typ, _ := varint.Read(r)
		body, err := wire.ReadMessage(r, 0)
		if err != nil {
			str.CancelWrite(5)
			continue
		}
		switch typ {
		case wire.StreamAnnounce:
			ok := wire.AnnounceOK{HopID: 7, ActiveCount: 1}
			a := wire.Announce{Status: wire.StatusActive, Suffix: "b"}
			str.Write(a.Append(ok.Append(nil)))
		case wire.StreamTrack:
			if p.refuseTracks.Add(-1) >= 0 {
				str.CancelWrite(CodeNotFound)
				str.CancelRead(CodeNotFound)
				continue
			}
			p.refuseTracks.Store(0)
			info := wire.TrackInfo{Timescale: 1_000_000, MaxLatency: 5000}
			str.Write(info.Append(nil))
			str.Close()
		case wire.StreamSubscribe:
			var m wire.Subscribe
			m.Decode(body)
			p.subs <- scriptedSub{conn: c, id: m.ID, str: str}
		default:
			// FETCH and the rest: not served.
			str.CancelWrite(CodeNotFound)
			str.CancelRead(CodeNotFound)
		}
	}
}

func (p *scriptedPublisher) url() string {
	return fmt.Sprintf("moql://%s/?jwt=x", p.ln.Addr())
}

// group opens a group stream and writes frames with legacy payloads; it
// returns the stream for the test to finish or reset.
func (sub scriptedSub) group(t *testing.T, seq uint64, ts ...int64) *quic.SendStream {
	s, err := sub.conn.OpenUniStream()
	if err != nil {
		t.Fatal(err)
	}
	h := wire.Group{SubscribeID: sub.id, Sequence: seq}
	b := h.Append([]byte{wire.UniGroup})
	var last int64
	for _, x := range ts {
		b = wire.AppendFrame(b, x-last, hang.AppendLegacy(nil, x, []byte(fmt.Sprintf("frame@%d", x))))
		last = x
	}
	if _, err := s.Write(b); err != nil {
		t.Fatal(err)
	}
	return s
}

// logBuffer is a concurrency-safe log sink for assertions.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	// gate, when set, sees each line before it is written and may hold
	// it: the goroutine that logs waits there (setGate).
	gate func(line []byte)
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	gate := l.gate
	l.mu.Unlock()
	if gate != nil {
		gate(p)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// setGate sets l's gate (nil: none).
func (l *logBuffer) setGate(gate func(line []byte)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gate = gate
}

// logger returns a debug-level logger writing to l.
func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// ok sends SUBSCRIBE_OK naming group first, as a publisher does before
// its first group.
func (sub scriptedSub) ok(t *testing.T, first uint64) {
	t.Helper()
	m := wire.SubscribeResponse{Type: wire.RespOK, Group: first}
	if _, err := sub.str.Write(m.Append(nil)); err != nil {
		t.Fatal(err)
	}
}

func nextSub(t *testing.T, p *scriptedPublisher) scriptedSub {
	t.Helper()
	select {
	case s := <-p.subs:
		return s
	case <-time.After(10 * time.Second):
		t.Fatalf("no SUBSCRIBE arrived")
		return scriptedSub{}
	}
}

// collect reads frames (and discontinuities) of c until want events.
func collect(t *testing.T, ctx context.Context, c *model.Consumer, want int) []model.Event {
	t.Helper()
	evs, err := readEvents(ctx, c, func(e []model.Event) bool { return len(e) >= want })
	if err != nil {
		t.Fatalf("%v: got %+v", err, evs)
	}
	return evs
}

// dialScripted dials p with opts (pin and legacy container filled in) and
// subscribes to track "video" of broadcast "b"; the session is closed at
// the end of the test.
func dialScripted(t *testing.T, ctx context.Context, p *scriptedPublisher, opts Options) (*Session, *model.Track) {
	t.Helper()
	return dialScriptedAt(t, ctx, p, p.url(), opts)
}

// dialScriptedAt is dialScripted through url (a proxy in front of p).
func dialScriptedAt(t *testing.T, ctx context.Context, p *scriptedPublisher, url string, opts Options) (*Session, *model.Track) {
	t.Helper()
	opts.TLSFingerprint = p.pin
	opts.container = func(string, string) string { return "legacy" }
	s, err := Dial(ctx, url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tr, err := s.Broadcast("b").Track("video")
	if err != nil {
		t.Fatal(err)
	}
	return s, tr
}

func TestGroupResetIsReportedAndLaterGroupsStillArrive(t *testing.T) {
	checkGoroutines(t)
	p := newScriptedPublisher(t)
	logs := &logBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := Dial(ctx, p.url(), Options{TLSFingerprint: p.pin, Logger: logs.logger(),
		container: func(string, string) string { return "legacy" }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tr, err := s.Broadcast("b").Track("video")
	if err != nil {
		t.Fatal(err)
	}
	sub := nextSub(t, p)
	sub.ok(t, 0)
	g := sub.group(t, 0, 0, 33_000)
	g.Close()
	// A missing group is given up once a newer one is 50ms ahead.
	c := tr.Subscribe(50 * time.Millisecond)
	defer func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	}()
	collect(t, ctx, c, 2)
	g = sub.group(t, 1, 66_000)
	if evs := collect(t, ctx, c, 1); evs[0].Frame.Timestamp != 66_000 {
		t.Fatalf("group 1: %+v", evs)
	}
	g.CancelWrite(CodeOld)
	g = sub.group(t, 2, 100_000, 133_000)
	g.Close()
	evs := collect(t, ctx, c, 2)
	last := evs[len(evs)-1]
	if last.Group != 2 || last.Frame.Timestamp != 133_000 || string(last.Frame.Payload) != "frame@133000" {
		t.Fatalf("after the reset got %+v", evs)
	}
	waitFor(t, "the reset in the log", func() bool {
		return bytes.Contains([]byte(logs.String()), []byte("code 2 (old)"))
	})
	if s.Err() != nil {
		t.Fatalf("session ended: %v", s.Err())
	}
}

// lateContextConn reports the loss of its connection through Context only
// some time after its streams failed. quic-go and webtransport-go fail the
// streams first and cancel the context afterwards; under load the gap
// between the two grows, and this makes it wide on purpose.
type lateContextConn struct {
	conn
	ctx context.Context
}

func (c *lateContextConn) Context() context.Context { return c.ctx }

func lateContext(lag time.Duration) func(conn) conn {
	return func(c conn) conn {
		ctx, cancel := context.WithCancelCause(context.Background())
		context.AfterFunc(c.Context(), func() {
			time.AfterFunc(lag, func() { cancel(context.Cause(c.Context())) })
		})
		return &lateContextConn{conn: c, ctx: ctx}
	}
}

func TestSessionDroppedMidGroupReconnectsAndMarksDiscontinuity(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(conn) conn
	}{
		{"loss seen by the context", nil},
		{"loss seen by the streams first", lateContext(300 * time.Millisecond)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkGoroutines(t)
			p := newScriptedPublisher(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := dial(ctx, p.url(), Options{TLSFingerprint: p.pin, Logger: testLogger(t),
				Reconnect: Backoff{Min: 10 * time.Millisecond, Max: 50 * time.Millisecond},
				container: func(string, string) string { return "legacy" }}, tc.wrap)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ann := expectAnnounced(t, ctx, s, "b")
			defer ann.Close()
			tr, err := s.Broadcast("b").Track("video")
			if err != nil {
				t.Fatal(err)
			}
			c := tr.Subscribe(time.Hour)
			sub := nextSub(t, p)
			sub.ok(t, 0)
			g := sub.group(t, 0, 0, 33_000)
			g.Close()
			before := collect(t, ctx, c, 2)
			if got := frameCount(before); got != 2 {
				t.Fatalf("before the drop: %d frames", got)
			}
			// Half a group, then the connection goes away once the
			// subscriber has the half.
			sub.group(t, 1, 66_000)
			if half := collect(t, ctx, c, 1); half[0].Kind != model.EventFrame || half[0].Frame.Timestamp != 66_000 {
				t.Fatalf("half group: %+v", half)
			}
			sub.conn.CloseWithError(0, "publisher restarting")

			// The subscription resumes on a new connection; the publisher's
			// timeline restarted.
			sub2 := nextSub(t, p)
			sub2.ok(t, 0)
			if sub2.conn == sub.conn {
				t.Fatal("resubscribed on the dead connection")
			}
			g = sub2.group(t, 0, 5_000, 38_000)
			g.Close()
			after, err := readEvents(ctx, c, func(e []model.Event) bool { return e[len(e)-1].Frame.Timestamp == 38_000 })
			if err != nil {
				t.Fatalf("%v: %+v", err, after)
			}
			// after: the discontinuity, then the two frames of the new
			// timeline (the half group was read before the drop).
			var disc int
			var tail []model.Event
			for _, e := range after {
				switch e.Kind {
				case model.EventDiscontinuity:
					disc++
					tail = nil
				case model.EventFrame:
					tail = append(tail, e)
				case model.EventEnd:
					t.Fatalf("track ended: %v", e.Err)
				}
			}
			if disc != 1 || len(tail) != 2 || tail[0].Frame.Timestamp != 5_000 || tail[1].Frame.Timestamp != 38_000 {
				t.Fatalf("after the drop: %d discontinuities, then %+v (all: %+v)", disc, tail, after)
			}
			if after[0].Kind != model.EventDiscontinuity {
				t.Fatalf("events before the discontinuity: %+v", after)
			}
			// "b" stayed announced across the reconnect: the feed neither
			// ended nor reported it gone.
			done, stop := context.WithCancel(ctx)
			stop()
			if a, err := ann.Next(done); !errors.Is(err, context.Canceled) {
				t.Fatalf("announcement feed after the reconnect: %+v, %v", a, err)
			}
		})
	}
}

// TestPublisherRestartOnSamePortResumesSubscription stops the whole server
// and starts a new one on the same port: the client reconnects, resumes,
// and the muxer side sees one discontinuity between the two runs.
func TestPublisherRestartOnSamePortResumesSubscription(t *testing.T) {
	checkGoroutines(t)
	cert, pin, err := SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	listen := func(addr string) *Server {
		srv, err := Listen(addr, ServerOptions{Certificates: []tls.Certificate{cert}, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := listen("127.0.0.1:0")
	addr := srv.Addr().String()
	client, err := Dial(ctx, "moql://"+addr+"/", Options{TLSFingerprint: pin, Logger: testLogger(t),
		Reconnect: Backoff{Min: 20 * time.Millisecond, Max: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	// serve publishes the aac broadcast on srv's next session and returns
	// once the client's aac subscription is served (its start group is
	// fixed): the publisher starts a subscriber at the newest group, so
	// frames written earlier would be skipped.
	serve := func(srv *Server) *sampleBroadcast {
		peer, err := srv.Accept(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sb := newSampleBroadcast(t, "live", "aac")
		if err := peer.Publish(sb.b); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the aac subscription", func() bool { return peer.pub.servingTrack("live", "aac") >= 1 })
		return sb
	}
	b := client.Broadcast("live")
	tr, err := b.Track("aac")
	if err != nil {
		t.Fatal(err)
	}
	tr.SetKeepGroups(100000)
	c := tr.Subscribe(time.Hour)
	serve(srv).fill(t, 0, false)
	aac := mustSample(t, "aac")
	n := len(aac.Frames)
	if first := collect(t, ctx, c, 1); first[0].Kind != model.EventFrame || first[0].Frame.Timestamp >= 10_000_000 {
		t.Fatalf("first run: %+v", first)
	}
	srv.Close()
	srv = listen(addr)
	defer srv.Close()
	sb := serve(srv)

	// The second run's timeline starts at 10s. Group streams travel in
	// parallel, and a consumer starts a new timeline at the first group to
	// arrive: write the first group, wait until it was read after the
	// discontinuity, then the rest, which is then read in order.
	const offset = 10_000_000
	var sawDisc bool
	var after []model.Event
	var evs []model.Event
	read := func(want int) {
		t.Helper()
		got, err := readEvents(ctx, c, func(e []model.Event) bool {
			last := e[len(e)-1]
			if last.Kind == model.EventDiscontinuity {
				sawDisc = true
			} else if sawDisc && last.Kind == model.EventFrame && last.Frame.Timestamp >= offset {
				after = append(after, last)
			}
			return len(after) >= want
		})
		evs = append(evs, got...)
		if err != nil {
			t.Fatalf("%v (discontinuity seen: %v, frames after: %d)", err, sawDisc, len(after))
		}
	}
	sb.fillFrames(t, "aac", offset, 0, 1)
	read(1)
	sb.fillFrames(t, "aac", offset, 1, n)
	read(n)
	for _, e := range evs {
		if e.Kind == model.EventEnd {
			t.Fatalf("track ended: %v", e.Err)
		}
	}
	if !sawDisc {
		t.Fatal("no discontinuity between the runs")
	}
	if n := client.Reconnects(); n != 1 {
		t.Fatalf("Reconnects() = %d after one server restart, want 1", n)
	}
	// Every frame of the second run, in order, after the discontinuity.
	compareFrames(t, "aac after the restart", after, expectedEvents(aac, offset))
	if client.Err() != nil {
		t.Fatal(client.Err())
	}
}

// TestAClosingServerSetsUpNoNewSession: while Server.Close closes its
// sessions, a client that dials the server gets no session. The listener
// took new connections until the sessions were closed, and a client that
// reconnected at once (a publisher restarted on its port) landed on the
// server going away: a session closed right after its SETUP, one reconnect
// more (TestPublisherRestartOnSamePortResumesSubscription failed once
// under -race with Reconnects() = 2; with Close slowed by 300 ms, 5).
func TestAClosingServerSetsUpNoNewSession(t *testing.T) {
	checkGoroutines(t)
	cert, pin, err := SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Listen("127.0.0.1:0", ServerOptions{Certificates: []tls.Certificate{cert}, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, err := Dial(ctx, "moql://"+addr+"/", Options{TLSFingerprint: pin, Logger: testLogger(t), Reconnect: Backoff{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if _, err := srv.Accept(ctx); err != nil {
		t.Fatal(err)
	}
	srv.sessionsClosed = func() {
		dctx, dcancel := context.WithTimeout(ctx, time.Second)
		defer dcancel()
		if s, err := Dial(dctx, "moql://"+addr+"/", Options{TLSFingerprint: pin, Logger: testLogger(t), Reconnect: Backoff{Disabled: true}}); err == nil {
			s.Close()
			t.Errorf("a session was set up with a server closing its sessions")
		}
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.Done():
	case <-ctx.Done():
		t.Fatal("the session the server had is still up after Close")
	}
}

// TestTrackRequestedBeforeTheBroadcastExistsWaitsForItsAnnouncement: a
// recorder may start before the publisher; an unroutable refusal (30) is
// retried once the broadcast is announced.
func TestTrackRequestedBeforeTheBroadcastExistsWaitsForItsAnnouncement(t *testing.T) {
	checkGoroutines(t)
	srv, pin := startServer(t, "127.0.0.1:0")
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	logs := &logBuffer{}
	client, peer := dialAndAccept(t, ctx, srv, "moql://"+srv.Addr().String()+"/", Options{TLSFingerprint: pin,
		Logger:    logs.logger(),
		container: func(string, string) string { return "legacy" }})
	defer client.Close()
	tr, err := client.Broadcast("late").Track("v")
	if err != nil {
		t.Fatal(err)
	}
	c := tr.Subscribe(time.Hour)
	waitFor(t, "the first TRACK to be refused", func() bool {
		return strings.Contains(logs.String(), "broadcast not routable yet")
	})
	pb := model.NewBroadcast("late")
	src := pb.CreateTrack("v")
	if err := peer.Publish(pb); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the subscription", func() bool { return peer.pub.servingTrack("late", "v") == 1 })
	g, _ := src.AppendGroup()
	g.WriteFrame(model.Frame{Timestamp: 7, Payload: []byte("late frame")})
	evs := collect(t, ctx, c, 1)
	if evs[0].Kind != model.EventFrame || string(evs[0].Frame.Payload) != "late frame" || evs[0].Frame.Timestamp != 7 {
		t.Fatalf("%+v", evs)
	}
}

// TestLiveTrackRetriesRefusalsAfterEveryReconnect: a live track retries a
// refused resubscription for a bounded window after each reconnect; a
// refusal long ago, after which the track resumed, does not count against a
// later one.
func TestLiveTrackRetriesRefusalsAfterEveryReconnect(t *testing.T) {
	checkGoroutines(t)
	p := newScriptedPublisher(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	opts := Options{TLSFingerprint: p.pin, Logger: testLogger(t),
		Reconnect: Backoff{Min: 10 * time.Millisecond, Max: 20 * time.Millisecond},
		container: func(string, string) string { return "legacy" }}
	opts.resumeGrace = 100 * time.Millisecond
	s, err := Dial(ctx, p.url(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tr, err := s.Broadcast("b").Track("video")
	if err != nil {
		t.Fatal(err)
	}
	c := tr.Subscribe(time.Hour)
	sub := nextSub(t, p)
	sub.ok(t, 0)
	sub.group(t, 0, 0).Close()
	collect(t, ctx, c, 1)
	for i := range 2 {
		// The first TRACK after the reconnect is refused, the retry is
		// served.
		p.refuseTracks.Store(1)
		sub.conn.CloseWithError(0, "publisher restarting")
		sub = nextSub(t, p)
		sub.ok(t, 0)
		sub.group(t, 0, int64(i+1)).Close()
		evs, err := readEvents(ctx, c, func(e []model.Event) bool {
			return e[len(e)-1].Kind == model.EventFrame && e[len(e)-1].Frame.Timestamp == int64(i+1)
		})
		if err != nil || evs[len(evs)-1].Kind == model.EventEnd {
			t.Fatalf("reconnect %d: %v, %+v", i+1, err, evs)
		}
		// Longer than the resume window.
		time.Sleep(300 * time.Millisecond)
	}
}

// TestMalformedSubscribeResponseEndsTrackWithErrProtocol: a subscribe
// response the wire sheet does not know (type 7) and an oversized one are
// protocol violations, reported as ErrProtocol.
func TestMalformedSubscribeResponseEndsTrackWithErrProtocol(t *testing.T) {
	for _, tc := range []struct {
		name string
		resp []byte
	}{
		{"unknown type", []byte{0x07, 0x01, 0x00}},
		{"too large", varint.Append([]byte{wire.RespOK}, wire.MaxMessage+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkGoroutines(t)
			p := newScriptedPublisher(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := Dial(ctx, p.url(), Options{TLSFingerprint: p.pin, Logger: testLogger(t),
				container: func(string, string) string { return "legacy" }})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			tr, err := s.Broadcast("b").Track("video")
			if err != nil {
				t.Fatal(err)
			}
			c := tr.Subscribe(time.Hour)
			sub := nextSub(t, p)
			sub.str.Write(tc.resp)
			evs, err := readEvents(ctx, c, func([]model.Event) bool { return false })
			if err != nil {
				t.Fatal(err)
			}
			if end := evs[len(evs)-1]; !errors.Is(end.Err, ErrProtocol) {
				t.Fatalf("track ended with %v, want ErrProtocol", end.Err)
			}
		})
	}
}

// TestGroupLeftOpenAfterSubscriptionEndIsStoppedAndTruncated: a publisher
// that ends a subscription but never finishes one of its group streams does
// not hold the track open: after the drain grace the stream gets
// STOP_SENDING, the model group is closed as truncated and the track ends.
func TestGroupLeftOpenAfterSubscriptionEndIsStoppedAndTruncated(t *testing.T) {
	checkGoroutines(t)
	p := newScriptedPublisher(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	opts := Options{TLSFingerprint: p.pin, Logger: testLogger(t),
		container: func(string, string) string { return "legacy" }}
	opts.drainGrace = 300 * time.Millisecond
	s, err := Dial(ctx, p.url(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tr, err := s.Broadcast("b").Track("video")
	if err != nil {
		t.Fatal(err)
	}
	// Both groups are inspected after they were read: keep them (a
	// subscribed track keeps only the newest read group).
	tr.SetKeepGroups(8)
	c := tr.Subscribe(time.Hour)
	sub := nextSub(t, p)
	sub.ok(t, 0)
	g0 := sub.group(t, 0, 0, 33_000)
	g0.Close()
	g1 := sub.group(t, 1, 66_000) // never finished
	collect(t, ctx, c, 3)
	end := wire.SubscribeResponse{Type: wire.RespEnd, Group: 2}
	sub.str.Write(end.Append(nil))
	sub.str.Close()

	begin := time.Now()
	evs, err := readEvents(ctx, c, func([]model.Event) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; last.Kind != model.EventEnd || last.Err != nil {
		t.Fatalf("track ended with %+v, want a clean end", last)
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Fatalf("track ended %v after the subscription end", d)
	}
	frames, finished, gerr := tr.Group(1).Frames(0)
	if !finished || !errors.Is(gerr, ErrTruncated) || len(frames) != 1 {
		t.Fatalf("group 1: %d frames, finished %v, err %v; want 1 frame, truncated", len(frames), finished, gerr)
	}
	if _, _, gerr := tr.Group(0).Frames(0); gerr != nil {
		t.Fatalf("group 0: %v", gerr)
	}
	// The publisher learns that nobody reads group 1 any more.
	waitFor(t, "STOP_SENDING on the open group", func() bool {
		_, err := g1.Write([]byte{0})
		se, ok := errors.AsType[*quic.StreamError](err)
		return ok && se.Remote && se.ErrorCode == CodeCancel
	})
}

// TestGroupsLandingBeforeSubscribeOKAreReadFromTheStartGroup: group
// streams travel apart from the subscribe stream, so groups 1 and 0 can be
// read before SUBSCRIBE_OK. They wait for it, and the reader starts at the
// group it names instead of at the first stream that landed (which lost
// group 0 for good).
func TestGroupsLandingBeforeSubscribeOKAreReadFromTheStartGroup(t *testing.T) {
	checkGoroutines(t)
	p := newScriptedPublisher(t)
	logs := &logBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, tr := dialScripted(t, ctx, p, Options{Logger: logs.logger()})
	c := tr.Subscribe(time.Hour)
	sub := nextSub(t, p)
	sub.group(t, 1, 66_000).Close()
	sub.group(t, 0, 0, 33_000).Close()
	waitFor(t, "both groups to wait for SUBSCRIBE_OK", func() bool {
		return strings.Count(logs.String(), "group landed before SUBSCRIBE_OK") == 2
	})
	sub.ok(t, 0)
	evs := collect(t, ctx, c, 3)
	for i, want := range []int64{0, 33_000, 66_000} {
		if evs[i].Kind != model.EventFrame || evs[i].Frame.Timestamp != want {
			t.Fatalf("event %d: %+v, want the frame at %d (all: %+v)", i, evs[i], want, evs)
		}
	}
}

// TestGroupsWithoutSubscribeOKAreReadAfterTheRequestTimeout: a peer that
// never sends SUBSCRIBE_OK still gets its groups read, once the request
// timeout passed, with a warning.
func TestGroupsWithoutSubscribeOKAreReadAfterTheRequestTimeout(t *testing.T) {
	checkGoroutines(t)
	p := newScriptedPublisher(t)
	logs := &logBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, tr := dialScripted(t, ctx, p, Options{Logger: logs.logger(), RequestTimeout: 200 * time.Millisecond})
	c := tr.Subscribe(time.Hour)
	sub := nextSub(t, p)
	sub.group(t, 0, 0, 33_000).Close()
	if evs := collect(t, ctx, c, 2); evs[1].Frame.Timestamp != 33_000 {
		t.Fatalf("%+v", evs)
	}
	if !strings.Contains(logs.String(), "no SUBSCRIBE_OK before the group streams") {
		t.Fatal("no warning about the missing SUBSCRIBE_OK")
	}
	// Later groups do not wait again.
	sub.group(t, 1, 66_000).Close()
	collect(t, ctx, c, 1)
	if n := strings.Count(logs.String(), "group landed before SUBSCRIBE_OK"); n != 1 {
		t.Fatalf("%d groups waited for SUBSCRIBE_OK, want 1", n)
	}
}

// TestVanishedPeerIsFoundByTheIdleTimeoutAndRedialledAtOnce: a network that
// drops everything (no CONNECTION_CLOSE reaches anyone) is found by the
// idle timeout, and the reconnect follows at once: the backoff here is an
// hour, so only an attempt made at once can succeed within the test.
//
// The idle timeout is 500 ms, so a stall of the loaded machine that long
// loses the redialled connection too (at load ~29 under -race with a CPU
// hog, 1 run in 100: a second loss 665 ms after the reconnect, no packet
// between). That loss is one more idle timeout, redialled at once as
// well: the test counts a reconnect per loss, each found by the idle
// timeout and made at once, and serves every SUBSCRIBE the redials make.
func TestVanishedPeerIsFoundByTheIdleTimeoutAndRedialledAtOnce(t *testing.T) {
	checkGoroutines(t)
	p := newScriptedPublisher(t)
	px, err := udpproxy.New(p.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	logs := &logBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, tr := dialScriptedAt(t, ctx, p, "moql://"+px.Addr()+"/?jwt=x", Options{Logger: logs.logger(),
		KeepAlive: 100 * time.Millisecond, IdleTimeout: 500 * time.Millisecond,
		Reconnect: Backoff{Min: time.Hour, Max: time.Hour}})
	defer func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	}()
	c := tr.Subscribe(time.Hour)
	sub := nextSub(t, p)
	sub.ok(t, 0)
	sub.group(t, 0, 0).Close()
	collect(t, ctx, c, 1)

	px.Blackhole(true)
	waitFor(t, "the loss to be noticed", func() bool { return strings.Contains(logs.String(), "connection lost") })
	px.Blackhole(false)
	// Each SUBSCRIBE of a redial gets its OK and the group: one, or one
	// more for each further loss.
	done := make(chan struct{})
	served := make(chan struct{})
	go func() {
		defer close(served)
		for {
			select {
			case <-done:
				return
			case sub := <-p.subs:
				m := wire.SubscribeResponse{Type: wire.RespOK, Group: 0}
				if _, err := sub.str.Write(m.Append(nil)); err != nil {
					continue // its connection is gone; the next redial subscribes again
				}
				g, err := sub.conn.OpenUniStream()
				if err != nil {
					continue
				}
				h := wire.Group{SubscribeID: sub.id, Sequence: 0}
				g.Write(wire.AppendFrame(h.Append([]byte{wire.UniGroup}), 1_000_000, hang.AppendLegacy(nil, 1_000_000, []byte("frame@1000000"))))
				g.Close()
			}
		}
	}()
	evs, err := readEvents(ctx, c, func(e []model.Event) bool {
		return e[len(e)-1].Kind == model.EventFrame && e[len(e)-1].Frame.Timestamp == 1_000_000
	})
	close(done)
	<-served
	if err != nil {
		t.Fatalf("%v: %+v", err, evs)
	}
	l := logs.String()
	losses := strings.Count(l, "connection lost")
	if n := s.Reconnects(); n < 1 || n != int64(losses) {
		t.Fatalf("%d reconnects for %d losses, want one for each", n, losses)
	}
	for _, line := range strings.Split(l, "\n") {
		if strings.Contains(line, "connection lost") && (!strings.Contains(line, "no recent network activity") || !strings.Contains(line, "retry_in=0s")) {
			t.Fatalf("a loss not found by the idle timeout, or not redialled at once: %s", line)
		}
	}
	if strings.Contains(l, "reconnect failed") {
		t.Fatalf("a reconnect failed:\n%s", l)
	}
}
