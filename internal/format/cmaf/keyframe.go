package cmaf

import (
	"encoding/binary"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/vp8"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/vp9"
)

// isKey says whether a decoder can start at the sample: from the bitstream
// where the codec allows it cheaply, from the sample flags otherwise.
func (d *Demuxer) isKey(p []byte, flags uint32) bool {
	in := d.init
	if !in.Video {
		return true
	}
	switch in.Family {
	case "h264":
		return hasNAL(p, in.NALLength, func(h byte) bool { return h&0x1f == 5 })
	case "h265":
		// IRAP: BLA, IDR and CRA pictures (types 16 to 23).
		return hasNAL(p, in.NALLength, func(h byte) bool { t := (h >> 1) & 0x3f; return t >= 16 && t <= 23 })
	case "av1":
		return av1Key(p)
	case "vp8":
		return vp8.IsRandomAccess(p)
	case "vp9":
		return vp9.IsRandomAccess(p)
	}
	return flags&sampleIsNonSync == 0
}

// hasNAL reports whether a length-prefixed access unit holds a NAL unit
// whose first header byte satisfies is.
func hasNAL(p []byte, lenSize int, is func(byte) bool) bool {
	for len(p) >= lenSize {
		var n uint64
		for _, c := range p[:lenSize] {
			n = n<<8 | uint64(c)
		}
		p = p[lenSize:]
		if n == 0 || n > uint64(len(p)) {
			return false
		}
		if is(p[0]) {
			return true
		}
		p = p[n:]
	}
	return false
}

// AV1 OBU types.
const (
	obuSequenceHeader = 1
	obuFrameHeader    = 3
	obuFrame          = 6
)

// av1Key reports whether a temporal unit (low-overhead OBUs) is a key
// frame: a sequence header, then a frame header whose frame_type is
// KEY_FRAME (or a reduced still picture header, where every frame is one).
func av1Key(p []byte) bool {
	seq, reduced := false, false
	for len(p) > 0 {
		h := p[0]
		typ := (h >> 3) & 0xf
		hdr := 1
		if h&0x04 != 0 {
			hdr = 2 // extension header
		}
		if len(p) < hdr {
			return false
		}
		var size uint64
		if h&0x02 != 0 {
			v, n := binary.Uvarint(p[hdr:]) // leb128 is a little-endian base-128 varint
			if n <= 0 {
				return false
			}
			size, hdr = v, hdr+n
		} else {
			size = uint64(len(p) - hdr)
		}
		if size > uint64(len(p)-hdr) {
			return false
		}
		body := p[hdr : hdr+int(size)]
		p = p[hdr+int(size):]
		switch typ {
		case obuSequenceHeader:
			if len(body) == 0 {
				return false
			}
			seq, reduced = true, body[0]&0x08 != 0
		case obuFrameHeader, obuFrame:
			if !seq {
				return false
			}
			if reduced {
				return true
			}
			// show_existing_frame (1 bit), then frame_type (2 bits):
			// KEY_FRAME is 0.
			return len(body) > 0 && body[0]&0x80 == 0 && body[0]&0x60 == 0
		}
	}
	return false
}

// AV1Keyframe reports whether an AV1 temporal unit (low-overhead OBUs, as
// LOC and legacy payloads carry it too) is a key frame: a sequence header,
// then a frame header whose frame_type is KEY_FRAME.
func AV1Keyframe(p []byte) bool { return av1Key(p) }
