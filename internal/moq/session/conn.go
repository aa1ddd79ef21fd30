package session

import (
	"context"
	"time"
)

// Conn is a connection as a family's session sees it: the transport's (raw
// QUIC or WebTransport) streams in the core's stream types, and its end in
// the facade's errors. The facade adapts its connections to it, so a
// family never imports the transport.
type Conn interface {
	OpenBidi(ctx context.Context) (Stream, error)
	OpenUni(ctx context.Context) (SendStream, error)
	AcceptBidi(ctx context.Context) (Stream, error)
	AcceptUni(ctx context.Context) (RecvStream, error)
	// Close closes the connection with an application code and reason.
	Close(code uint64, reason string)
	// Context is done when the connection is gone.
	Context() context.Context
	// WebTransport is true for a WebTransport session (no SETUP Path).
	WebTransport() bool
	// Cause is why the connection is gone, in the family's codes (nil
	// while it lives).
	Cause() error
	// Gone reports whether the connection is gone, judging by its
	// context and by err, the error of an operation on it: the streams of
	// a closed connection can fail before its context ends.
	Gone(err error) bool
	// ResetCode reads the code of the peer's reset (RESET_STREAM or
	// STOP_SENDING) of one stream out of err, the error of an operation
	// on that stream; ok is false when err is no such reset.
	ResetCode(err error) (code uint64, ok bool)
	// Silence is how long the connection takes, as it stands now, to
	// find that its peer went silent (Family.Silence).
	Silence() time.Duration
	// CloseOf reads the session's close (the peer's when remote) out of
	// err; ok is false when err holds no close.
	CloseOf(err error) (code uint64, remote, ok bool)
}

// Loss returns why c is gone: its cause once it is there, otherwise err
// (the stream error that reported the loss first). It is each family's
// Loss (Family, Track) over its connection.
func Loss(c interface{ Cause() error }, err error) error {
	if cause := c.Cause(); cause != nil {
		return cause
	}
	return err
}

// ResetStream abandons both directions of str with code.
func ResetStream(str Stream, code uint64) {
	str.CancelRead(code)
	str.CancelWrite(code)
}
