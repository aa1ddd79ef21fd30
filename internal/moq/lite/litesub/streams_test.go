package litesub

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
)

// resetErr is a peer's stream reset, as the facade reports it.
type resetErr struct{ code uint64 }

func (e *resetErr) Error() string { return "reset" }

func testConfig() *Config {
	return &Config{Log: slog.New(slog.DiscardHandler), RequestTimeout: time.Second}
}

// fakeConn is a connection that only records how it was closed.
type fakeConn struct {
	session.Conn // nil: other calls panic
	mu           sync.Mutex
	closed       []uint64
}

func (c *fakeConn) Close(code uint64, _ string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = append(c.closed, code)
}
func (c *fakeConn) Context() context.Context { return context.Background() }
func (c *fakeConn) Gone(error) bool          { return false }
func (c *fakeConn) Cause() error             { return nil }

// ResetCode: a reset is a resetErr.
func (c *fakeConn) CloseOf(error) (uint64, bool, bool) { return 0, false, false }

func (c *fakeConn) ResetCode(err error) (uint64, bool) {
	if re, ok := errors.AsType[*resetErr](err); ok {
		return re.code, true
	}
	return 0, false
}

// stream is a peer's stream holding in, recording what this end does.
type stream struct {
	io.Reader
	out       bytes.Buffer
	cancelled []uint64 // CancelRead codes
	reset     []uint64 // CancelWrite codes
	finished  bool
}

func (s *stream) CancelRead(code uint64)          { s.cancelled = append(s.cancelled, code) }
func (s *stream) SetReadDeadline(time.Time) error { return nil }
func (s *stream) Write(p []byte) (int, error)     { return s.out.Write(p) }
func (s *stream) Close() error                    { s.finished = true; return nil }
func (s *stream) CancelWrite(code uint64)         { s.reset = append(s.reset, code) }

// TestGoAwayIsTakenOnceAndOnlyAsTheRulesAllow: a GOAWAY reaches the
// session when it keeps lite-06's rules; a client naming a URI, a URI
// over 8 KB, or one the session refuses (a second GOAWAY) closes the
// connection with PROTOCOL_VIOLATION instead.
func TestGoAwayIsTakenOnceAndOnlyAsTheRulesAllow(t *testing.T) {
	second := errors.New("second GOAWAY")
	for _, tc := range []struct {
		name     string
		uri      string
		client   bool // this end dialled: the peer is the server
		refuse   error
		taken    bool
		violated bool
	}{
		{"the server names a URI", "moql://elsewhere/", true, nil, true, false},
		{"an empty GOAWAY from a client", "", false, nil, true, false},
		{"a client names a URI", "moql://elsewhere/", false, nil, false, true},
		{"a URI over 8 KB", "moql://" + strings.Repeat("a", maxGoawayURI), true, nil, false, true},
		{"the session refuses a second one", "", true, second, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &fakeConn{}
			var got []string
			p := &Peer{Client: tc.client, GoAway: func(uri string) error {
				got = append(got, uri)
				return tc.refuse
			}}
			m := wire.Goaway{URI: tc.uri}
			str := &stream{Reader: bytes.NewReader(m.Append(nil))}
			NewConn(testConfig(), c, wire.Lite06).readGoAway(str, bufio.NewReader(str), p)
			if taken := len(got) == 1 && got[0] == tc.uri; taken != tc.taken {
				t.Errorf("the session got %q, want it taken: %v", got, tc.taken)
			}
			violated := len(c.closed) == 1 && c.closed[0] == SessionProtocolViolation
			if violated != tc.violated || len(c.closed) > 1 {
				t.Errorf("closed with %v, want a violation: %v", c.closed, tc.violated)
			}
			if !str.finished || !slices.Contains(str.cancelled, wire.CodeCancel) {
				t.Error("the GOAWAY stream was not ended on both sides")
			}
		})
	}
}

// TestAGroupStreamIsRefusedUnlessItsHeaderNamesARoutedSubscription: a
// group stream whose subscription is not routed (never was, or drained)
// is refused with NOT_FOUND, one whose header does not parse with DECODE,
// and one reset before its header is left alone.
func TestAGroupStreamIsRefusedUnlessItsHeaderNamesARoutedSubscription(t *testing.T) {
	h := wire.Group{SubscribeID: 7, Sequence: 0}
	for _, tc := range []struct {
		name   string
		in     io.Reader
		v      *wire.Version
		cancel []uint64
	}{
		{"no such subscription", bytes.NewReader(h.Append(nil)), wire.Lite05, []uint64{wire.CodeNotFound}},
		{"no such subscription on lite-06", bytes.NewReader(h.AppendFor(nil, wire.Lite06)), wire.Lite06, []uint64{wire.CodeNotFound}},
		{"a header cut short", bytes.NewReader([]byte{0x05, 0x07}), wire.Lite05, []uint64{wire.CodeDecode}},
		{"reset before its header", &failing{&resetErr{code: 0}}, wire.Lite05, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			str := &stream{Reader: tc.in}
			NewConn(testConfig(), &fakeConn{}, tc.v).ReadGroup(str, bufio.NewReader(str), session.OrderTicket{})
			if !slices.Equal(str.cancelled, tc.cancel) {
				t.Errorf("CancelRead codes %v, want %v", str.cancelled, tc.cancel)
			}
		})
	}
}

// failing is a reader that fails with err.
type failing struct{ err error }

func (f *failing) Read([]byte) (int, error) { return 0, f.err }
