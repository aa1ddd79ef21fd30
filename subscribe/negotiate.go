package subscribe

import (
	"fmt"
	"strings"

	"github.com/moq-export/moq-export/internal/moq/lite/litesub"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
)

// Version negotiation, both roles. What is offered and preferred comes from
// the version table (wire.Versions, or Options.Versions): the ALPN on raw
// QUIC, WT-Available-Protocols / WT-Protocol on WebTransport. This package
// chooses the family a negotiated protocol names (the ALPN table's
// alpn.Select, proto.go); what moq-lite does then (the version an ALPN names, the
// legacy bidi SETUP when the ALPN is "moql" or a WebTransport session
// negotiated no protocol, SETUP) is package litesub's. Each connection
// carries the version it negotiated (conn.Version); session code asks that
// version's capabilities.

// Versions returns the names of every protocol version the package speaks,
// most preferred first (the default of Options.Versions and
// ServerOptions.Versions).
func Versions() []string {
	out := make([]string, len(wire.Versions))
	for i, v := range wire.Versions {
		out[i] = v.Name
	}
	return out
}

// ErrVersion means the peer offered or chose no version this package
// speaks (or none of those Options.Versions allows).
var ErrVersion = litesub.ErrVersion

// CodeVersion is the moq-lite error code for a version mismatch.
const CodeVersion = litesub.CodeVersion

// versionList resolves a Versions option: nil means every version.
func versionList(names []string) ([]*wire.Version, error) {
	if len(names) == 0 {
		return wire.Versions, nil
	}
	vs, err := wire.ParseVersions(strings.Join(names, ","))
	if err != nil {
		return nil, fmt.Errorf("moq: %w", err)
	}
	return vs, nil
}

// codes returns the wire codes of vs, in order.
func codes(vs []*wire.Version) []uint64 {
	out := make([]uint64, len(vs))
	for i, v := range vs {
		out[i] = v.Code
	}
	return out
}

func liteVersions(vs []*wire.Version) []*wire.Version {
	var out []*wire.Version
	for _, v := range vs {
		if v.Family == wire.FamilyLite {
			out = append(out, v)
		}
	}
	return out
}

// Version returns the protocol version of the current connection
// ("moq-lite-05"), or "" while there is none.
func (s *Session) Version() string {
	if v := s.version.Load(); v != nil {
		return *v
	}
	return ""
}
