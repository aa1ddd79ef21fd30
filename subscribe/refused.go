package subscribe

import (
	"errors"
	"fmt"
	"strings"

	"github.com/moq-export/moq-export/internal/moq/session"
)

// ErrPathRefused means the peer closed the session because it refuses the
// session's path (moq-transport INVALID_PATH or MALFORMED_PATH).
var ErrPathRefused = errors.New("moq: path refused")

// RefusedError reports a session the peer closed in a way another attempt
// cannot change: a refused token, a protocol violation, no common
// version, a refused path. A dialled session ends with it at once instead
// of reconnecting. It wraps the sentinel of its kind (ErrUnauthorized,
// ErrProtocol, ErrVersion, ErrPathRefused) and the peer's *CloseError.
type RefusedError struct {
	// Why is the refusal in words: "unauthorized", "protocol violation",
	// "no common version" or "path refused".
	Why string
	// Close is how the peer closed the session.
	Close *CloseError

	kind error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("moq: the peer refused the session (%s): %v", e.Why, e.Close)
}

// Unwrap returns the sentinel of the refusal's kind and the close.
func (e *RefusedError) Unwrap() []error { return []error{e.kind, e.Close} }

// refusal is one kind of close that retrying cannot fix, in words and
// as the sentinel the RefusedError wraps.
type refusal struct {
	why  string
	kind error
}

// refusals say the families' refusals (session.Codes.Refusals) in the
// package's words and errors.
var refusals = map[session.Refusal]refusal{
	session.RefusedAuth:     {"unauthorized", ErrUnauthorized},
	session.RefusedProtocol: {"protocol violation", ErrProtocol},
	session.RefusedVersion:  {"no common version", ErrVersion},
	session.RefusedPath:     {"path refused", ErrPathRefused},
}

// refusedBy reports whether err, why a dialled connection ended, is a
// close by the peer that retrying cannot fix, and returns the typed
// error the session ends with. codes are those of the family the
// connection spoke (nil: moq-lite's). A reason that says "unauthorized"
// counts whatever the code, as relays put the cause in words when the
// code space is the application's.
func refusedBy(err error, codes *session.Codes) (*RefusedError, bool) {
	ce, ok := errors.AsType[*CloseError](err)
	if !ok || !ce.Remote {
		return nil, false
	}
	if codes == nil {
		codes = &liteCodes
	}
	r, ok := refusals[codes.Refusals[ce.Code]]
	if !ok && ce.Code != 0 && strings.Contains(strings.ToLower(ce.Reason), "unauthorized") {
		r, ok = refusals[session.RefusedAuth], true
	}
	if !ok {
		return nil, false
	}
	return &RefusedError{Why: r.why, Close: ce, kind: r.kind}, true
}

// refusedDialing is refusedBy for an error of a dial, where the protocol
// is not known: a code that any family calls a refusal counts (the
// families agree on what they share).
func refusedDialing(err error) (*RefusedError, bool) {
	for _, codes := range familyCodes {
		if r, ok := refusedBy(err, codes); ok {
			return r, true
		}
	}
	return nil, false
}

// closeCodeName names a session close code in codes (nil: moq-lite's).
func closeCodeName(code uint64, codes *session.Codes) string {
	if codes == nil {
		codes = &liteCodes
	}
	return codes.Name(code)
}
