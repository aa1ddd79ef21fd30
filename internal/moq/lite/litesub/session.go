package litesub

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
)

// SessionProtocolViolation is the session close code of a protocol
// violation in the lite-06 registry (which newer relays use on every lite
// version).
const SessionProtocolViolation = 0x3

// Config is how moq-lite's subscriber speaks: set once, before its first
// connection, and shared by them.
type Config struct {
	Log *slog.Logger
	// RequestTimeout bounds a TRACK's answer and our GOAWAY's sending.
	RequestTimeout time.Duration
	// MaxLatency is what SUBSCRIBE asks as its max latency.
	MaxLatency time.Duration
}

// Session is moq-lite's subscriber on one connection: its Config and the
// subscriptions the connection's group streams name, by subscribe id (in
// the core's routing table, as moq-transport's by track alias).
type Session struct {
	*Config
	c session.Conn

	mu     sync.Mutex
	nextID uint64
	routes session.Routes
}

// route registers sub under the next subscribe id.
func (s *Session) route(sub *session.Sub) {
	s.mu.Lock()
	sub.ID = s.nextID
	s.nextID++
	s.mu.Unlock()
	s.routes.Add(sub.ID, sub)
}

// Unroute removes sub: group streams naming its id are refused from now
// on.
func (s *Session) Unroute(sub *session.Sub) { s.routes.Remove(sub.ID, sub) }

// isReset reports whether err is a stream reset by the peer.
func (s *Session) isReset(err error) bool {
	_, ok := s.c.ResetCode(err)
	return ok
}

// Conn is moq-lite on one connection (C, which negotiated V) with its
// subscriber's state S: the subscriber core's view of it
// (session.Family). Values of one connection compare equal.
type Conn struct {
	S *Session
	C session.Conn
	V *wire.Version
}

// NewConn is moq-lite on c, which negotiated v (nil: moq-lite-05, as a
// bare test transport), speaking as cfg says.
func NewConn(cfg *Config, c session.Conn, v *wire.Version) Conn {
	if v == nil {
		v = wire.Lite05
	}
	return Conn{S: &Session{Config: cfg, c: c}, C: c, V: v}
}

// Routed returns the subscriptions whose group streams the connection
// routes now (by subscribe id).
func (c Conn) Routed() []*session.Sub { return c.S.routes.Routed() }

// Route registers sub under its own id, as a subscription attempt would
// (tests).
func (c Conn) Route(sub *session.Sub) { c.S.routes.Add(sub.ID, sub) }

func (c Conn) Context() context.Context { return c.C.Context() }
func (c Conn) Cause() error             { return c.C.Cause() }
func (c Conn) Gone(err error) bool      { return c.C.Gone(err) }
func (c Conn) Silence() time.Duration   { return c.C.Silence() }
func (c Conn) FrameRanges() bool        { return c.V.FrameRange }
func (c Conn) GroupRanges() bool        { return false } // a moq-lite FETCH is one group
func (c Conn) Fetches() bool            { return c.V.Fetch }

// SpanSubscribes: lite-05+ SUBSCRIBE has Group Start and End, and
// SUBSCRIBE_START names the first group delivered.
func (c Conn) SpanSubscribes() bool { return c.V.SubscribeRange && !c.V.SubscribeOK }
func (c Conn) VersionName() string  { return c.V.Name }

// Loss returns why the connection is gone: its cause once it is there,
// otherwise err (the stream error that reported the loss first).
func (c Conn) Loss(err error) error { return session.Loss(c.C, err) }

// RetryReset: a moq-lite reset means what its code says, in either
// numbering.
func (c Conn) RetryReset(err error) session.Reset { return c.S.ResetMeaning(err, c.V.FrameRange) }

// SessionEndingReset reports whether err is a reset of a stream whose
// peer is closing or draining its session.
func (c Conn) SessionEndingReset(err error) bool {
	switch c.S.ResetMeaning(err, c.V.FrameRange) {
	case session.ResetSessionClosed, session.ResetGoingAway:
		return true
	}
	return false
}

// ResetMeaning returns the meaning of the stream reset err carries
// (session.ResetUnknown when it carries none), in lite-06's numbering when
// renumbered.
func (s *Session) ResetMeaning(err error, renumbered bool) session.Reset {
	code, ok := s.c.ResetCode(err)
	if !ok {
		return session.ResetUnknown
	}
	return CodeMeaning(code, renumbered)
}

// ProtocolErr marks what the moq-lite codec rejects (malformed bytes, a
// length beyond its limits) as session.ErrProtocol; other errors pass
// unchanged.
func ProtocolErr(err error) error {
	if errors.Is(err, wire.ErrDecode) || errors.Is(err, wire.ErrTooLarge) {
		return fmt.Errorf("%w: %w", session.ErrProtocol, err)
	}
	return err
}

// ReadMessage reads one length-prefixed message into m.
func ReadMessage(r *bufio.Reader, m interface{ Decode([]byte) error }) error {
	body, err := wire.ReadMessage(r, 0)
	if err == nil {
		err = m.Decode(body)
	}
	return ProtocolErr(err)
}

// versioned decodes a message laid out for a version, so that
// ReadMessage takes per-version messages too.
type versioned struct {
	m interface {
		DecodeFor([]byte, *wire.Version) error
	}
	v *wire.Version
}

func (x versioned) Decode(body []byte) error { return x.m.DecodeFor(body, x.v) }

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}
