package subscribe

import (
	"context"
	"errors"
	"time"

	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/moq/transport"
	"github.com/moq-export/moq-export/internal/moq/transport/alpn"
)

// The session code's view of a connection: the transport's (raw QUIC or
// WebTransport, package internal/moq/transport) with what was negotiated
// on it.

type (
	recvStream = transport.RecvStream
	sendStream = transport.SendStream
	bidiStream = transport.Stream
)

type conn interface {
	OpenBidi(ctx context.Context) (bidiStream, error)
	OpenUni(ctx context.Context) (sendStream, error)
	AcceptBidi(ctx context.Context) (bidiStream, error)
	AcceptUni(ctx context.Context) (recvStream, error)
	Close(code uint64, reason string)
	// Context is done when the connection is gone; its cause says why.
	Context() context.Context
	// WebTransport is true for a WebTransport session (no SETUP Path).
	WebTransport() bool
	// Silence is how long the connection takes, as it stands now, to
	// find that its peer went silent (session.Family.Silence).
	Silence() time.Duration
}

// netConn is a transport connection and what the session negotiated on
// it.
type netConn struct {
	transport.Conn
	// choice is the family the negotiated ALPN or WebTransport protocol
	// hands the connection to, and the token (and the version it pins);
	// the family's own negotiation settles the rest (proto.go).
	choice alpn.Choice
	// replay is a bidi stream already accepted and read by the legacy
	// SETUP, returned (its bytes replayed) by the next AcceptBidi, before
	// anything else accepts: the handshake of the session it chose.
	replay bidiStream
	// keepAlive and idle are what the connection was made with.
	keepAlive, idle time.Duration
	// handshake is how long a dialled connection took to be made (its
	// QUIC handshake, and WebTransport's CONNECT): one round trip of the
	// path or more.
	handshake time.Duration
}

// newNetConn is c, made with the keep-alive and idle timeout that
// liveness makes of keepAlive and idle.
func newNetConn(c transport.Conn, keepAlive, idle time.Duration) *netConn {
	keepAlive, idle = liveness(keepAlive, idle)
	return &netConn{Conn: c, keepAlive: keepAlive, idle: idle}
}

// Silence is how long the connection takes to find a silent peer, as its
// RTT estimate stands now (transport.SilenceTimeout).
func (c *netConn) Silence() time.Duration {
	return transport.SilenceTimeout(c.Conn, c.keepAlive, c.idle)
}

func (c *netConn) AcceptBidi(ctx context.Context) (bidiStream, error) {
	if r := c.replay; r != nil {
		c.replay = nil
		return r, nil
	}
	return c.Conn.AcceptBidi(ctx)
}

// moqErrors makes the transport's reports of the peer this package's
// ResetError and CloseError.
type moqErrors struct{}

func (moqErrors) Reset(code uint64, words string) error { return &ResetError{Code: code, words: words} }
func (moqErrors) Closed(code uint64, reason string, remote bool, words string) error {
	return &CloseError{Code: code, Reason: reason, Remote: remote, words: words}
}
func (moqErrors) IsClosed(err error) bool {
	_, ok := errors.AsType[*CloseError](err)
	return ok
}

// isConnErr reports whether err, from a stream or connection call, says
// that the whole connection (or WebTransport session) is gone rather than
// one stream.
func isConnErr(err error) bool { return transport.IsConnErr[moqErrors](err) }

// transportCause returns why c, a transport connection, is gone, in
// moq-lite's codes (a family with codes of its own marks them: withCodes).
func transportCause(c conn) error {
	err := context.Cause(c.Context())
	if err == nil {
		return nil
	}
	if nc, ok := c.(*netConn); ok && errors.Is(err, context.Canceled) {
		if cerr := nc.Cause(); cerr != nil {
			return cerr
		}
	}
	return transport.MapError[moqErrors](err)
}

// withCodes returns err with a session close of it named in codes, a
// family's (a copy: close errors may be shared); nil codes: moq-lite's.
func withCodes(err error, codes *session.Codes) error {
	if ce, ok := err.(*CloseError); ok && codes != nil && ce.codes == nil {
		cp := *ce
		cp.codes = codes
		return &cp
	}
	return err
}

// coreConn is a transport connection as a family's package sees it
// (session.Conn): its streams in the core's types, its end in this
// package's errors, a close named in the family's codes (nil: moq-lite's).
type coreConn struct {
	c     conn
	codes *session.Codes
}

func (t coreConn) OpenBidi(ctx context.Context) (session.Stream, error) {
	str, err := t.c.OpenBidi(ctx)
	if err != nil {
		return nil, err
	}
	return str, nil
}

func (t coreConn) OpenUni(ctx context.Context) (session.SendStream, error) {
	str, err := t.c.OpenUni(ctx)
	if err != nil {
		return nil, err
	}
	return str, nil
}

func (t coreConn) AcceptBidi(ctx context.Context) (session.Stream, error) {
	str, err := t.c.AcceptBidi(ctx)
	if err != nil {
		return nil, err
	}
	return str, nil
}

func (t coreConn) AcceptUni(ctx context.Context) (session.RecvStream, error) {
	str, err := t.c.AcceptUni(ctx)
	if err != nil {
		return nil, err
	}
	return str, nil
}

func (t coreConn) Close(code uint64, reason string)   { t.c.Close(code, reason) }
func (t coreConn) Context() context.Context           { return t.c.Context() }
func (t coreConn) WebTransport() bool                 { return t.c.WebTransport() }
func (t coreConn) Cause() error                       { return withCodes(transportCause(t.c), t.codes) }
func (t coreConn) Gone(err error) bool                { return connGone(t.c, err) }
func (t coreConn) Silence() time.Duration             { return t.c.Silence() }
func (t coreConn) ResetCode(err error) (uint64, bool) { return resetCode(err) }

// CloseOf reads the session's close out of err.
func (t coreConn) CloseOf(err error) (code uint64, remote, ok bool) {
	ce, ok := errors.AsType[*CloseError](err)
	if !ok {
		return 0, false, false
	}
	return ce.Code, ce.Remote, true
}

// resetCode reads the code of the peer's stream reset out of err.
func resetCode(err error) (uint64, bool) {
	re, ok := errors.AsType[*ResetError](err)
	if !ok {
		return 0, false
	}
	return re.Code, true
}
