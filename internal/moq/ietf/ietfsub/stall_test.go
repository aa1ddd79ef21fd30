package ietfsub

import (
	"bufio"
	"context"
	"errors"
	"io"
	"maps"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/session"
)

// pipeStream is one end of a stream whose other end the test writes as a
// peer: net.Pipe keeps read deadlines as QUIC streams do. Cancelling or
// closing it is only noted: a WebTransport stream's Read is not woken by
// CancelRead either (see ietfpub's drain test), only by a deadline.
type pipeStream struct {
	net.Conn
	reset atomic.Bool
}

func (p *pipeStream) CancelRead(uint64)  { p.reset.Store(true) }
func (p *pipeStream) CancelWrite(uint64) { p.reset.Store(true) }
func (p *pipeStream) Close() error       { return nil }

// stalledPeer returns a stream whose peer wrote prefix and then went
// silent, holding the stream open, and the peer's end (closed by the
// test's end).
func stalledPeer(t *testing.T, prefix []byte) (*pipeStream, net.Conn) {
	t.Helper()
	ours, peer := net.Pipe()
	t.Cleanup(func() { peer.Close(); ours.Close() })
	go func() { _, _ = peer.Write(prefix) }()
	return &pipeStream{Conn: ours}, peer
}

// peerNamespaces lists the namespaces the peer published.
func peerNamespaces(s *Session) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.peerNS))
}

// shortMessageTimeout makes a message that began wait a test's length.
func shortMessageTimeout(t *testing.T) {
	old := messageTimeout
	messageTimeout = 300 * time.Millisecond
	t.Cleanup(func() { messageTimeout = old })
}

// endsWithin runs f and reports whether it returned within d; the
// goroutine of one that did not is left to the test's cleanup (the peer's
// end closed), which ends it.
func endsWithin(d time.Duration, f func()) bool {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// TestARequestStreamWhosePeerStallsMidMessageIsResetNotHeldForEver: a
// request stream the peer opened (PUBLISH_NAMESPACE on its own stream,
// drafts 17+) whose first message does not come whole within the message
// timeout is reset, and its goroutine ends; nothing is published. A
// PUBLISH_NAMESPACE that came whole lasts as long as its stream however
// quiet it is afterwards.
func TestARequestStreamWhosePeerStallsMidMessageIsResetNotHeldForEver(t *testing.T) {
	v := ietf.Draft22
	whole := ietf.Append(nil, ietf.TypePublishNamespace, &ietf.PublishNamespace{RequestID: 1, Namespace: "room/alice"}, v)
	cases := []struct {
		name   string
		prefix []byte
	}{
		{"the peer stops in the middle of PUBLISH_NAMESPACE", whole[:len(whole)/2]},
		{"the peer stops after the message type", whole[:1]},
		{"the peer opens the stream and sends nothing", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			shortMessageTimeout(t)
			s := newTestSession(v, nil)
			str, _ := stalledPeer(t, tc.prefix)
			if !endsWithin(5*time.Second, func() { s.HandleBidi(str) }) {
				t.Fatalf("the stream is still read 5 s after the peer stalled (message timeout %v)", messageTimeout)
			}
			if !str.reset.Load() {
				t.Error("the stalled stream was not reset")
			}
			if ns := peerNamespaces(s); len(ns) != 0 {
				t.Errorf("published %v from a message that never came whole", ns)
			}
		})
	}
	t.Run("a whole PUBLISH_NAMESPACE then silence stays published", func(t *testing.T) {
		shortMessageTimeout(t)
		s := newTestSession(v, nil)
		str, peer := stalledPeer(t, whole)
		done := make(chan struct{})
		go func() { defer close(done); s.HandleBidi(str) }()
		// REQUEST_OK comes back, then the peer says nothing for longer
		// than the message timeout.
		if _, _, err := ietf.ReadMessage(bufio.NewReader(peer), v); err != nil {
			t.Fatalf("no REQUEST_OK: %v", err)
		}
		time.Sleep(3 * messageTimeout)
		select {
		case <-done:
			t.Fatal("the namespace's stream was given up while it stayed open")
		default:
		}
		if ns := peerNamespaces(s); len(ns) != 1 || ns[0] != "room/alice" {
			t.Errorf("published %v, want [room/alice]", ns)
		}
		peer.Close() // the peer withdraws it
		<-done
		if ns := peerNamespaces(s); len(ns) != 0 {
			t.Errorf("still published after its stream ended: %v", ns)
		}
	})
}

