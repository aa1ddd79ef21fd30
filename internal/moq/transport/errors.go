package transport

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"
)

// mapErr turns quic-go's and webtransport-go's errors of the peer into E's
// values, keeping io.EOF, deadlines and the rest as they are.
func mapErr[E Errors](err error) error { return mapErrNamed[E](err, nil) }

// mapWTErr is mapErr for WebTransport, whose QUIC connection is HTTP/3's:
// its close codes are HTTP/3's (h3CodeName), not the session's.
func mapWTErr[E Errors](err error) error { return mapErrNamed[E](err, h3CodeName) }

// h3CodeName names the close code of an HTTP/3 connection in HTTP/3's
// registry (RFC 9114, section 8.1) or WebTransport's, by its number
// outside them (webtransport-go's server closes with 0).
func h3CodeName(code uint64) string {
	if code == uint64(webtransport.WTRequirementsNotMetErrorCode) {
		return "HTTP/3 WT_REQUIREMENTS_NOT_MET"
	}
	if s := http3.ErrCode(code).String(); strings.HasPrefix(s, "H3_") || strings.HasPrefix(s, "QPACK_") {
		return "HTTP/3 " + s
	}
	return fmt.Sprintf("HTTP/3 code %#x", code)
}

// mapErrNamed is mapErr; connCode, when not nil, names the codes of the
// QUIC connection's closes.
func mapErrNamed[E Errors](err error, connCode func(uint64) string) error {
	if err == nil || err == io.EOF {
		return err
	}
	var e E
	if se, ok := errors.AsType[*quic.StreamError](err); ok && se.Remote {
		return e.Reset(uint64(se.ErrorCode), "")
	}
	if se, ok := errors.AsType[*webtransport.StreamError](err); ok && se.Remote {
		return e.Reset(uint64(se.ErrorCode), "")
	}
	if ae, ok := errors.AsType[*quic.ApplicationError](err); ok {
		words := ""
		if connCode != nil {
			words = connCode(uint64(ae.ErrorCode))
		}
		return e.Closed(uint64(ae.ErrorCode), ae.ErrorMessage, ae.Remote, words)
	}
	if se, ok := errors.AsType[*webtransport.SessionError](err); ok {
		return e.Closed(uint64(se.ErrorCode), se.Message, se.Remote, "")
	}
	if he, ok := errors.AsType[*http3.Error](err); ok && he.ErrorCode == http3.ErrCodeDatagramError &&
		(he.ErrorMessage == io.EOF.Error() || he.ErrorMessage == io.ErrUnexpectedEOF.Error()) {
		// The peer ended the session's CONNECT stream without a whole
		// WT_CLOSE_SESSION capsule (MediaMTX's webtransport-go 0.12 on
		// CloseWithError(0, "")): webtransport-go 0.13 reports a
		// malformed capsule, the spec a close with code 0.
		return e.Closed(0, "", true, "")
	}
	if code, words, ok := wtUnmappedReset(err); ok {
		// An HTTP/3 code webtransport-go reports only in its text (a
		// stream the peer rejected because its session is gone, ...).
		return e.Reset(code, words)
	}
	return err
}

// IsConnErr reports whether err, from a stream or connection call, says
// that the whole connection (or WebTransport session) is gone rather than
// one stream.
func IsConnErr[E Errors](err error) bool {
	if err == nil {
		return false
	}
	var e E
	if e.IsClosed(err) {
		return true
	}
	if _, ok := errors.AsType[*quic.TransportError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*quic.IdleTimeoutError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*quic.StatelessResetError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*quic.HandshakeTimeoutError](err); ok {
		return true
	}
	return false
}

// WebTransport stream reset codes that are not application codes: the
// HTTP/3 codes webtransport-go cannot map into the application range and
// reports as "failed to convert stream error N".
var wtStreamCodeNames = map[uint64]string{
	uint64(webtransport.WTBufferedStreamRejectedErrorCode): "WebTransport stream rejected: the peer's session is gone",
	uint64(webtransport.WTSessionGoneErrorCode):            "WebTransport session gone",
	uint64(webtransport.WTFlowControlErrorCode):            "WebTransport flow control error",
}

// wtUnmappedReset reports whether err is webtransport-go's report of a
// stream reset with a code outside the WebTransport application range
// (its text is the only trace: the code is not wrapped), and returns the
// code and its meaning in words.
func wtUnmappedReset(err error) (uint64, string, bool) {
	if err == nil {
		return 0, "", false
	}
	const marker = "failed to convert stream error "
	msg := err.Error()
	i := strings.Index(msg, marker)
	if i < 0 {
		return 0, "", false
	}
	var code uint64
	if _, serr := fmt.Sscanf(msg[i+len(marker):], "%d", &code); serr != nil {
		return 0, "stream reset with a code outside the WebTransport range", true
	}
	if n, ok := wtStreamCodeNames[code]; ok {
		return code, n, true
	}
	return code, fmt.Sprintf("stream reset with HTTP/3 code %#x", code), true
}

// MapError is what the transport makes of err: the peer's resets and
// closes as E's values, anything else as it is.
func MapError[E Errors](err error) error { return mapErr[E](err) }

// A HandshakeDoneError is the error of a dial whose QUIC handshake
// completed, Took after the dial began, before what came after it (the
// WebTransport CONNECT) failed: a round trip of the path is known, which
// the connection's RTT estimate may still lack (see IdleTimedOut).
type HandshakeDoneError struct {
	Took time.Duration
	Err  error
}

func (e *HandshakeDoneError) Error() string { return e.Err.Error() }
func (e *HandshakeDoneError) Unwrap() error { return e.Err }

// IdleTimedOut reports whether err says that QUIC's idle timeout closed
// the connection: it heard nothing from the peer for that long. Right
// after a handshake that is also what a round trip longer than the idle
// timeout does when QUIC has no RTT sample yet to stretch the timeout by
// (quic-go declares a packet lost as soon as it probes, so a handshake
// whose ACKs come later than its probe timeout leaves none).
func IdleTimedOut(err error) bool {
	_, ok := errors.AsType[*quic.IdleTimeoutError](err)
	return ok
}
