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

// LeadingOnes reports whether v uses the leading-ones varint (drafts 17+).
func (v Version) LeadingOnes() bool { return v >= Draft17 }

// ControlStream reports whether v multiplexes its requests on one
// bidirectional control stream (drafts 14-16) rather than one stream per
// request with the SETUP on a unidirectional stream (drafts 17+).
func (v Version) ControlStream() bool { return v <= Draft16 }

// FlowControl reports whether v limits request ids with MAX_REQUEST_ID
// (drafts 14-16; later drafts dropped it).
func (v Version) FlowControl() bool { return v <= Draft16 }

// RequestIDInResponses reports whether responses repeat the request id
// (drafts 14-16; later drafts answer on the request's own stream).
func (v Version) RequestIDInResponses() bool { return v <= Draft16 }

// deltaParams reports whether parameter types are delta-encoded (16+).
func (v Version) deltaParams() bool { return v >= Draft16 }

// typedParams reports whether message parameters are typed by id (17+)
// rather than by the parity of the id.
func (v Version) typedParams() bool { return v >= Draft17 }

// deltaProperties reports whether object extension (property) types are
// delta-encoded (16+).
func (v Version) deltaProperties() bool { return v >= Draft16 }

// firstObjectBit reports whether subgroup header types carry the
// FIRST_OBJECT bit 0x40 (18+).
func (v Version) firstObjectBit() bool { return v >= Draft18 }

// writesTrackProperties reports whether SUBSCRIBE_OK, REQUEST_OK and
// PUBLISH end with Track Properties (17+); readsTrackProperties whether a
// decoder reads them (16+: draft 16 peers end the message there, so the
// block reads as empty).
func (v Version) writesTrackProperties() bool { return v >= Draft17 }
func (v Version) readsTrackProperties() bool  { return v >= Draft16 }

// typedFilter reports whether LOCATION_FILTER is a Location Filter Type and
// its fields with no length (22+), rather than a length-prefixed field list
// whose count is its meaning (20-21) or a tagged filter (14-19).
func (v Version) typedFilter() bool { return v >= Draft22 }
