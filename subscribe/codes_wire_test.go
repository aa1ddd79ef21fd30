package subscribe

import (
	"testing"

	"github.com/moq-export/moq-export/internal/moq/lite/litesub"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
)

// The public codes name the same numbers the moq-lite wire sends.
func TestThePublicCodesAreTheWiresCodes(t *testing.T) {
	for _, c := range []struct {
		name         string
		public, wire uint64
	}{
		{"cancel", CodeCancel, wire.CodeCancel}, {"old", CodeOld, wire.CodeOld}, {"timeout", CodeTimeout, wire.CodeTimeout},
		{"decode", CodeDecode, wire.CodeDecode}, {"not found", CodeNotFound, wire.CodeNotFound},
		{"closed", CodeClosed, wire.CodeClosed}, {"unroutable", CodeUnroutable, wire.CodeUnroutable},
	} {
		if c.public != c.wire {
			t.Errorf("%s: subscribe says %d, the wire %d", c.name, c.public, c.wire)
		}
	}
	if SessionProtocolViolation != litesub.SessionProtocolViolation {
		t.Errorf("protocol violation: subscribe says %d, litesub closes with %d", SessionProtocolViolation, litesub.SessionProtocolViolation)
	}
	if wire.StreamCode(wire.Lite06, CodeNotFound) != 0x33 || wire.StreamCode(wire.Lite05, CodeNotFound) != CodeNotFound {
		t.Error("not found is renumbered on lite-06 only")
	}
}
