package subscribe

import (
	"errors"

	"github.com/moq-export/moq-export/internal/moq/lite/wire"
)

// Stream reset codes by meaning. moq-lite has two numberings: the old
// registry (lite-01..05 as first published: 0 cancel, 2 old, 13 not found,
// 30 unroutable, ...) and the one lite-06 renumbered into separate session
// and stream spaces (0x1 cancelled, 0x33 not found, 0x36 unroutable, ...),
// which relays on moq-net 0.3+ send on lite-05 sessions too. The retry
// policy decides on the meaning, never on a number.

// resetMeaning is what a stream reset code says.
type resetMeaning uint8

const (
	resetUnknown       resetMeaning = iota
	resetCancelled                  // a routine unsubscribe or stop
	resetInternal                   // the peer failed
	resetTimeout                    // delivery or request timeout
	resetSessionClosed              // the session is ending
	resetGoingAway                  // the peer is draining (GOAWAY)
	resetTooFarBehind               // the subscriber lagged
	resetNotFound                   // no such track
	resetOld                        // the group asked for is too old
	resetEvicted                    // the group was dropped from the cache
	resetUnroutable                 // no route to the broadcast (yet)
	resetNoCapacity                 // the route is full: one re-resolution allowed
	resetUnauthorized               // the token does not allow it
	resetMalformed                  // bad bytes: decode error, wrong size, too large, timestamps
)

var resetMeaningNames = [...]string{"unknown", "cancelled", "internal error", "timeout", "session closed",
	"going away", "too far behind", "not found", "old", "evicted", "unroutable", "no capacity",
	"unauthorized", "malformed"}

func (m resetMeaning) String() string { return resetMeaningNames[m] }

// liteStreamCodes06 is the lite-06 stream registry (T-lite06 Table 3).
// 0x30..0x39 are read this way on every version: the old registry has
// nothing there (its codes stop at 31, and 32..47 are reserved).
var liteStreamCodes06 = map[uint64]resetMeaning{
	0x0: resetInternal, 0x1: resetCancelled, 0x2: resetTimeout, 0x3: resetSessionClosed,
	0x4: resetGoingAway, 0x5: resetTooFarBehind, 0x12: resetMalformed,
	0x30: resetNoCapacity, 0x31: resetTimeout, 0x32: resetMalformed, 0x33: resetNotFound,
	0x34: resetOld, 0x35: resetEvicted, 0x36: resetUnroutable, 0x37: resetMalformed,
	0x38: resetMalformed, 0x39: resetMalformed,
}

// liteStreamCodesOld is the old registry's stream codes. 0x1 ("required
// extension", never a stream reset there) is read as cancelled: newer
// relays and @moq/net send it for a routine unsubscribe on lite-05 too.
var liteStreamCodesOld = map[uint64]resetMeaning{
	0: resetCancelled, 1: resetCancelled, 2: resetOld, 3: resetTimeout, 5: resetMalformed,
	6: resetUnauthorized, 13: resetNotFound, 14: resetMalformed, 15: resetMalformed,
	24: resetEvicted, 25: resetSessionClosed, 26: resetTooFarBehind, 27: resetMalformed,
	29: resetMalformed, 30: resetUnroutable, 31: resetEvicted,
}

// streamCodeMeaning reads a stream reset code: through the lite-06 table
// on a session that speaks it (renumbered), through the old table below
// 0x30 otherwise, and through the lite-06 table at 0x30 and above on every
// version. 32..47 (reserved; provisional values of pre-0.3 relays) and
// unregistered codes are unknown: "unauthorized" is never inferred.
func streamCodeMeaning(code uint64, renumbered bool) resetMeaning {
	if renumbered || code >= 0x30 {
		if code >= 32 && code < 48 {
			return resetUnknown
		}
		return liteStreamCodes06[code]
	}
	return liteStreamCodesOld[code]
}

// resetMeaningOf returns the meaning of the stream reset err carries
// (resetUnknown when it carries none).
func resetMeaningOf(err error, renumbered bool) resetMeaning {
	re, ok := errors.AsType[*ResetError](err)
	if !ok {
		return resetUnknown
	}
	return streamCodeMeaning(re.Code, renumbered)
}

// renumberedCodes are the lite-06 stream codes of the old codes this
// package sends.
var renumberedCodes = map[uint64]uint64{
	CodeCancel: 0x1, CodeOld: 0x34, CodeTimeout: 0x2, CodeDecode: 0x12, CodeNotFound: 0x33,
	CodeUnroutable: 0x36, CodeClosed: 0x3,
}

// liteCode is the stream code this package sends for code (named in the
// old registry) on a session of version v: renumbered on lite-06 (a
// FrameRange version), unchanged before, where peers may read the old
// registry only.
func liteCode(v *wire.Version, code uint64) uint64 {
	if v != nil && v.FrameRange {
		if n, ok := renumberedCodes[code]; ok {
			return n
		}
	}
	return code
}
