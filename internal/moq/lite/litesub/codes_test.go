package litesub

import (
	"testing"

	"github.com/moq-export/moq-export/internal/moq/session"
)

// TestResetCodesMeanTheSameInBothNumberings: codes 0x30 and above mean
// the same on a lite-05 session (newer relays send them there); codes
// below 0x30 depend on the session's numbering; reserved and unregistered
// codes mean nothing (never "unauthorized").
func TestResetCodesMeanTheSameInBothNumberings(t *testing.T) {
	for _, c := range []struct {
		code       uint64
		renumbered bool
		want       session.Reset
	}{
		{0x33, false, session.ResetNotFound}, {0x36, false, session.ResetUnroutable}, {0x30, false, session.ResetNoCapacity},
		{0x1, false, session.ResetCancelled}, {0x1, true, session.ResetCancelled}, {0x0, false, session.ResetCancelled},
		{0x0, true, session.ResetInternal}, {0x2, false, session.ResetOld}, {0x2, true, session.ResetTimeout},
		{40, false, session.ResetUnknown}, {40, true, session.ResetUnknown}, {13, true, session.ResetUnknown}, {0x3b, true, session.ResetUnknown},
	} {
		if got := CodeMeaning(c.code, c.renumbered); got != c.want {
			t.Errorf("code %#x renumbered %v: %v, want %v", c.code, c.renumbered, got, c.want)
		}
	}
}
