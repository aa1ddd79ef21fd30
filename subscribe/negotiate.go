package subscribe

import (
	"fmt"
	"slices"
	"strings"

	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/lite/litesub"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/transport/alpn"
)

// Version negotiation, both roles. What is offered and preferred comes from
// the version table (versionTable, or Options.Versions): the ALPN on raw
// QUIC, WT-Available-Protocols / WT-Protocol on WebTransport. This package
// chooses the family a negotiated protocol names (the ALPN table's
// alpn.Select and alpn.Pinned) and hands the connection to it (proto.go);
// what moq-lite does then (the version an ALPN names, the legacy bidi
// SETUP when the ALPN is "moql" or a WebTransport session negotiated no
// protocol) is package litesub's, and moq-transport's SETUP package
// ietfsub's. Each connection speaks the version its family negotiated;
// session code asks that version's capabilities through the seam.

// versionTable is every version the package speaks, most preferred
// first, as family-neutral rows: moq-lite's versions from its own table
// (wire.Versions), then moq-transport's drafts from theirs
// (ietf.Versions), newest first. Which token selects a row and whether
// the legacy SETUP can choose it is the ALPN table's to say.
var versionTable = func() []alpn.Version {
	var out []alpn.Version
	for _, v := range wire.Versions {
		out = append(out, alpn.Version{Name: v.Name, Code: v.Code})
	}
	for _, v := range ietf.Versions() {
		out = append(out, alpn.Version{Name: v.String(), Code: uint64(v)})
	}
	return out
}()

// Versions returns the names of every protocol version the package speaks,
// most preferred first (the default of Options.Versions and
// ServerOptions.Versions).
func Versions() []string {
	out := make([]string, len(versionTable))
	for i, v := range versionTable {
		out[i] = v.Name
	}
	return out
}

// ErrVersion means the peer offered or chose no version this package
// speaks (or none of those Options.Versions allows).
var ErrVersion = litesub.ErrVersion

// CodeVersion is the moq-lite error code for a version mismatch.
const CodeVersion = litesub.CodeVersion

// versionList resolves a Versions option: nil means every version. The
// names keep the order given (a caller can pin or reorder versions), each
// once.
func versionList(names []string) ([]alpn.Version, error) {
	if len(names) == 0 {
		return versionTable, nil
	}
	var out []alpn.Version
	for _, name := range strings.Split(strings.Join(names, ","), ",") {
		if strings.TrimSpace(name) == "" {
			continue
		}
		v, ok := versionNamed(name)
		if !ok {
			return nil, fmt.Errorf("moq: unknown protocol version %q (known: %s)", strings.TrimSpace(name), alpn.Names(versionTable))
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("moq: no protocol version in %q", strings.Join(names, ","))
	}
	return out, nil
}

// versionNamed returns the version named name: its whole name
// ("moq-transport-20", "moq-lite-04"), without "moq-" ("lite-04"), and a
// moq-lite version by its number alone ("04").
func versionNamed(name string) (alpn.Version, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, v := range versionTable {
		short := strings.TrimPrefix(v.Name, "moq-")
		if n == v.Name || n == short || (v.Family() == alpn.Lite && n == strings.TrimPrefix(short, "lite-")) {
			return v, true
		}
	}
	return alpn.Version{}, false
}

// Version returns the protocol version of the current connection
// ("moq-lite-05"), or "" while there is none.
func (s *Session) Version() string {
	if v := s.version.Load(); v != nil {
		return *v
	}
	return ""
}
