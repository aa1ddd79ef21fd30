package session

import (
	"context"
	"io"
	"time"
)

// The streams a family's session code reads and writes, as the core sees
// them: the transport's streams (raw QUIC or WebTransport, package
// internal/moq/transport) have these methods, so a family works on them
// without importing the transport.

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

// OpenUni opens a uni stream on a family's connection.
type OpenUni func(ctx context.Context) (SendStream, error)
