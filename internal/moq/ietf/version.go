package ietf

import (
	"fmt"

	"github.com/moq-export/moq-export/internal/moq/transport/alpn"
)

// Version is a moq-transport draft as its SETUP wire code.
type Version uint32

// The drafts this package knows.
const (
	Draft14 Version = 0xff00000e
	Draft15 Version = 0xff00000f
	Draft16 Version = 0xff000010
	Draft17 Version = 0xff000011
	Draft18 Version = 0xff000012
	Draft19 Version = 0xff000013
	Draft20 Version = 0xff000014
	// Draft21 is draft 20 on the wire (an editorial draft) under its own
	// ALPN.
	Draft21 Version = 0xff000015
	// Draft22 changes one thing: the LOCATION_FILTER parameter is a
	// Location Filter Type and exactly its fields, without a length.
	Draft22 Version = 0xff000016
)

// Newest is the newest draft this package knows.
const Newest = Draft22

// ALPN returns the TLS ALPN / WebTransport protocol that pins v, from the
// transport's one table (internal/moq/transport/alpn); "" for a draft
// it does not list. Draft 14 is also reached through the shared
// alpn.Legacy (or none over WebTransport), whose CLIENT_SETUP lists
// versions.
func (v Version) ALPN() string { return alpn.Of(uint64(v)) }

// Number returns the draft number (14 for Draft14).
func (v Version) Number() int { return int(v - 0xff000000) }

func (v Version) String() string { return fmt.Sprintf("moq-transport-%d", v.Number()) }

// Known reports whether this package knows v.
func (v Version) Known() bool { return v >= Draft14 && v <= Newest }

// VersionOfALPN returns the draft an ALPN pins ("moql" pins none: its
// CLIENT_SETUP negotiates).
func VersionOfALPN(name string) (Version, bool) {
	code, ok := alpn.CodeOf(name)
	if v := Version(code); ok && v.Known() {
		return v, true
	}
	return 0, false
}

// The version table: one row per draft with what its wire and session
// carry. Session code (ietfsub, ietfpub, the facade's compat lessons) asks
// these capabilities, never a draft number; a new draft is one row here
// plus the message layouts it changes (with byte vectors in the tests).
type capabilities struct {
	// leadingOnes: varints are leading-ones (17+), not QUIC's 2-bit length.
	leadingOnes bool
	// controlStream: requests share one bidi control stream (14-16), not a
	// stream each with the SETUP on a uni stream (17+).
	controlStream bool
	// flowControl: MAX_REQUEST_ID limits request ids (14-16).
	flowControl bool
	// requestIDInResponses: responses repeat the request id (14-16).
	requestIDInResponses bool
	// perRequestResponses: each request has its own OK and ERROR types
	// (SUBSCRIBE_NAMESPACE_OK, FETCH_ERROR, TRACK_STATUS_OK, ...), some
	// sharing a type code with later drafts' NAMESPACE and NAMESPACE_DONE
	// (14); later drafts answer with REQUEST_OK / REQUEST_ERROR.
	perRequestResponses bool
	// subscribeParams: SUBSCRIBE's priority, group order, forward and
	// filter travel as optional parameters (15+), not as fields (14).
	subscribeParams bool
	// descendingFetch: a FETCH can ask its groups newest first (14); later
	// drafts' fetch objects carry their group as a delta read ascending.
	descendingFetch bool
	// deltaParams, deltaProperties: parameter and object property types are
	// delta-encoded (16+).
	deltaParams, deltaProperties bool
	// namespaceStream: SUBSCRIBE_NAMESPACE is answered on a stream of its
	// own with NAMESPACE / NAMESPACE_DONE entries (16+).
	namespaceStream bool
	// namespaceDoneByID: PUBLISH_NAMESPACE_DONE names the request id of the
	// PUBLISH_NAMESPACE it ends, not the namespace (16).
	namespaceDoneByID bool
	// typedParams: parameters are typed by id (17+), not by its parity.
	typedParams bool
	// requiredDelta: new requests carry the Required Request ID Delta
	// after their request id (17).
	requiredDelta bool
	// layout18: a server may speak draft 18's messages under this draft's
	// ALPN, as MediaMTX does (16, 17).
	layout18 bool
	// writesTrackProperties: SUBSCRIBE_OK, REQUEST_OK and PUBLISH end with
	// Track Properties (17+); readsTrackProperties: a decoder reads them
	// (16+: draft 16 peers end the message there, the block reads empty).
	writesTrackProperties, readsTrackProperties bool
	// firstObjectBit: subgroup header types carry FIRST_OBJECT 0x40 (18+).
	firstObjectBit bool
	// relativeFilter: the subscription filter is a field list whose count
	// is its meaning and can start a number of groups back (20+), not a
	// tagged filter (14-19).
	relativeFilter bool
	// largestObjectMidGroup: the Largest Object filter starts at the next
	// object, to the letter (20+); before, at the start of the newest
	// group, as the reference relay and @moq/net serve it.
	largestObjectMidGroup bool
	// typedFilter: LOCATION_FILTER is a Location Filter Type and its fields
	// without a length (22+).
	typedFilter bool
}

