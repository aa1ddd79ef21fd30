package wire

import (
	"strings"

	"github.com/moq-export/moq-export/internal/moq/transport/alpn"
)

// The version table: every moq-lite version this module speaks, in the
// order it prefers them, with what each one's wire carries. Session code
// asks these capabilities, never version numbers, and the per-version
// message layouts (the AppendFor/DecodeFor methods) read the same fields,
// so a new moq-lite version is one entry here plus the layouts it changes.

// Version is one moq-lite version: its names, how it is negotiated and
// what its wire carries. Values are shared; never modify one.
type Version struct {
	// Name is the version's name in logs and errors ("moq-lite-05").
	Name string
	// Code is the version's wire code (SETUP version lists, 0xff0dad05).
	Code uint64
	// LegacySetup: the version can be chosen inside the legacy SETUP
	// exchange (under alpn.Legacy, or a WebTransport session without a
	// protocol): lite-01/02 (alpn.UnderLegacy lists them, with
	// moq-transport's draft 14).
	LegacySetup bool

	// SetupStream: each side opens one uni Setup stream with SETUP
	// (capabilities, and the Path a raw QUIC client sends). Without it a
	// raw QUIC session has no path and no token (lite-05+).
	SetupStream bool
	// SessionStream: the legacy SETUP bidi stream stays open as a session
	// stream carrying SESSION_INFO (lite-01/02).
	SessionStream bool
	// AnnounceOK: the publisher's announce reply opens with ANNOUNCE_OK
	// (its hop id and the number of initial announcements), and hop lists
	// leave out the sender's own id (lite-05+). Without it the sender
	// appends itself to each hop list and the initial set has no end mark.
	AnnounceOK bool
	// AnnounceInit: the announce reply opens with ANNOUNCE_INIT, the list
	// of initial suffixes (lite-01/02).
	AnnounceInit bool
	// ExcludeHop: ANNOUNCE_REQUEST carries the Exclude Hop id (lite-04/05).
	ExcludeHop bool
	// HopCount: ANNOUNCE carries a hop count (lite-03+; absent before).
	HopCount bool
	// HopIDs: the hop count is followed by the hop ids (lite-04+; lite-03
	// carries the count only).
	HopIDs bool
	// AnnounceRestart: ANNOUNCE status 2 (restart) is accepted, and an
	// active announcement for a path already active means replaced
	// (lite-05).
	AnnounceRestart bool
	// TrackInfo: a Track stream (TRACK / TRACK_INFO) gives a track's
	// priority, order, max latency and timescale before SUBSCRIBE
	// (lite-05+).
	TrackInfo bool
	// Fetch: Fetch streams serve one past group (lite-05+).
	Fetch bool
	// FrameTimestamps: every FRAME starts with a zigzag timestamp delta in
	// the track's timescale (lite-05+). Without it a frame is size and
	// payload only.
	FrameTimestamps bool
	// SubscribeOK: the publisher acknowledges SUBSCRIBE at once with
	// SUBSCRIBE_OK (lite-01..04); lite-05+ accepts implicitly and sends
	// SUBSCRIBE_START (first group) and SUBSCRIBE_END (end) instead.
	SubscribeOK bool
	// SubscribeOKPriority: the untyped SUBSCRIBE_OK of a version without
	// SubscribeRange carries the priority byte (lite-01; empty on lite-02).
	SubscribeOKPriority bool
	// SubscribeRange: SUBSCRIBE, SUBSCRIBE_UPDATE and SUBSCRIBE_OK carry
	// ordered, max latency, start and end groups (lite-03+); before, only
	// the priority.
	SubscribeRange bool
	// TypedResponses: subscribe responses carry a type before their length
	// (lite-03+; SUBSCRIBE_OK is the only, untyped, response before).
	TypedResponses bool
	// ProbeStream: Probe streams exist (lite-03+); ProbeRTT: PROBE carries
	// the RTT after the bitrate (lite-04+).
	ProbeStream bool
	ProbeRTT    bool
	// Goaway: Goaway streams exist (lite-04+).
	Goaway bool
	// Datagrams: single-frame groups may ride QUIC datagrams (lite-05+).
	Datagrams bool
	// GroupOrder: SUBSCRIBE, SUBSCRIBE_UPDATE and TRACK_INFO carry the
	// Ordered byte (lite-03..05); lite-06 retired it (groups are always
	// delivered newest first).
	GroupOrder bool
	// TypedAnnounce: announcements are typed ANNOUNCE_START / END /
	// UPDATE messages (type before length) with implicit per-stream ids
	// (every START takes the next one) and warm/cold route costs; a
	// duplicate START, an END or UPDATE of an unknown id, or any of them
	// before ANNOUNCE_OK close the session (lite-06+).
	TypedAnnounce bool
	// FrameRange: SUBSCRIBE and SUBSCRIBE_UPDATE carry an absolute group
	// floor (raw, not +1) with a frame start and a frame end, max latency
	// becomes max age, FETCH asks a frame range and GROUP names the index
	// of its first frame (lite-06+).
	FrameRange bool
}

func (v *Version) String() string { return v.Name }

// ALPN is the TLS ALPN on raw QUIC and the WebTransport protocol
// (WT-Available-Protocols / WT-Protocol) that select v directly, from the
// transport's one table (internal/moq/transport/alpn); "" when only the
// legacy SETUP reaches it.
func (v *Version) ALPN() string { return alpn.Of(v.Code) }

