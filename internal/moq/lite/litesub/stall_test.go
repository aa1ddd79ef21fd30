package litesub

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/moq/lite/litepub"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/varint"
)

// pipeStream is one end of a bidi stream whose other end the test writes
// as a peer: net.Pipe keeps read deadlines as QUIC streams do. Cancelling
// it is only noted: a WebTransport stream's Read is not woken by
// CancelRead either, only by a deadline.
type pipeStream struct {
	net.Conn
	mu    sync.Mutex
	codes []uint64 // CancelRead and CancelWrite codes
}

func (p *pipeStream) CancelRead(code uint64)  { p.note(code) }
func (p *pipeStream) CancelWrite(code uint64) { p.note(code) }
func (p *pipeStream) Close() error            { return nil }

func (p *pipeStream) note(code uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.codes = append(p.codes, code)
}

func (p *pipeStream) resetWith() []uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.codes)
}

// stalledPeer returns a stream whose peer wrote prefix and then went
// silent, holding the stream open, and the peer's end.
func stalledPeer(t *testing.T, prefix []byte) (*pipeStream, net.Conn) {
	t.Helper()
	ours, peer := net.Pipe()
	t.Cleanup(func() { peer.Close(); ours.Close() })
	go func() { _, _ = peer.Write(prefix) }()
	return &pipeStream{Conn: ours}, peer
}

// setMessageTimeout makes a request that began wait d, a test's length.
func setMessageTimeout(t *testing.T, d time.Duration) {
	old := messageTimeout
	messageTimeout = d
	t.Cleanup(func() { messageTimeout = old })
}

// endsWithin runs f and reports whether it returned within d; the
// goroutine of one that did not is left to the test's cleanup (the peer's
// end closed), which ends it.
func endsWithin(d time.Duration, f func()) bool {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// publishingPeer is a Peer whose requests go to a publisher of nothing,
// and which records the GOAWAYs the session took.
func publishingPeer(t *testing.T) (*Peer, func() []string) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var mu sync.Mutex
	var goaways []string
	p := &Peer{
		Client: true,
		Pub: &litepub.Publisher{Pubs: session.NewPublications(), Ctx: ctx, Log: slog.New(slog.DiscardHandler),
			AnnounceTimeout: time.Second},
		GoAway: func(uri string) error {
			mu.Lock()
			defer mu.Unlock()
			goaways = append(goaways, uri)
			return nil
		},
	}
	return p, func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(goaways) }
}

