package ietfsub

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/session"
)

// idleConn is a connection that is up and opens nothing: the control
// messages under test need no stream.
type idleConn struct{ ctx context.Context }

func (c idleConn) OpenBidi(context.Context) (session.Stream, error) {
	return nil, errors.New("no streams")
}
func (c idleConn) OpenUni(context.Context) (session.SendStream, error) {
	return nil, errors.New("no streams")
}
func (c idleConn) AcceptBidi(context.Context) (session.Stream, error) {
	return nil, errors.New("no streams")
}
func (c idleConn) AcceptUni(context.Context) (session.RecvStream, error) {
	return nil, errors.New("no streams")
}
func (c idleConn) Close(uint64, string)               {}
func (c idleConn) Context() context.Context           { return c.ctx }
func (c idleConn) WebTransport() bool                 { return false }
func (c idleConn) Cause() error                       { return nil }
func (c idleConn) Gone(error) bool                    { return false }
func (c idleConn) ResetCode(error) (uint64, bool)     { return 0, false }
func (c idleConn) Silence() time.Duration             { return time.Second }
func (c idleConn) CloseOf(error) (uint64, bool, bool) { return 0, false, false }

// encoded returns message m of type typ as the control loop reads it: its
// type and body.
func encoded(t *testing.T, typ uint64, m ietf.Message, v ietf.Version) (uint64, []byte) {
	t.Helper()
	got, body, err := ietf.ReadMessage(bufio.NewReader(bytes.NewReader(ietf.Append(nil, typ, m, v))), v)
	if err != nil || got != typ {
		t.Fatalf("message %#x does not read back: %#x, %v", typ, got, err)
	}
	return got, body
}

func newTestSession(v ietf.Version, goingAway error) *Session {
	return New(idleConn{context.Background()}, Config{Draft: v, Client: true, Log: slog.New(slog.DiscardHandler), Window: 4, GoingAway: goingAway})
}

func TestAControlMessageTheSessionCannotTakeIsAProtocolViolation(t *testing.T) {
	cases := []struct {
		name string
		v    ietf.Version
		typ  uint64
		m    ietf.Message
	}{
		{"a response on draft 17's setup stream, where only GOAWAY may follow", ietf.Draft17, ietf.TypeMaxRequestID, &ietf.RequestID{ID: 8}},
		{"a message type no draft defines", ietf.Draft14, 0x7f, &ietf.RequestID{ID: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestSession(tc.v, nil)
			if err := s.control(encoded(t, tc.typ, tc.m, tc.v)); !errors.Is(err, session.ErrProtocol) {
				t.Fatalf("control(%#x) = %v, want ErrProtocol", tc.typ, err)
			}
		})
	}
}

func TestMaxRequestIDFreesTheRequestsThePeersLimitHeldBack(t *testing.T) {
	s := newTestSession(ietf.Draft14, nil)
	if next, limit := s.RequestIDs(); next != 0 || limit != 0 {
		t.Fatalf("a fresh client session: next %d, limit %d; want 0, 0 (no MAX_REQUEST_ID yet)", next, limit)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.newRequest(ctx, false); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a request beyond the limit: %v, want it to wait", err)
	}
	if err := s.control(encoded(t, ietf.TypeMaxRequestID, &ietf.RequestID{ID: 4}, ietf.Draft14)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []uint64{0, 2} {
		req, err := s.newRequest(context.Background(), false)
		if err != nil || req.id != want {
			t.Fatalf("request after MAX_REQUEST_ID 4: id %v, %v; want %d", req, err, want)
		}
	}
}

func TestGoAwayEndsNewRequestsAndMovesWithinItsTimeout(t *testing.T) {
	goingAway := errors.New("peer sent GOAWAY")
	cases := []struct {
		name    string
		timeout uint64
		grace   time.Duration
	}{
		{"no timeout: the session's own grace", 0, goAwayGrace},
		{"a shorter timeout asked", 250, 250 * time.Millisecond},
		{"a longer timeout asked: the session's own grace", 5000, goAwayGrace},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestSession(ietf.Draft17, goingAway)
			var uri string
			var grace time.Duration
			s.onGoAway = func(u string, g time.Duration) { uri, grace = u, g }
			if err := s.control(encoded(t, ietf.TypeGoAway, &ietf.GoAway{URI: "moqt://next/", Timeout: tc.timeout}, ietf.Draft17)); err != nil {
				t.Fatal(err)
			}
			if uri != "moqt://next/" || grace != tc.grace {
				t.Errorf("moved to %q within %v, want moqt://next/ within %v", uri, grace, tc.grace)
			}
			if _, err := s.newRequest(context.Background(), false); !errors.Is(err, goingAway) {
				t.Errorf("a request after GOAWAY: %v, want the going-away error", err)
			}
		})
	}
}
