package transport

import (
	"context"
	"io"
	"time"
)

// RecvStream is the reading half of a stream.
type RecvStream interface {
	io.Reader
	// CancelRead stops the peer's sending with an application code
	// (STOP_SENDING).
	CancelRead(code uint64)
	SetReadDeadline(t time.Time) error
}

// SendStream is the writing half of a stream.
type SendStream interface {
	io.Writer
	// Close ends the stream cleanly (FIN).
	Close() error
	// CancelWrite resets the stream with an application code
	// (RESET_STREAM).
	CancelWrite(code uint64)
}

// Stream is a bidirectional stream.
type Stream interface {
	RecvStream
	SendStream
}

// Conn is a raw QUIC connection or a WebTransport session.
type Conn interface {
	OpenBidi(ctx context.Context) (Stream, error)
	OpenUni(ctx context.Context) (SendStream, error)
	AcceptBidi(ctx context.Context) (Stream, error)
	AcceptUni(ctx context.Context) (RecvStream, error)
	// Close closes the connection with an application code and reason.
	Close(code uint64, reason string)
	// Context is done when the connection is gone; Cause says why.
	Context() context.Context
	// Cause returns why the connection is gone, as the caller's Errors
	// name it (nil while it lives).
	Cause() error
	// WebTransport is true for a WebTransport session.
	WebTransport() bool
	// Protocol is the negotiated ALPN (raw QUIC) or WebTransport protocol
	// ("" when none was negotiated).
	Protocol() string
	// RemoteAddr is the peer's address.
	RemoteAddr() string
}

// Errors builds the caller's error values from what the peer did. Its
// zero value is used: a type with no state.
type Errors interface {
	// Reset is a stream the peer reset or stopped with an application
	// code; words names a code outside the application range ("" for an
	// application code).
	Reset(code uint64, words string) error
	// Closed is a connection closed with an application code, by the peer
	// when remote; words names a code that is not the session's own (the
	// HTTP/3 code of the QUIC connection under a WebTransport session),
	// "" for a session's code.
	Closed(code uint64, reason string, remote bool, words string) error
	// IsClosed reports whether err is a value Closed made.
	IsClosed(err error) bool
}
