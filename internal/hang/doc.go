// Package hang is the one place that knows how hang media travels in
// object payloads: the "legacy" packaging (a varint microsecond timestamp
// before the codec payload), "loc" (draft-ietf-moq-loc properties before
// the codec payload, or, on moq-transport, the bare codec payload with the
// timestamp in the object's extension) and "cmaf" (one or more moof+mdat
// per object, read against the init the catalog carries), and catalog
// tracks, whose payload is the frame itself.
//
// Both directions live here, for every wire protocol alike: a Decoder turns
// the objects of one group (a moq-lite group stream, a moq-transport
// subgroup, a FETCH of either) into model frames, and Track.AppendPayload
// turns a published model frame into the payload that goes on the wire.
// Protocol code hands objects in and takes payloads out; it never looks
// inside them. Sessions pick a Track from the catalog (ForRendition) and
// ask it for the timescale of the wire timestamps (Track.Timescale).
//
// Hand-written: legacy and loc are a few varints that no Go library
// implements; fMP4 parsing is package internal/format/cmaf's, which this package
// drives.
package hang
