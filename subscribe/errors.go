package subscribe

import (
	"errors"
	"fmt"

	"github.com/moq-export/moq-export/internal/moq/session"
)

// Errors reported by the package. Test with errors.Is.
var (
	// ErrClosed means the session was closed by Close or gave up
	// reconnecting.
	ErrClosed = errors.New("moq: session closed")
	// ErrRefused means the peer refused a TRACK or SUBSCRIBE request: it
	// said so (an error reply, a reset of the request, a FIN without an
	// answer).
	ErrRefused = session.ErrRefused
	// ErrTimeout means the peer did not answer a TRACK or SUBSCRIBE
	// request within Options.RequestTimeout, on a connection that stayed
	// up. A request whose connection was lost meanwhile (a blackhole
	// times a request out before QUIC finds the peer silent) is not one:
	// it is made again on the next connection.
	ErrTimeout = session.ErrTimeout
	// ErrUnsupportedContainer means a rendition uses a container this
	// package cannot decode (an unknown kind), or a cmaf track with no init
	// in the catalog.
	ErrUnsupportedContainer = errors.New("moq: unsupported container")
	// ErrProtocol means the peer broke the protocol (a malformed message,
	// an unexpected stream).
	ErrProtocol = session.ErrProtocol
	// ErrTruncated means a group stream was stopped before its end: the
	// publisher ended the subscription but did not finish the stream
	// within the drain grace period, or the subscription was cancelled.
	ErrTruncated = session.ErrTruncated
	// ErrAlreadyPublished means Publish was called twice for one path.
	ErrAlreadyPublished = errors.New("moq: broadcast already published")
)

// Error codes of the moq-lite registry that this package sends or names.
const (
	CodeCancel      = 0
	CodeOld         = 2
	CodeTimeout     = 3
	CodeDecode      = 5
	CodeProtocol    = 15
	CodeUnexpected  = 16
	CodeNotFound    = 13
	CodeDropped     = 24
	CodeClosed      = 25
	CodeUnroutable  = 30
	CodeUnsupported = 17
)

// SessionProtocolViolation is the session close code of a protocol
// violation in the lite-06 registry (which newer relays use on every lite
// version).
const SessionProtocolViolation = 0x3

var codeNames = map[uint64]string{
	0: "cancel", 1: "required extension", 2: "old", 3: "timeout", 4: "transport",
	5: "decode error", 6: "unauthorized", 9: "version", 10: "unexpected stream",
	11: "bounds exceeded", 12: "duplicate", 13: "not found", 14: "wrong frame size",
	15: "protocol violation", 16: "unexpected message", 17: "unsupported",
	18: "encode error", 19: "too many parameters", 20: "invalid role", 21: "unknown ALPN",
	24: "dropped", 25: "closed", 26: "lagged", 27: "frame too large",
	29: "timestamp/timescale mismatch", 30: "unroutable", 31: "evicted",
	// lite-06's own range (also sent on lite-05 by newer relays).
	0x30: "no capacity", 0x31: "control timeout", 0x32: "group too large", 0x33: "not found",
	0x34: "old", 0x35: "evicted", 0x36: "unroutable", 0x37: "wrong frame size",
	0x38: "frame too large", 0x39: "timestamp mismatch",
}

// CodeName returns the meaning of a moq-lite error code in the old
// registry, or in lite-06's own range (0x30..0x39). Codes below 0x30 that
// lite-06 renumbered read differently on a lite-06 session.
func CodeName(code uint64) string {
	if n, ok := codeNames[code]; ok {
		return n
	}
	if code >= 64 {
		return fmt.Sprintf("application %d", code-64)
	}
	return "unknown"
}

// ResetError reports a stream the peer reset (RESET_STREAM or
// STOP_SENDING) with a moq-lite error code.
type ResetError struct {
	Code uint64

	words string // the code's meaning when it is not a moq-lite code
}

func (e *ResetError) Error() string {
	words := e.words
	if words == "" {
		words = CodeName(e.Code)
	}
	return fmt.Sprintf("moq: stream reset by peer: code %d (%s)", e.Code, words)
}

// CloseError reports a session the peer (or the transport) closed.
type CloseError struct {
	// Code is the session's close code, or over WebTransport the HTTP/3
	// code of the QUIC connection under the session when that connection
	// closed first (Error names it so).
	Code   uint64
	Reason string
	// Remote is true when the peer closed the session.
	Remote bool

	codes *session.Codes // the family whose codes name it (nil: moq-lite)
	// words names a code that is not the session's (the HTTP/3 code of
	// the QUIC connection under a WebTransport session), which no
	// family's codes name.
	words string
}

func (e *CloseError) Error() string {
	who := "locally"
	if e.Remote {
		who = "by peer"
	}
	words := e.words
	if words == "" {
		words = closeCodeName(e.Code, e.codes)
	}
	s := fmt.Sprintf("moq: session closed %s: code %d (%s)", who, e.Code, words)
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}