// TestAControlStreamWhosePeerStallsMidMessageEndsTheSession: the control
// stream (drafts 14-16), or the peer's setup stream that carries its
// GOAWAY (drafts 17+), is quiet between messages for as long as the peer
// likes; a message that began and does not come whole within the message
// timeout ends the control loop with session.ErrTimeout (the session is
// then closed with CONTROL_MESSAGE_TIMEOUT), instead of holding the
// session's control, and its connection, for ever.
func TestAControlStreamWhosePeerStallsMidMessageEndsTheSession(t *testing.T) {
	cases := []struct {
		name string
		v    ietf.Version
		typ  uint64
		m    ietf.Message
		// took reports whether the whole message took effect.
		took func(s *Session) bool
	}{
		{"draft 14's control stream, PUBLISH_NAMESPACE", ietf.Draft14, ietf.TypePublishNamespace, &ietf.PublishNamespace{RequestID: 1, Namespace: "room/alice"},
			func(s *Session) bool { return slices.Equal(peerNamespaces(s), []string{"room/alice"}) }},
		{"draft 16's control stream, MAX_REQUEST_ID", ietf.Draft16, ietf.TypeMaxRequestID, &ietf.RequestID{ID: 40},
			func(s *Session) bool { _, limit := s.RequestIDs(); return limit == 40 }},
		{"draft 22's setup stream, GOAWAY", ietf.Draft22, ietf.TypeGoAway, &ietf.GoAway{URI: "https://relay.example/next"},
			func(s *Session) bool { s.mu.Lock(); defer s.mu.Unlock(); return s.goingOff }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			shortMessageTimeout(t)
			s := newTestSession(tc.v, nil)
			whole := ietf.Append(nil, tc.typ, tc.m, tc.v)
			// A whole message first, after a silence longer than the
			// message timeout: the quiet between messages is no stall.
			ours, peer := net.Pipe()
			t.Cleanup(func() { peer.Close(); ours.Close() })
			str := &pipeStream{Conn: ours}
			s.ctrl, s.ctrlIn, s.ctrlR = str, str, bufio.NewReader(str)
			if tc.v.ControlStream() {
				// Our answers (REQUEST_OK) go to the peer, which reads them.
				go func() { _, _ = io.Copy(io.Discard, peer) }()
			} else {
				s.ctrl = nil
			}
			errc := make(chan error, 1)
			go func() { errc <- s.ControlLoop() }()
			time.Sleep(2 * messageTimeout)
			if _, err := peer.Write(whole); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(5 * time.Second); !tc.took(s); {
				if time.Now().After(deadline) {
					t.Fatal("the whole message took no effect in 5 s")
				}
				select {
				case err := <-errc:
					t.Fatalf("the control loop ended with %v before the whole message took effect", err)
				case <-time.After(10 * time.Millisecond):
				}
			}
			// Then half a message, and silence.
			if _, err := peer.Write(whole[:len(whole)/2]); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			select {
			case err := <-errc:
				if !errors.Is(err, session.ErrTimeout) {
					t.Fatalf("ControlLoop ended with %v, want session.ErrTimeout", err)
				}
			case <-ctx.Done():
				t.Fatalf("the control loop still waits for the rest of a message 5 s after the peer stalled (message timeout %v)", messageTimeout)
			}
		})
	}
}
