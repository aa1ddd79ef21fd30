package subscribe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/moq/lite/litesub"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/moq/transport"
	"github.com/moq-export/moq-export/model"
)

func TestResolveBroadcastFollowsURLRules(t *testing.T) {
	tests := []struct {
		base, ref, want string
		ok              bool
	}{
		{"room/transcode", "./source", "room/source", true},
		{"room/transcode", "", "room/transcode", true},
		{"room/transcode", ".", "room", true},
		{"room/transcode", "../other", "other", true},
		{"room/transcode", "../../x", "", false},
		{"bbb", "..", "", false},
		{"room/transcode", "/abs/path", "abs/path", true},
		{"a/b/c", "d", "a/b/d", true},
	}
	for _, tt := range tests {
		got, ok := ResolveBroadcast(tt.base, tt.ref)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ResolveBroadcast(%q, %q) = %q %v, want %q %v", tt.base, tt.ref, got, ok, tt.want, tt.ok)
		}
	}
}

func TestPathPrefixMatchesOnSegmentBoundaries(t *testing.T) {
	tests := []struct {
		path, prefix, rest string
		ok                 bool
	}{
		{"foo", "foo", "", true},
		{"foo/x", "foo", "x", true},
		{"foobar", "foo", "", false},
		{"/foo//x/", "foo/", "x", true},
		{"x", "", "x", true},
	}
	for _, tt := range tests {
		rest, ok := stripPrefix(tt.path, tt.prefix)
		if rest != tt.rest || ok != tt.ok {
			t.Errorf("stripPrefix(%q, %q) = %q %v", tt.path, tt.prefix, rest, ok)
		}
	}
	if joinPath("room", "") != "room" || joinPath("", "b") != "b" || joinPath("a/", "/b") != "a/b" {
		t.Fatal("joinPath")
	}
}

func TestURLsAreRedactedAndMappedToTransports(t *testing.T) {
	tests := []struct {
		url, scheme, hostport, setupPath, root string
	}{
		{"moql://relay:4443/anon?jwt=SECRET", "moql", "relay:4443", "/anon?jwt=SECRET", "anon"},
		{"moqt://relay/anon", "moql", "relay:443", "/anon", "anon"},
		{"https://relay.example.com/a/b?jwt=SECRET", "https", "relay.example.com:443", "/a/b?jwt=SECRET", "a/b"},
		{"http://localhost:4443/", "http", "localhost:4443", "/", ""},
	}
	for _, tt := range tests {
		tg, err := transport.ParseTarget(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		if tg.Scheme != tt.scheme || tg.HostPort != tt.hostport || tg.SetupPath != tt.setupPath || rootPath(tg) != tt.root {
			t.Errorf("%s: %+v root %q", tt.url, tg, rootPath(tg))
		}
		if r := tg.Redacted(); strings.Contains(r, "SECRET") {
			t.Errorf("redacted URL leaks the token: %s", r)
		}
	}
	if _, err := transport.ParseTarget("ftp://x/"); !errors.Is(err, ErrUnsupportedURL) {
		t.Fatalf("ftp: %v", err)
	}
	ue := &url.Error{Op: "Get", URL: "http://h/x?jwt=SECRET", Err: io.EOF}
	if strings.Contains(transport.RedactError(ue), "SECRET") {
		t.Fatal("redactError leaks the token")
	}
}

func TestDialErrorNeverShowsTheToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	// Nothing listens on this port (QUIC handshake times out or is refused).
	_, err := Dial(ctx, "https://127.0.0.1:1/x?jwt=SECRET", Options{TLSInsecure: true, Logger: testLogger(t), Reconnect: Backoff{Disabled: true}})
	if err == nil {
		t.Fatal("dial succeeded")
	}
	if strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("error leaks the token: %v", err)
	}
}

// TestWebTransportURLWithoutPortDialsPort443: the package doc promises port
// 443 for every scheme; WebTransport dialled the URL's host without a port.
func TestWebTransportURLWithoutPortDialsPort443(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := Dial(ctx, "https://127.0.0.1/anon?jwt=secret", Options{Logger: testLogger(t), TLSInsecure: true})
	if err == nil {
		t.Fatal("dial to a closed port succeeded")
	}
	if strings.Contains(err.Error(), "missing port") {
		t.Fatalf("dialled without the default port: %v", err)
	}
}

func TestFingerprintsAreParsedLeniently(t *testing.T) {
	_, pin, err := SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := hex.DecodeString(pin)
	colons := strings.ToUpper(strings.Join(splitEvery(pin, 2), ":"))
	for _, s := range []string{pin, colons, " " + pin + "\n"} {
		got, err := transport.ParseFingerprint(s)
		if err != nil || string(got) != string(b) {
			t.Errorf("%q: %v", s, err)
		}
	}
	if _, err := transport.ParseFingerprint("abcd"); err == nil {
		t.Fatal("short fingerprint accepted")
	}
}

