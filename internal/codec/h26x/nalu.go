package h26x

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h265"
)

// Codec names the video coding standard of a track.
type Codec int

// Codecs handled by this package.
const (
	H264 Codec = iota + 1
	H265
)

// String returns "h264" or "h265", the mux.CodecFamily names.
func (c Codec) String() string {
	switch c {
	case H264:
		return "h264"
	case H265:
		return "h265"
	}
	return fmt.Sprintf("codec(%d)", int(c))
}

// CodecOf maps a codec family as returned by mux.CodecFamily ("h264",
// "h265") to a Codec. ok is false for every other family.
func CodecOf(family string) (c Codec, ok bool) {
	switch family {
	case "h264":
		return H264, true
	case "h265":
		return H265, true
	}
	return 0, false
}

// Sentinel errors. Errors returned by this package wrap one of them; test
// with errors.Is.
var (
	// ErrTruncated means a length prefix or a record field runs past the
	// end of the input.
	ErrTruncated = errors.New("truncated H.264/H.265 data")
	// ErrNoStartCode means an Annex B payload does not begin with a start
	// code (00 00 01 or 00 00 00 01).
	ErrNoStartCode = errors.New("Annex B data does not start with a start code")
	// ErrBadConfig means an avcC/hvcC decoder configuration record is
	// malformed.
	ErrBadConfig = errors.New("malformed decoder configuration record")
	// ErrBadParamSet means a parameter set NAL unit is missing, of the wrong
	// type, or cannot be parsed.
	ErrBadParamSet = errors.New("bad parameter set")
	// ErrUnknownCodec means a Codec value other than H264 or H265.
	ErrUnknownCodec = errors.New("unknown codec")
)

// NALUType returns the nal_unit_type of nalu: the low 5 bits of the first
// byte for H.264, bits 1-6 for H.265. It returns -1 for an empty NAL unit
// (or H.265 unit shorter than its 2-byte header) and an unknown codec.
func NALUType(c Codec, nalu []byte) int {
	switch {
	case c == H264 && len(nalu) >= 1:
		return int(nalu[0] & 0x1f)
	case c == H265 && len(nalu) >= 2:
		return int(nalu[0]>>1) & 0x3f
	}
	return -1
}

// IsParameterSet reports whether nalu is a sequence or picture parameter set
// (H.264 SPS/PPS) or a video, sequence or picture parameter set (H.265
// VPS/SPS/PPS): the units a decoder configuration record carries.
func IsParameterSet(c Codec, nalu []byte) bool {
	t := NALUType(c, nalu)
	switch c {
	case H264:
		return t == int(h264.NALUTypeSPS) || t == int(h264.NALUTypePPS)
	case H265:
		return t == int(h265.NALUType_VPS_NUT) || t == int(h265.NALUType_SPS_NUT) ||
			t == int(h265.NALUType_PPS_NUT)
	}
	return false
}

// IsAUD reports whether nalu is an access unit delimiter.
func IsAUD(c Codec, nalu []byte) bool {
	t := NALUType(c, nalu)
	switch c {
	case H264:
		return t == int(h264.NALUTypeAccessUnitDelimiter)
	case H265:
		return t == int(h265.NALUType_AUD_NUT)
	}
	return false
}

// IsKeyframe reports whether the access unit nalus can start decoding: it
// holds an H.264 IDR slice, or an H.265 IRAP picture (IDR, CRA or BLA, NAL
// unit types 16-23).
func IsKeyframe(c Codec, nalus [][]byte) bool {
	for _, n := range nalus {
		if isKeyUnit(c, n) {
			return true
		}
	}
	return false
}

// IsKeyframeAnnexB is IsKeyframe for an access unit in Annex B, read in
// place: a start code never occurs inside a NAL unit (emulation
// prevention), so each one is followed by a unit's header.
func IsKeyframeAnnexB(c Codec, p []byte) bool {
	for {
		i := bytes.Index(p, startCode)
		if i < 0 {
			return false
		}
		p = p[i+len(startCode):]
		if isKeyUnit(c, p) {
			return true
		}
	}
}

// isKeyUnit reports whether nalu is an H.264 IDR slice or an H.265 IRAP
// picture's.
func isKeyUnit(c Codec, nalu []byte) bool {
	t := NALUType(c, nalu)
	switch c {
	case H264:
		return t == int(h264.NALUTypeIDR)
	case H265:
		// nuh_temporal_id_plus1 is never 0 in a valid header.
		return t >= int(h265.NALUType_BLA_W_LP) && t <= int(h265.NALUType_RSV_IRAP_VCL23) && nalu[1]&0x07 != 0
	}
	return false
}

// AUD returns an access unit delimiter NAL unit for c that allows any slice
// type (H.264 primary_pic_type 7, H.265 pic_type 2), for containers such as
// MPEG-TS whose players expect one at the start of each access unit. The
// returned slice is fresh; nil for an unknown codec.
func AUD(c Codec) []byte {
	switch c {
	case H264:
		return []byte{0x09, 0xf0}
	case H265:
		return []byte{0x46, 0x01, 0x50}
	}
	return nil
}