// The moq-lite versions.
var (
	Lite01 = &Version{Name: "moq-lite-01", Code: 0xff0dad01, LegacySetup: true,
		SessionStream: true, AnnounceInit: true, SubscribeOK: true, SubscribeOKPriority: true}
	Lite02 = &Version{Name: "moq-lite-02", Code: 0xff0dad02, LegacySetup: true,
		SessionStream: true, AnnounceInit: true, SubscribeOK: true}
	Lite03 = &Version{Name: "moq-lite-03", Code: 0xff0dad03,
		GroupOrder: true, HopCount: true, SubscribeOK: true, SubscribeRange: true, TypedResponses: true, ProbeStream: true}
	Lite04 = &Version{Name: "moq-lite-04", Code: 0xff0dad04,
		GroupOrder: true, ExcludeHop: true, HopCount: true, HopIDs: true, SubscribeOK: true, SubscribeRange: true,
		TypedResponses: true, ProbeStream: true, ProbeRTT: true, Goaway: true}
	Lite05 = &Version{Name: "moq-lite-05", Code: 0xff0dad05,
		SetupStream: true, AnnounceOK: true, ExcludeHop: true, HopCount: true, HopIDs: true,
		AnnounceRestart: true, TrackInfo: true, Fetch: true, FrameTimestamps: true,
		SubscribeRange: true, TypedResponses: true, ProbeStream: true, ProbeRTT: true, Goaway: true,
		Datagrams: true, GroupOrder: true}
	// Lite06 is final moq-lite-06 (draft-lcurley-moq-lite-06), not the
	// moq-lite-06-wip of @moq/net 0.3.x, whose bytes differ: never offered
	// under that name.
	Lite06 = &Version{Name: "moq-lite-06", Code: 0xff0dad06,
		SetupStream: true, AnnounceOK: true, HopCount: true, HopIDs: true, TypedAnnounce: true,
		TrackInfo: true, Fetch: true, FrameTimestamps: true, SubscribeRange: true, FrameRange: true,
		TypedResponses: true, ProbeStream: true, ProbeRTT: true, Goaway: true, Datagrams: true}
)

// Versions lists every moq-lite version spoken, most preferred first. A
// client offers them in this order (ALPN list and WT-Available-Protocols,
// with alpn.Legacy standing for the LegacySetup ones at the place of the
// first of them; then the legacy SETUP's version list); a server prefers
// them in this order on raw QUIC and takes the first one the client
// offers on WebTransport, as the reference relay does. Only moq-lite's
// versions are here: moq-transport's drafts are package ietf's table, and
// the facade (package subscribe) lists both families' versions as
// alpn.Version rows.
//
// To add a version: a Version value above, its entry here at its place in
// the preference order, its token in the ALPN table
// (internal/moq/transport/alpn), and the AppendFor/DecodeFor cases of the
// messages it changes (with tests of their bytes).
var Versions = []*Version{Lite06, Lite05, Lite04, Lite03, Lite02, Lite01}

// ByALPN returns the version an ALPN (or WebTransport protocol) selects
// directly, nil for alpn.Legacy, "" and unknown names.
func ByALPN(name string) *Version {
	code, ok := alpn.CodeOf(name)
	if !ok {
		return nil
	}
	return ByCode(code)
}

// ByCode returns the version with wire code code, or nil.
func ByCode(code uint64) *Version {
	for _, v := range Versions {
		if v.Code == code {
			return v
		}
	}
	return nil
}

// ByName returns the version named name ("moq-lite-04"; "lite-04" and
// "04" also work), or nil.
func ByName(name string) *Version {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, v := range Versions {
		short := strings.TrimPrefix(v.Name, "moq-")
		if n == v.Name || n == short || n == strings.TrimPrefix(short, "lite-") {
			return v
		}
	}
	return nil
}

// LegacyCodes returns the codes of vs that the legacy SETUP can choose, in
// order.
func LegacyCodes(vs []*Version) []uint64 {
	var out []uint64
	for _, v := range vs {
		if v.LegacySetup {
			out = append(out, v.Code)
		}
	}
	return out
}

// Names returns the names of vs joined by ", " (for errors and logs).
func Names(vs []*Version) string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.Name
	}
	return strings.Join(names, ", ")
}

// Lacks says, one phrase per missing capability, what a session on v loses
// compared with the newest moq-lite version, for the log line that makes
// the difference visible (never a silent one). Empty for lite-06.
func (v *Version) Lacks() []string {
	var out []string
	if !v.SetupStream {
		out = append(out, "no SETUP stream (a raw QUIC client sends no path and no token: the session is at the relay's root)")
	}
	if !v.TrackInfo {
		out = append(out, "no TRACK_INFO (track timescale and publisher latency unknown)")
	}
	if !v.Fetch {
		out = append(out, "no FETCH (audio before a live join's first video keyframe is not backfilled)")
	}
	if !v.FrameTimestamps {
		out = append(out, "no frame timestamps (media timestamps come from the container only; catalog frames get 0)")
	}
	if v.SubscribeOK {
		out = append(out, "no SUBSCRIBE_START (the first group is not named: when the first two groups arrive out of order, a recording may begin one group later)")
	}
	if !v.AnnounceOK && !v.AnnounceInit {
		out = append(out, "no ANNOUNCE_OK (broadcasts that end during a reconnect are not reported ended)")
	}
	if !v.SubscribeRange {
		out = append(out, "no subscribe ranges (SUBSCRIBE carries the priority only)")
	}
	if !v.FrameRange {
		out = append(out, "no frame ranges (a group cut by a lost connection is fetched again whole)")
	}
	return out
}