func splitEvery(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// TestSessionEndingFromTwoPlacesAtOnceDoesNotPanic: Close and the
// connection loop may end a session at the same moment.
func TestSessionEndingFromTwoPlacesAtOnceDoesNotPanic(t *testing.T) {
	for range 500 {
		s := newSession(Options{Logger: testLogger(t)}, "")
		var wg sync.WaitGroup
		for _, err := range []error{ErrClosed, errors.New("connection lost")} {
			wg.Go(func() { s.finish(err) })
		}
		wg.Wait()
		select {
		case <-s.Done():
		default:
			t.Fatal("Done not closed")
		}
		if s.Err() == nil {
			t.Fatal("no error after the end")
		}
	}
}

// recordedRecv is a recvStream over fixed bytes that records CancelRead.
type recordedRecv struct {
	io.Reader
	cancelled atomic.Int64 // code+1, 0 while not cancelled
}

func (r *recordedRecv) CancelRead(code uint64)          { r.cancelled.Store(int64(code) + 1) }
func (r *recordedRecv) SetReadDeadline(time.Time) error { return nil }

// TestGroupArrivingAfterTheDrainIsRefused: once a finished subscription has
// waited for its group streams, a group stream that still arrives for it is
// refused (13) instead of joining a wait that is already over.
func TestGroupArrivingAfterTheDrainIsRefused(t *testing.T) {
	s := newSession(Options{Logger: testLogger(t)}, "")
	defer s.cancel()
	rb := &remoteBroadcast{s: s, path: "b", b: model.NewBroadcast("b")}
	rt := &session.Remote{Host: rb, Broadcast: rb.path, Name: "v", Track: model.NewTrack("v")}
	l := s.newLite(&lateContextConn{ctx: context.Background()}, litesub.Negotiated{}, nil)
	sub := testSubscription(l, rt, 4)
	l.Route(sub)
	sub.Drain(context.Background(), 0, 0, true)

	h := wire.Group{SubscribeID: sub.ID, Sequence: 0}
	str := &recordedRecv{Reader: bytes.NewReader(h.Append(nil))}
	l.ReadGroup(str, bufio.NewReader(str), session.OrderTicket{})
	if got := str.cancelled.Load() - 1; got != CodeNotFound {
		t.Fatalf("late group stream: CancelRead code %d, want %d", got, CodeNotFound)
	}
}

// TestTrackOfAnEndedBroadcastEndsCleanly: a track still waiting for the
// catalog to learn its container ends without an error when its broadcast
// ends cleanly (an "ended" announcement), like a subscribed one.
func TestTrackOfAnEndedBroadcastEndsCleanly(t *testing.T) {
	for range 20 {
		s := newSession(Options{Logger: testLogger(t)}, "")
		ctx, cancel := context.WithCancelCause(s.ctx)
		cancel(errStopped)
		rb := &remoteBroadcast{s: s, path: "b", b: model.NewBroadcast("b"), ctx: ctx, cancel: cancel,
			tracks: map[string]*session.Remote{}, activated: make(chan struct{})}
		rt := &session.Remote{Host: rb, Broadcast: rb.path, Name: "v", Track: model.NewTrack("v"), Exit: func() {}}
		c := rt.Track.Subscribe(0)
		rb.run(rt, "")
		ev, ok := c.Next()
		if !ok || ev.Kind != model.EventEnd || ev.Err != nil {
			t.Fatalf("track of an ended broadcast: %+v %v", ev, ok)
		}
		s.Close()
	}
}

func TestRedactURLHidesEveryCredential(t *testing.T) {
	for _, raw := range []string{
		"https://relay.example/anon?jwt=SECRET1",
		"https://relay.example/anon?api_key=SECRET1&room=a",
		"https://relay.example/anon?X-Amz-Signature=SECRET1",
		"https://relay.example/anon?sessionToken=SECRET1",
		"https://user:SECRET1@relay.example/anon",
		"moql://relay/anon?password=SECRET1",
		"https://relay.example/%zz?jwt=SECRET1", // does not parse
	} {
		got := RedactURL(raw)
		if strings.Contains(got, "SECRET1") {
			t.Errorf("RedactURL(%q) = %q leaks the credential", raw, got)
		}
		if !strings.Contains(got, "relay") {
			t.Errorf("RedactURL(%q) = %q lost the host", raw, got)
		}
	}
	if got := RedactURL("https://relay.example/anon?room=a"); got != "https://relay.example/anon?room=a" {
		t.Errorf("a URL without credentials changed: %q", got)
	}
}

func TestLivenessDefaultsAndKeepAliveBelowHalfTheIdleTimeout(t *testing.T) {
	for _, tc := range []struct {
		keepAlive, idle         time.Duration
		wantKeepAlive, wantIdle time.Duration
	}{
		{0, 0, time.Second, 3 * time.Second},
		{5 * time.Second, 0, 1500 * time.Millisecond, 3 * time.Second},
		{0, 30 * time.Second, time.Second, 30 * time.Second},
		{200 * time.Millisecond, 800 * time.Millisecond, 200 * time.Millisecond, 800 * time.Millisecond},
	} {
		k, i := liveness(tc.keepAlive, tc.idle)
		if k != tc.wantKeepAlive || i != tc.wantIdle {
			t.Errorf("liveness(%v, %v) = %v, %v; want %v, %v", tc.keepAlive, tc.idle, k, i, tc.wantKeepAlive, tc.wantIdle)
		}
		qc := quicConfig(tc.keepAlive, tc.idle)
		if qc.KeepAlivePeriod != tc.wantKeepAlive || qc.MaxIdleTimeout != tc.wantIdle {
			t.Errorf("quicConfig(%v, %v): keep-alive %v, idle %v", tc.keepAlive, tc.idle, qc.KeepAlivePeriod, qc.MaxIdleTimeout)
		}
	}
	// The defaults keep a connection alive under a relay's 10 s idle
	// timeout (moq-relay 0.17): a PING well before it, every time.
	const relayIdleTimeout = 10 * time.Second
	if k, _ := liveness(0, 0); k > relayIdleTimeout/4 {
		t.Errorf("default keep-alive %v: not well inside a relay's %v idle timeout", k, relayIdleTimeout)
	}
}

// sessionGoneRecv is a group stream whose Read, after its header, blocks
// like a WebTransport stream the peer's session closed under: CancelRead
// does not wake it, only a read deadline does.
type sessionGoneRecv struct {
	header   []byte
	deadline chan struct{}
	once     sync.Once
}

func (r *sessionGoneRecv) Read(p []byte) (int, error) {
	if len(r.header) > 0 {
		n := copy(p, r.header)
		r.header = r.header[n:]
		return n, nil
	}
	<-r.deadline
	return 0, os.ErrDeadlineExceeded
}
func (r *sessionGoneRecv) CancelRead(uint64) {}
func (r *sessionGoneRecv) SetReadDeadline(time.Time) error {
	r.once.Do(func() { close(r.deadline) })
	return nil
}

// TestGroupReadEndsWithItsSubscriptionEvenWhenCancelReadDoesNotWakeIt: a
// WebTransport stream whose session the peer closed waits in Read for our
// side of the session to close, which Session.Close does only after its
// group readers returned; ending the subscription must still end the read.
func TestGroupReadEndsWithItsSubscriptionEvenWhenCancelReadDoesNotWakeIt(t *testing.T) {
	s := newSession(Options{Logger: testLogger(t)}, "")
	defer s.cancel()
	rb := &remoteBroadcast{s: s, path: "b", b: model.NewBroadcast("b")}
	rt := &session.Remote{Host: rb, Broadcast: rb.path, Name: "v", Track: model.NewTrack("v")}
	l := s.newLite(&lateContextConn{ctx: context.Background()}, litesub.Negotiated{}, nil)
	sub := testSubscription(l, rt, 4)
	sub.MarkStarted()
	l.Route(sub)
	h := wire.Group{SubscribeID: sub.ID, Sequence: 0}
	str := &sessionGoneRecv{header: h.Append(nil), deadline: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.ReadGroup(str, bufio.NewReader(str), session.OrderTicket{})
	}()
	// Before or after the reader reaches the frames: either way the read
	// must end.
	sub.Cancel(errors.New("subscription over"))
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the group read outlived its subscription")
	}
}

// TestStopReadingEndsAReadCancelReadDoesNotWake: session.StopReading, which every
// stop of a blocked reader (announce feeds, session streams, moq-transport
// requests and subgroups) goes through, ends a read that CancelRead alone
// leaves blocked (a WebTransport stream the peer's session closed under).
func TestStopReadingEndsAReadCancelReadDoesNotWake(t *testing.T) {
	str := &sessionGoneRecv{deadline: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := str.Read(make([]byte, 8))
		done <- err
	}()
	session.StopReading(str, CodeCancel)
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read ended with %v, want the deadline", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the read outlived stopReading")
	}
}

// testSubscription is a moq-lite subscription of rt on l with id,
// timescale 1000, as a subscription attempt makes it (not registered).
func testSubscription(l *litesub.Link, rt *session.Remote, id uint64) *session.Sub {
	ctx, cancel := context.WithCancelCause(context.Background())
	w := l.NewSubscription(ctx, rt)
	sub, _ := w.NewSubscription(ctx, cancel, 1000, nil)
	sub.ID, sub.Router = id, w
	return sub
}
