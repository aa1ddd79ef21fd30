package subscribe

import (
	"errors"
	"fmt"
	"strings"

	"github.com/moq-export/moq-export/internal/moq/ietf/ietfsub"
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

// refusal is one kind of close that retrying cannot fix.
type refusal struct {
	why  string
	kind error
}

var (
	refusedAuth     = refusal{"unauthorized", ErrUnauthorized}
	refusedProtocol = refusal{"protocol violation", ErrProtocol}
	refusedVersion  = refusal{"no common version", ErrVersion}
	refusedPath     = refusal{"path refused", ErrPathRefused}
)

// liteRefusals are the moq-lite session close codes that end a dialled
// session: the old registry (6, 9, 15, 21) and the renumbered one that
// newer relays send on lite-05 sessions too (0x2, 0x3, 0x15; see
// moq-lite-06's session codes). Stream codes never get here.
var liteRefusals = map[uint64]refusal{
	6: refusedAuth, 0x2: refusedAuth,
	15: refusedProtocol, 0x3: refusedProtocol,
	9: refusedVersion, 0x15: refusedVersion,
}

// ietfRefusals are the moq-transport session close codes that end a
// dialled session.
var ietfRefusals = map[uint64]refusal{
	0x2: refusedAuth, 0x3: refusedProtocol, 0x15: refusedVersion,
	0x8: refusedPath, 0x9: refusedPath,
}

// refusedBy reports whether err, why a dialled connection ended, is a
// close by the peer that retrying cannot fix, and returns the typed
// error the session ends with. ietf says the connection spoke
// moq-transport (its close codes differ from moq-lite's). A reason that
// says "unauthorized" counts whatever the code, as relays put the cause
// in words when the code space is the application's.
func refusedBy(err error, ietf bool) (*RefusedError, bool) {
	ce, ok := errors.AsType[*CloseError](err)
	if !ok || !ce.Remote {
		return nil, false
	}
	table := liteRefusals
	if ietf {
		table = ietfRefusals
	}
	r, ok := table[ce.Code]
	if !ok && ce.Code != 0 && strings.Contains(strings.ToLower(ce.Reason), "unauthorized") {
		r, ok = refusedAuth, true
	}
	if !ok {
		return nil, false
	}
	return &RefusedError{Why: r.why, Close: ce, kind: r.kind}, true
}

// refusedDialing is refusedBy for an error of a dial, where the protocol
// is not known: a code that either protocol calls a refusal counts (the
// two tables agree on what they share).
func refusedDialing(err error) (*RefusedError, bool) {
	if r, ok := refusedBy(err, false); ok {
		return r, true
	}
	return refusedBy(err, true)
}

// closeCodeName names a session close code of the protocol the
// connection spoke.
func closeCodeName(code uint64, ietf bool) string {
	if ietf {
		if n, ok := ietfsub.CloseName(code); ok {
			return n
		}
		return "unknown"
	}
	return CodeName(code)
}