// TestARequestStreamWhosePeerStallsMidMessageIsResetNotHeldForEver: a bidi
// stream the peer opened whose type and request do not come whole within
// the message timeout is reset, and its goroutine ends, instead of holding
// both for as long as the connection stays up; nothing is served or taken
// from it. A request that came whole is served however slowly it came
// (within the timeout) and however large it is, and an ANNOUNCE stream
// lasts as long as the peer keeps it, however quiet it is afterwards.
func TestARequestStreamWhosePeerStallsMidMessageIsResetNotHeldForEver(t *testing.T) {
	v := wire.Lite06
	opened := func(typ uint64, m []byte) []byte { return append(varint.Append(nil, typ), m...) }
	sub := wire.Subscribe{ID: 1, Broadcast: "room/alice", Track: "video"}
	subscribe := opened(wire.StreamSubscribe, sub.AppendFor(nil, v))
	ann := wire.AnnounceRequest{Prefix: "room"}
	announce := opened(wire.StreamAnnounce, ann.AppendFor(nil, v))
	goaway := opened(wire.StreamGoaway, (&wire.Goaway{URI: "moql://elsewhere/"}).Append(nil))
	fetch := opened(wire.StreamFetch, (&wire.Fetch{Broadcast: "room/alice", Track: "video", Group: 3}).AppendFor(nil, v))
	big := wire.Subscribe{ID: 1, Broadcast: "room/alice", Track: strings.Repeat("v", 6000)}
	bigSubscribe := opened(wire.StreamSubscribe, big.AppendFor(nil, v))
	for _, tc := range []struct {
		name   string
		prefix []byte
	}{
		{"the peer opens the stream and sends nothing", nil},
		{"the peer stops after the stream's type", subscribe[:1]},
		{"the peer stops in the middle of SUBSCRIBE", subscribe[:len(subscribe)/2]},
		{"the peer stops in the middle of an ANNOUNCE request", announce[:len(announce)-1]},
		{"the peer stops in the middle of GOAWAY", goaway[:len(goaway)/2]},
		{"the peer stops in the middle of FETCH", fetch[:len(fetch)-2]},
		{"the peer stops in the middle of a SUBSCRIBE larger than a read buffer", bigSubscribe[:5000]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setMessageTimeout(t, 300*time.Millisecond)
			p, goaways := publishingPeer(t)
			str, _ := stalledPeer(t, tc.prefix)
			c := NewConn(testConfig(), &fakeConn{}, v)
			if !endsWithin(5*time.Second, func() { c.HandleBidi(context.Background(), str, p) }) {
				t.Fatalf("the stream is still read 5 s after the peer stalled (message timeout %v)", messageTimeout)
			}
			if codes := str.resetWith(); !slices.Contains(codes, wire.CodeCancel) {
				t.Errorf("the stalled stream was reset with %v, want %d (cancel)", codes, wire.CodeCancel)
			}
			if g := goaways(); len(g) != 0 {
				t.Errorf("took GOAWAY %q from a message that never came whole", g)
			}
		})
	}
	t.Run("a SUBSCRIBE larger than a read buffer, sent in two halves, is served", func(t *testing.T) {
		// A timeout far above the pause: a loaded machine may stretch
		// the pause, and the request must still count as whole in time.
		setMessageTimeout(t, 5*time.Second)
		p, _ := publishingPeer(t)
		whole := bigSubscribe
		ours, peer := net.Pipe()
		t.Cleanup(func() { peer.Close(); ours.Close() })
		str := &pipeStream{Conn: ours}
		go func() {
			_, _ = peer.Write(whole[:len(whole)/2])
			time.Sleep(50 * time.Millisecond)
			_, _ = peer.Write(whole[len(whole)/2:])
		}()
		c := NewConn(testConfig(), &fakeConn{}, v)
		if !endsWithin(10*time.Second, func() { c.HandleBidi(context.Background(), str, p) }) {
			t.Fatal("a SUBSCRIBE of a broadcast not published was not answered in 10 s")
		}
		// Nothing is published: the request was read and refused as
		// unroutable, not given up as stalled.
		if codes, want := str.resetWith(), wire.StreamCode(v, wire.CodeUnroutable); !slices.Contains(codes, want) || slices.Contains(codes, wire.CodeCancel) {
			t.Errorf("the SUBSCRIBE's stream was reset with %v, want %d (unroutable)", codes, want)
		}
	})
	t.Run("a whole ANNOUNCE request then silence stays served", func(t *testing.T) {
		// Long enough that the request, written at once, is whole in
		// time on a loaded machine too.
		setMessageTimeout(t, time.Second)
		p, _ := publishingPeer(t)
		str, peer := stalledPeer(t, announce)
		c := NewConn(testConfig(), &fakeConn{}, v)
		done := make(chan struct{})
		go func() { defer close(done); c.HandleBidi(context.Background(), str, p) }()
		// ANNOUNCE_OK comes back, then the peer says nothing for longer
		// than the message timeout.
		body, err := wire.ReadMessage(bufio.NewReader(peer), 0)
		if err != nil {
			t.Fatalf("no ANNOUNCE_OK: %v", err)
		}
		var ok wire.AnnounceOK
		if err := ok.Decode(body); err != nil {
			t.Fatalf("ANNOUNCE_OK: %v", err)
		}
		time.Sleep(5 * messageTimeout / 2)
		select {
		case <-done:
			t.Fatal("the announce stream was given up while the peer kept it open")
		default:
		}
		if codes := str.resetWith(); len(codes) != 0 {
			t.Errorf("the announce stream was reset with %v", codes)
		}
		peer.Close() // the peer ends it
		<-done
	})
}
