package h26x

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// Framing is how the NAL units of an H.264/H.265 access unit are delimited
// in a payload that comes without a decoder configuration record.
type Framing int32

// Framings.
const (
	// FramingUnknown: not decided yet.
	FramingUnknown Framing = iota
	// FramingAnnexB: start codes (00 00 01, 00 00 00 01), the form hang
	// publishers send without a description.
	FramingAnnexB
	// FramingLengthPrefixed: 4-byte big-endian lengths (AVCC), as
	// MediaMTX sends avc3/hev1 without a description.
	FramingLengthPrefixed
)

func (f Framing) String() string {
	switch f {
	case FramingAnnexB:
		return "Annex B"
	case FramingLengthPrefixed:
		return "length-prefixed"
	}
	return "unknown"
}

// ErrUnframed means a payload that parses neither as Annex B nor as
// length-prefixed NAL units.
var ErrUnframed = errors.New("payload is neither Annex B nor length-prefixed NAL units")

// DetectFraming tells the framing of one access unit. A payload whose
// 4-byte lengths cut it into NAL units that end exactly at its end, each
// with a valid header (forbidden bit clear, a type the codec defines), is
// length-prefixed, even when its first bytes look like a start code: a
// NAL unit of 256 to 511 bytes has the length 00 00 01 xx, which a
// start-code reader would take for Annex B and mangle. Otherwise a payload
// that begins with a start code is Annex B; anything else is
// FramingUnknown.
func DetectFraming(c Codec, p []byte) Framing {
	if lengthPrefixed(c, p) {
		return FramingLengthPrefixed
	}
	if annexB(c, p) {
		return FramingAnnexB
	}
	return FramingUnknown
}

// lengthPrefixed reports whether p is one or more 4-byte length-prefixed
// NAL units with valid headers, ending exactly at the end of p.
func lengthPrefixed(c Codec, p []byte) bool {
	if len(p) < 5 {
		return false
	}
	for len(p) > 0 {
		if len(p) < 4 {
			return false
		}
		n := uint64(p[0])<<24 | uint64(p[1])<<16 | uint64(p[2])<<8 | uint64(p[3])
		p = p[4:]
		if n == 0 || n > uint64(len(p)) || !validHeader(c, p[:n]) {
			return false
		}
		p = p[n:]
	}
	return true
}

// annexB reports whether p begins with a start code followed by a NAL
// unit with a valid header.
func annexB(c Codec, p []byte) bool {
	i := 0
	for i < len(p) && i < 4 && p[i] == 0 {
		i++
	}
	if i < 2 || i >= len(p) || p[i] != 1 {
		return false
	}
	return validHeader(c, p[i+1:])
}

// validHeader reports whether nalu starts with a NAL unit header the codec
// allows: the forbidden bit clear, and for H.265 two header bytes with a
// non-zero temporal id.
func validHeader(c Codec, nalu []byte) bool {
	if len(nalu) == 0 || nalu[0]&0x80 != 0 {
		return false
	}
	switch c {
	case H264:
		return nalu[0]&0x1f != 0 // type 0 is unspecified
	case H265:
		return len(nalu) >= 2 && nalu[1]&0x07 != 0
	}
	return false
}

// Deframer turns the payloads of one H.264/H.265 track that has no decoder
// configuration record into Annex B, the form the muxers take for such a
// track, whichever of the two framings the publisher uses. The framing is
// decided once per track, from the first payload that says; each payload
// is still checked, so a frame that parses neither way is refused
// (ErrUnframed) and counted, never passed on. Safe for concurrent use
// (the groups of one track are read concurrently).
type Deframer struct {
	codec   Codec
	framing atomic.Int32
	// Refused counts the payloads refused as ErrUnframed.
	Refused atomic.Uint64
}

// NewDeframer returns a Deframer for a track of codec c.
func NewDeframer(c Codec) *Deframer { return &Deframer{codec: c} }

// Framing returns the track's framing as decided so far.
func (d *Deframer) Framing() Framing { return Framing(d.framing.Load()) }

// AnnexB returns p in Annex B: p itself when the track is Annex B, else
// its NAL units after 4-byte start codes, appended to dst[:0]. decided is
// true for the payload that decided the track's framing. A payload that
// parses as neither is an error wrapping ErrUnframed.
func (d *Deframer) AnnexB(dst, p []byte) (out []byte, decided bool, err error) {
	f := d.Framing()
	if f == FramingUnknown {
		if f = DetectFraming(d.codec, p); f != FramingUnknown {
			decided = d.framing.CompareAndSwap(int32(FramingUnknown), int32(f))
			f = d.Framing()
		}
	}
	switch f {
	case FramingLengthPrefixed:
		if lengthPrefixed(d.codec, p) {
			return appendLengthPrefixedAsAnnexB(dst[:0], p), decided, nil
		}
		if annexB(d.codec, p) {
			// A publisher that changed its mind: what parses is kept.
			return p, decided, nil
		}
	case FramingAnnexB:
		if annexB(d.codec, p) {
			return p, decided, nil
		}
		if lengthPrefixed(d.codec, p) {
			return appendLengthPrefixedAsAnnexB(dst[:0], p), decided, nil
		}
	}
	d.Refused.Add(1)
	return nil, decided, fmt.Errorf("%w (%d bytes, first % x)", ErrUnframed, len(p), p[:min(len(p), 6)])
}

// appendLengthPrefixedAsAnnexB appends the NAL units of p (checked by
// lengthPrefixed) after 4-byte start codes.
func appendLengthPrefixedAsAnnexB(dst, p []byte) []byte {
	for len(p) >= 4 {
		n := int(p[0])<<24 | int(p[1])<<16 | int(p[2])<<8 | int(p[3])
		dst = append(dst, 0, 0, 0, 1)
		dst = append(dst, p[4:4+n]...)
		p = p[4+n:]
	}
	return dst
}
