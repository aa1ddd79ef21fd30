// Package alpn is the one table of the protocol names that select a MoQ
// version: the TLS ALPN on raw QUIC and the WebTransport protocol
// (WT-Available-Protocols / WT-Protocol), for both families, moq-lite and
// IETF moq-transport, in the order a client offers them.
//
// It is a leaf under internal/moq/transport (the transport owns
// negotiation) so that the wire codecs can name their versions' tokens
// without importing quic-go: internal/moq/lite/wire's version table and
// internal/moq/ietf's Version.ALPN look their strings up here.
package alpn

import (
	"slices"
	"strings"
)

// Legacy is the token under which the version is chosen inside the legacy
// SETUP exchange (CLIENT_SETUP's version list) rather than by the token
// itself: moq-lite-01/02 and moq-transport draft 14. A WebTransport session
// that negotiated no protocol takes the same path.
const Legacy = "moql"

// Token is one protocol name and the version it pins.
type Token struct {
	// Name is the ALPN / WebTransport protocol ("moq-lite-05").
	Name string
	// Code is the wire code of the version it pins (0xff0dad05 for
	// moq-lite-05, 0xff000014 for draft 20); 0 for Legacy, which pins none.
	Code uint64
}

// Table lists every token this module speaks, most preferred first: the
// order a client offers them (the reference's, moq-net 0.3.1+: moq-lite
// newest first, the legacy SETUP, then moq-transport newest first with
// draft 14's own "moq-00" last). A new version is one row here at its
// place and its entry in its family's version table.
var Table = []Token{
	{"moq-lite-06", 0xff0dad06},
	{"moq-lite-05", 0xff0dad05},
	{"moq-lite-04", 0xff0dad04},
	{"moq-lite-03", 0xff0dad03},
	{Legacy, 0},
	{"moqt-22", 0xff000016},
	{"moqt-21", 0xff000015},
	{"moqt-20", 0xff000014},
	{"moqt-19", 0xff000013},
	{"moqt-18", 0xff000012},
	{"moqt-17", 0xff000011},
	{"moqt-16", 0xff000010},
	{"moqt-15", 0xff00000f},
	{"moq-00", 0xff00000e},
}

// Of returns the token that pins the version with wire code code, "" when
// none does (moq-lite-01/02 are reached only through Legacy).
func Of(code uint64) string {
	if code == 0 {
		return ""
	}
	for _, t := range Table {
		if t.Code == code {
			return t.Name
		}
	}
	return ""
}

// CodeOf returns the wire code of the version name pins; false for
// Legacy, "" and unknown names.
func CodeOf(name string) (uint64, bool) {
	for _, t := range Table {
		if t.Name == name && t.Code != 0 {
			return t.Code, true
		}
	}
	return 0, false
}

// Family is the protocol family of a version, read off its wire code: each
// family numbers its versions in its own code space.
type Family uint8

const (
	// Unknown is a code of neither family (and 0, Legacy's).
	Unknown Family = iota
	// Lite is moq-lite (codes 0xff0dadNN).
	Lite
	// IETF is IETF moq-transport (draft N is 0xff0000NN).
	IETF
)

// FamilyOf returns the family whose code space holds code.
func FamilyOf(code uint64) Family {
	switch code >> 8 {
	case 0xff0dad:
		return Lite
	case 0xff0000:
		return IETF
	}
	return Unknown
}

// UnderLegacy lists the versions the legacy SETUP exchange can choose
// under Legacy (CLIENT_SETUP's version list), most preferred first:
// moq-lite-02 and -01, and moq-transport draft 14 (how @moq/net 0.3.4
// reaches it).
var UnderLegacy = []uint64{0xff0dad02, 0xff0dad01, 0xff00000e}

// Choice is what a negotiated token hands the connection to: a family and
// the version it speaks.
type Choice struct {
	// Family speaks the connection.
	Family Family
	// Code is the version's wire code; 0 when the legacy SETUP still has
	// to choose among moq-lite's versions.
	Code uint64
	// Token is the token negotiated (Legacy for a WebTransport session
	// that negotiated none).
	Token string
}

// Pinned returns the version a token pins by itself: never Legacy or "",
// whose version the legacy SETUP chooses.
func Pinned(token string) (Choice, bool) {
	code, ok := CodeOf(token)
	if !ok {
		return Choice{}, false
	}
	return Choice{Family: FamilyOf(code), Code: code, Token: token}, true
}

// Select returns what a client that offered the versions offered (their
// codes) does with the token the server chose: the version the token pins
// when it was offered; for Legacy or no token (WebTransport), the legacy
// SETUP, which moq-lite runs when a moq-lite version it can choose was
// offered and moq-transport (draft 14, reading its own CLIENT_SETUP)
// otherwise. False: nothing offered fits; the caller refuses the version.
func Select(token string, offered []uint64) (Choice, bool) {
	if token != "" && token != Legacy {
		c, ok := Pinned(token)
		if !ok || !slices.Contains(offered, c.Code) {
			return Choice{}, false
		}
		return c, true
	}
	var ietf uint64
	for _, code := range UnderLegacy {
		if !slices.Contains(offered, code) {
			continue
		}
		if FamilyOf(code) == Lite {
			return Choice{Family: Lite, Token: Legacy}, true
		}
		if ietf == 0 {
			ietf = code
		}
	}
	if ietf == 0 {
		return Choice{}, false
	}
	return Choice{Family: IETF, Code: ietf, Token: Legacy}, true
}

// Version is one protocol version as negotiation sees it, whatever its
// family: its name and wire code, from its family's own version table
// (moq-lite's in internal/moq/lite/wire, moq-transport's drafts in
// internal/moq/ietf). What the version's family and tokens are is this
// table's to say (Family, Token, UnderLegacy), not the row's.
type Version struct {
	// Name is the version's name in logs, errors and Options.Versions
	// ("moq-lite-05", "moq-transport-20").
	Name string
	// Code is the version's wire code.
	Code uint64
}

func (v Version) String() string { return v.Name }

// Family is the family that speaks v.
func (v Version) Family() Family { return FamilyOf(v.Code) }

// Token is the token that pins v ("" when only Legacy reaches it).
func (v Version) Token() string { return Of(v.Code) }

// UnderLegacy reports whether the legacy SETUP can choose v.
func (v Version) UnderLegacy() bool { return slices.Contains(UnderLegacy, v.Code) }

// Tokens returns the tokens that select vs, in their order, without
// duplicates: each version's own token, and Legacy once, where the first
// version the legacy SETUP can choose stands. A client offers them (ALPN
// list, WT-Available-Protocols); a server listens for them.
func Tokens(vs []Version) []string {
	var out []string
	add := func(tok string) {
		if tok != "" && !slices.Contains(out, tok) {
			out = append(out, tok)
		}
	}
	for _, v := range vs {
		add(v.Token())
		if v.UnderLegacy() {
			add(Legacy)
		}
	}
	return out
}

// Codes returns the wire codes of vs, in order.
func Codes(vs []Version) []uint64 {
	out := make([]uint64, len(vs))
	for i, v := range vs {
		out[i] = v.Code
	}
	return out
}

// Names returns the names of vs joined by ", " (for errors and logs).
func Names(vs []Version) string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.Name
	}
	return strings.Join(names, ", ")
}

// ByCode returns the version of vs with wire code code.
func ByCode(vs []Version, code uint64) (Version, bool) {
	for _, v := range vs {
		if v.Code == code {
			return v, true
		}
	}
	return Version{}, false
}
