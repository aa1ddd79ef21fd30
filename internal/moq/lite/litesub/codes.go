package litesub

import (
	"github.com/moq-export/moq-export/internal/moq/session"
)

// Stream reset codes by meaning. moq-lite has two numberings: the old
// registry (lite-01..05 as first published: 0 cancel, 2 old, 13 not found,
// 30 unroutable, ...) and the one lite-06 renumbered into separate session
// and stream spaces (0x1 cancelled, 0x33 not found, 0x36 unroutable, ...),
// which relays on moq-net 0.3+ send on lite-05 sessions too. The retry
// policy decides on the meaning (session.Reset), never on a number.

// liteStreamCodes06 is the lite-06 stream registry (T-lite06 Table 3).
// 0x30..0x39 are read this way on every version: the old registry has
// nothing there (its codes stop at 31, and 32..47 are reserved).
var liteStreamCodes06 = map[uint64]session.Reset{
	0x0: session.ResetInternal, 0x1: session.ResetCancelled, 0x2: session.ResetTimeout, 0x3: session.ResetSessionClosed,
	0x4: session.ResetGoingAway, 0x5: session.ResetTooFarBehind, 0x12: session.ResetMalformed,
	0x30: session.ResetNoCapacity, 0x31: session.ResetTimeout, 0x32: session.ResetMalformed, 0x33: session.ResetNotFound,
	0x34: session.ResetOld, 0x35: session.ResetEvicted, 0x36: session.ResetUnroutable, 0x37: session.ResetMalformed,
	0x38: session.ResetMalformed, 0x39: session.ResetMalformed,
}

// liteStreamCodesOld is the old registry's stream codes. 0x1 ("required
// extension", never a stream reset there) is read as cancelled: newer
// relays and @moq/net send it for a routine unsubscribe on lite-05 too.
var liteStreamCodesOld = map[uint64]session.Reset{
	0: session.ResetCancelled, 1: session.ResetCancelled, 2: session.ResetOld, 3: session.ResetTimeout, 5: session.ResetMalformed,
	6: session.ResetUnauthorized, 13: session.ResetNotFound, 14: session.ResetMalformed, 15: session.ResetMalformed,
	24: session.ResetEvicted, 25: session.ResetSessionClosed, 26: session.ResetTooFarBehind, 27: session.ResetMalformed,
	29: session.ResetMalformed, 30: session.ResetUnroutable, 31: session.ResetEvicted,
}

// CodeMeaning reads a stream reset code: through the lite-06 table
// on a session that speaks it (renumbered), through the old table below
// 0x30 otherwise, and through the lite-06 table at 0x30 and above on every
// version. 32..47 (reserved; provisional values of pre-0.3 relays) and
// unregistered codes are unknown: "unauthorized" is never inferred.
func CodeMeaning(code uint64, renumbered bool) session.Reset {
	if renumbered || code >= 0x30 {
		if code >= 32 && code < 48 {
			return session.ResetUnknown
		}
		return liteStreamCodes06[code]
	}
	return liteStreamCodesOld[code]
}