// drafts is the version table, Draft14 first, one row per draft.
var drafts = [...]struct {
	v Version
	capabilities
}{
	{Draft14, capabilities{controlStream: true, flowControl: true, requestIDInResponses: true,
		perRequestResponses: true, descendingFetch: true}},
	{Draft15, capabilities{controlStream: true, flowControl: true, requestIDInResponses: true,
		subscribeParams: true}},
	{Draft16, capabilities{controlStream: true, flowControl: true, requestIDInResponses: true,
		subscribeParams: true, deltaParams: true, deltaProperties: true, namespaceStream: true,
		namespaceDoneByID: true, layout18: true, readsTrackProperties: true}},
	{Draft17, capabilities{leadingOnes: true, subscribeParams: true, deltaParams: true, deltaProperties: true,
		namespaceStream: true, typedParams: true, requiredDelta: true, layout18: true,
		writesTrackProperties: true, readsTrackProperties: true}},
	{Draft18, capabilities{leadingOnes: true, subscribeParams: true, deltaParams: true, deltaProperties: true,
		namespaceStream: true, typedParams: true, writesTrackProperties: true, readsTrackProperties: true,
		firstObjectBit: true}},
	{Draft19, capabilities{leadingOnes: true, subscribeParams: true, deltaParams: true, deltaProperties: true,
		namespaceStream: true, typedParams: true, writesTrackProperties: true, readsTrackProperties: true,
		firstObjectBit: true}},
	{Draft20, capabilities{leadingOnes: true, subscribeParams: true, deltaParams: true, deltaProperties: true,
		namespaceStream: true, typedParams: true, writesTrackProperties: true, readsTrackProperties: true,
		firstObjectBit: true, relativeFilter: true, largestObjectMidGroup: true}},
	// Draft 21 is draft 20 on the wire.
	{Draft21, capabilities{leadingOnes: true, subscribeParams: true, deltaParams: true, deltaProperties: true,
		namespaceStream: true, typedParams: true, writesTrackProperties: true, readsTrackProperties: true,
		firstObjectBit: true, relativeFilter: true, largestObjectMidGroup: true}},
	{Draft22, capabilities{leadingOnes: true, subscribeParams: true, deltaParams: true, deltaProperties: true,
		namespaceStream: true, typedParams: true, writesTrackProperties: true, readsTrackProperties: true,
		firstObjectBit: true, relativeFilter: true, largestObjectMidGroup: true, typedFilter: true}},
}

// Versions lists the drafts of the table, newest first: the order a
// client offers them in.
func Versions() []Version {
	out := make([]Version, len(drafts))
	for i, d := range drafts {
		out[len(drafts)-1-i] = d.v
	}
	return out
}

// caps returns v's row; a draft outside the table reads as the nearest
// one (the codec's fuzzers and error paths may hold any code).
func (v Version) caps() *capabilities {
	i := int(v) - int(Draft14)
	i = max(0, min(i, len(drafts)-1))
	return &drafts[i].capabilities
}

// LeadingOnes reports whether v uses the leading-ones varint (drafts 17+).
func (v Version) LeadingOnes() bool { return v.caps().leadingOnes }

// ControlStream reports whether v multiplexes its requests on one
// bidirectional control stream (drafts 14-16) rather than one stream per
// request with the SETUP on a unidirectional stream (drafts 17+).
func (v Version) ControlStream() bool { return v.caps().controlStream }

// FlowControl reports whether v limits request ids with MAX_REQUEST_ID
// (drafts 14-16; later drafts dropped it).
func (v Version) FlowControl() bool { return v.caps().flowControl }

// RequestIDInResponses reports whether responses repeat the request id
// (drafts 14-16; later drafts answer on the request's own stream).
func (v Version) RequestIDInResponses() bool { return v.caps().requestIDInResponses }

// PerRequestResponses reports whether each request has response types of
// its own (SUBSCRIBE_NAMESPACE_OK, FETCH_ERROR, TRACK_STATUS_OK,
// PUBLISH_NAMESPACE_ERROR: draft 14), rather than REQUEST_OK and
// REQUEST_ERROR; draft 14's share type codes with later drafts' NAMESPACE
// (0x08) and NAMESPACE_DONE.
func (v Version) PerRequestResponses() bool { return v.caps().perRequestResponses }

// SubscribeParams reports whether SUBSCRIBE's priority, group order,
// forward and filter are optional parameters (15+) rather than fields.
func (v Version) SubscribeParams() bool { return v.caps().subscribeParams }

// DescendingFetch reports whether a FETCH may deliver its groups newest
// first (draft 14).
func (v Version) DescendingFetch() bool { return v.caps().descendingFetch }

// NamespaceStream reports whether SUBSCRIBE_NAMESPACE is answered on a
// stream of its own, with NAMESPACE and NAMESPACE_DONE entries (16+).
func (v Version) NamespaceStream() bool { return v.caps().namespaceStream }

// NamespaceDoneByID reports whether PUBLISH_NAMESPACE_DONE names the
// request id of its PUBLISH_NAMESPACE rather than the namespace (16).
func (v Version) NamespaceDoneByID() bool { return v.caps().namespaceDoneByID }

// RequiredDelta reports whether new requests carry the Required Request ID
// Delta after their request id (17), a field MediaMTX does not read.
func (v Version) RequiredDelta() bool { return v.caps().requiredDelta }

// Layout18 reports whether a server may speak draft 18's messages under
// v's ALPN, as MediaMTX does (16, 17). On a draft with a control stream
// (16) that server reads draft 17's SETUP options there too.
func (v Version) Layout18() bool { return v.caps().layout18 }

// RelativeFilter reports whether the subscription filter is a field list
// that can start a number of groups back (Relative, 20+).
func (v Version) RelativeFilter() bool { return v.caps().relativeFilter }

// LargestObjectMidGroup reports whether the Largest Object filter starts
// at the next object to the letter (20+), rather than at the start of the
// newest group (14-19, as the reference relay and @moq/net serve it).
func (v Version) LargestObjectMidGroup() bool { return v.caps().largestObjectMidGroup }

// deltaParams reports whether parameter types are delta-encoded (16+).
func (v Version) deltaParams() bool { return v.caps().deltaParams }

// typedParams reports whether message parameters are typed by id (17+)
// rather than by the parity of the id.
func (v Version) typedParams() bool { return v.caps().typedParams }

// deltaProperties reports whether object extension (property) types are
// delta-encoded (16+).
func (v Version) deltaProperties() bool { return v.caps().deltaProperties }

// firstObjectBit reports whether subgroup header types carry the
// FIRST_OBJECT bit 0x40 (18+).
func (v Version) firstObjectBit() bool { return v.caps().firstObjectBit }

// writesTrackProperties reports whether SUBSCRIBE_OK, REQUEST_OK and
// PUBLISH end with Track Properties (17+); readsTrackProperties whether a
// decoder reads them (16+: draft 16 peers end the message there, so the
// block reads as empty).
func (v Version) writesTrackProperties() bool { return v.caps().writesTrackProperties }
func (v Version) readsTrackProperties() bool  { return v.caps().readsTrackProperties }

// typedFilter reports whether LOCATION_FILTER is a Location Filter Type and
// its fields with no length (22+), rather than a length-prefixed field list
// whose count is its meaning (20-21) or a tagged filter (14-19).
func (v Version) typedFilter() bool { return v.caps().typedFilter }
