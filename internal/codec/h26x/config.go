package h26x

import (
	"bytes"
	"fmt"

	"github.com/bluenviron/mediacommon/v2/pkg/bits"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
)

// ParamSets holds the parameter set NAL units of a track, each without start
// code or length prefix. VPS is empty for H.264.
type ParamSets struct {
	VPS, SPS, PPS [][]byte
}

// NALUs returns the parameter sets in the order a decoder needs them in band:
// VPS, then SPS, then PPS. The units alias p.
func (p ParamSets) NALUs() [][]byte {
	out := make([][]byte, 0, len(p.VPS)+len(p.SPS)+len(p.PPS))
	out = append(out, p.VPS...)
	out = append(out, p.SPS...)
	return append(out, p.PPS...)
}

// Complete reports whether p has what a decoder of c needs: at least one SPS
// and one PPS, and for H.265 at least one VPS.
func (p ParamSets) Complete(c Codec) bool {
	return len(p.SPS) > 0 && len(p.PPS) > 0 && (c != H265 || len(p.VPS) > 0)
}

// Equal reports whether p and q hold the same units in the same order.
func (p ParamSets) Equal(q ParamSets) bool {
	return equalUnits(p.VPS, q.VPS) && equalUnits(p.SPS, q.SPS) && equalUnits(p.PPS, q.PPS)
}

// Clone returns a deep copy of p that does not alias any input buffer.
func (p ParamSets) Clone() ParamSets {
	return ParamSets{VPS: cloneUnits(p.VPS), SPS: cloneUnits(p.SPS), PPS: cloneUnits(p.PPS)}
}

func equalUnits(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func cloneUnits(u [][]byte) [][]byte {
	if len(u) == 0 {
		return nil
	}
	n := 0
	for _, x := range u {
		n += len(x)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(u))
	for i, x := range u {
		buf = append(buf, x...)
		out[i] = buf[len(buf)-len(x) : len(buf) : len(buf)]
	}
	return out
}

// reader reads big-endian fields of a decoder configuration record and
// remembers the first overrun.
type reader struct {
	b   []byte
	pos int
	err error
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b)-r.pos {
		r.err = fmt.Errorf("%w: %w: field of %d bytes at offset %d of %d", ErrBadConfig, ErrTruncated, n, r.pos, len(r.b))
		return nil
	}
	v := r.b[r.pos : r.pos+n]
	r.pos += n
	return v
}

func (r *reader) u8() int {
	v := r.bytes(1)
	if v == nil {
		return 0
	}
	return int(v[0])
}

func (r *reader) u16() int {
	v := r.bytes(2)
	if v == nil {
		return 0
	}
	return int(v[0])<<8 | int(v[1])
}

// ParseAVCDecoderConfig parses an AVCDecoderConfigurationRecord (avcC, ISO/IEC
// 14496-15 5.3.3.1) and returns its SPS and PPS units, which alias b, and the
// NAL unit length size of the samples (1, 2 or 4). Errors wrap ErrBadConfig.
func ParseAVCDecoderConfig(b []byte) (ps ParamSets, lengthSize int, err error) {
	r := &reader{b: b}
	if v := r.u8(); r.err == nil && v != 1 {
		return ParamSets{}, 0, fmt.Errorf("%w: avcC configurationVersion %d, want 1", ErrBadConfig, v)
	}
	r.bytes(3) // profile, compatibility, level
	lengthSize = r.u8()&3 + 1
	nsps := r.u8() & 0x1f
	for range nsps {
		ps.SPS = append(ps.SPS, r.bytes(r.u16()))
	}
	npps := r.u8()
	for range npps {
		ps.PPS = append(ps.PPS, r.bytes(r.u16()))
	}
	// Any high-profile extension that follows is derived from the SPS and
	// not needed here.
	if r.err != nil {
		return ParamSets{}, 0, fmt.Errorf("avcC: %w", r.err)
	}
	if lengthSize == 3 {
		return ParamSets{}, 0, fmt.Errorf("%w: avcC lengthSizeMinusOne 2 is reserved", ErrBadConfig)
	}
	for _, u := range ps.SPS {
		if NALUType(H264, u) != int(h264.NALUTypeSPS) {
			return ParamSets{}, 0, fmt.Errorf("%w: avcC SPS entry is NAL unit type %d", ErrBadConfig, NALUType(H264, u))
		}
	}
	for _, u := range ps.PPS {
		if NALUType(H264, u) != int(h264.NALUTypePPS) {
			return ParamSets{}, 0, fmt.Errorf("%w: avcC PPS entry is NAL unit type %d", ErrBadConfig, NALUType(H264, u))
		}
	}
	return ps, lengthSize, nil
}

// ParseHEVCDecoderConfig parses an HEVCDecoderConfigurationRecord (hvcC,
// ISO/IEC 14496-15 8.3.3.1) and returns its VPS, SPS and PPS units, which
// alias b, and the NAL unit length size of the samples (1, 2 or 4). Arrays of
// other NAL unit types (SEI) are skipped. Errors wrap ErrBadConfig.
func ParseHEVCDecoderConfig(b []byte) (ps ParamSets, lengthSize int, err error) {
	r := &reader{b: b}
	if v := r.u8(); r.err == nil && v != 1 {
		return ParamSets{}, 0, fmt.Errorf("%w: hvcC configurationVersion %d, want 1", ErrBadConfig, v)
	}
	r.bytes(20) // profile, tier, level, constraints, chroma, bit depths, frame rate
	lengthSize = r.u8()&3 + 1
	narrays := r.u8()
	for range narrays {
		typ := r.u8() & 0x3f
		n := r.u16()
		for range n {
			u := r.bytes(r.u16())
			if r.err != nil {
				break
			}
			if len(u) == 0 {
				continue
			}
			if NALUType(H265, u) != typ {
				return ParamSets{}, 0, fmt.Errorf("%w: hvcC array of type %d holds NAL unit type %d", ErrBadConfig, typ, NALUType(H265, u))
			}
			switch typ {
			case 32:
				ps.VPS = append(ps.VPS, u)
			case 33:
				ps.SPS = append(ps.SPS, u)
			case 34:
				ps.PPS = append(ps.PPS, u)
			}
		}
	}
	if r.err != nil {
		return ParamSets{}, 0, fmt.Errorf("hvcC: %w", r.err)
	}
	if lengthSize == 3 {
		return ParamSets{}, 0, fmt.Errorf("%w: hvcC lengthSizeMinusOne 2 is reserved", ErrBadConfig)
	}
	return ps, lengthSize, nil
}

// ParseDecoderConfig calls ParseAVCDecoderConfig or ParseHEVCDecoderConfig
// according to c.
func ParseDecoderConfig(c Codec, b []byte) (ParamSets, int, error) {
	switch c {
	case H264:
		return ParseAVCDecoderConfig(b)
	case H265:
		return ParseHEVCDecoderConfig(b)
	}
	return ParamSets{}, 0, fmt.Errorf("%w: %v", ErrUnknownCodec, c)
}

// BuildDecoderConfig calls BuildAVCDecoderConfig or BuildHEVCDecoderConfig
// according to c.
func BuildDecoderConfig(c Codec, ps ParamSets) ([]byte, error) {
	switch c {
	case H264:
		return BuildAVCDecoderConfig(ps.SPS, ps.PPS)
	case H265:
		return BuildHEVCDecoderConfig(ps.VPS, ps.SPS, ps.PPS)
	}
	return nil, fmt.Errorf("%w: %v", ErrUnknownCodec, c)
}

// maxParamSet is the largest unit a record's 16-bit length can describe.
const maxParamSet = 0xffff

func checkUnits(c Codec, what string, units [][]byte, typ int, max int) error {
	if len(units) == 0 {
		return fmt.Errorf("%w: no %s", ErrBadParamSet, what)
	}
	if len(units) > max {
		return fmt.Errorf("%w: %d %s units, a record holds at most %d", ErrBadParamSet, len(units), what, max)
	}
	for _, u := range units {
		if NALUType(c, u) != typ {
			return fmt.Errorf("%w: %s is NAL unit type %d", ErrBadParamSet, what, NALUType(c, u))
		}
		if len(u) > maxParamSet {
			return fmt.Errorf("%w: %s of %d bytes", ErrBadParamSet, what, len(u))
		}
	}
	return nil
}

// BuildAVCDecoderConfig builds an avcC from SPS and PPS units: profile,
// compatibility and level come from the first SPS, NAL unit lengths are 4
// bytes, and for the High profiles (100, 110, 122, 144) the chroma format and
// bit depth extension is added from the SPS, as ffmpeg and x264 write it.
// Errors wrap ErrBadParamSet.
func BuildAVCDecoderConfig(sps, pps [][]byte) ([]byte, error) {
	if err := checkUnits(H264, "SPS", sps, int(h264.NALUTypeSPS), 31); err != nil {
		return nil, err
	}
	if err := checkUnits(H264, "PPS", pps, int(h264.NALUTypePPS), 255); err != nil {
		return nil, err
	}
	info, err := parseAVCSPS(sps[0])
	if err != nil {
		return nil, err
	}
	out := []byte{1, sps[0][1], sps[0][2], sps[0][3], 0xfc | 3, 0xe0 | byte(len(sps))}
	for _, u := range sps {
		out = append(out, byte(len(u)>>8), byte(len(u)))
		out = append(out, u...)
	}
	out = append(out, byte(len(pps)))
	for _, u := range pps {
		out = append(out, byte(len(u)>>8), byte(len(u)))
		out = append(out, u...)
	}
	if info.high {
		out = append(out, 0xfc|byte(info.chroma), 0xf8|byte(info.depthLuma), 0xf8|byte(info.depthChroma), 0)
	}
	return out, nil
}

type avcSPSInfo struct {
	high                           bool
	chroma, depthLuma, depthChroma uint32
}

// parseAVCSPS reads the SPS fields up to the bit depths (H.264 7.3.2.1.1).
func parseAVCSPS(sps []byte) (avcSPSInfo, error) {
	if len(sps) < 4 {
		return avcSPSInfo{}, fmt.Errorf("%w: SPS of %d bytes", ErrBadParamSet, len(sps))
	}
	info := avcSPSInfo{chroma: 1}
	switch sps[1] {
	case 100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135, 144:
	default:
		return info, nil
	}
	// Only the avcC profiles 100/110/122/144 carry the extension.
	info.high = sps[1] == 100 || sps[1] == 110 || sps[1] == 122 || sps[1] == 144
	br := &bitReader{buf: h264.EmulationPreventionRemove(sps[4:min(len(sps), 64)])}
	br.ue() // seq_parameter_set_id
	info.chroma = br.ue()
	if info.chroma == 3 {
		br.skip(1) // separate_colour_plane_flag
	}
	info.depthLuma = br.ue()
	info.depthChroma = br.ue()
	if br.err != nil {
		return info, fmt.Errorf("%w: H.264 SPS: %w", ErrBadParamSet, br.err)
	}
	if info.chroma > 3 || info.depthLuma > 6 || info.depthChroma > 6 {
		return info, fmt.Errorf("%w: H.264 SPS chroma_format_idc %d, bit depths %d/%d", ErrBadParamSet,
			info.chroma, info.depthLuma+8, info.depthChroma+8)
	}
	return info, nil
}

// BuildHEVCDecoderConfig builds an hvcC from VPS, SPS and PPS units. The
// general profile, tier, level and constraint fields are copied from the
// profile_tier_level of the first SPS, chroma format and bit depths come from
// that SPS, numTemporalLayers and temporalIdNested from its header; NAL unit
// lengths are 4 bytes. min_spatial_segmentation_idc, parallelismType and the
// frame rate fields are 0 (unknown). Each array has array_completeness 1.
// Errors wrap ErrBadParamSet.
func BuildHEVCDecoderConfig(vps, sps, pps [][]byte) ([]byte, error) {
	for _, a := range []struct {
		what  string
		units [][]byte
		typ   int
	}{{"VPS", vps, 32}, {"SPS", sps, 33}, {"PPS", pps, 34}} {
		if err := checkUnits(H265, a.what, a.units, a.typ, 0xffff); err != nil {
			return nil, err
		}
	}
	info, err := parseHEVCSPS(sps[0])
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, 64)
	out = append(out, 1)
	out = append(out, info.ptl[:]...)
	out = append(out,
		0xf0, 0x00, // reserved, min_spatial_segmentation_idc 0
		0xfc,                        // reserved, parallelismType 0
		0xfc|byte(info.chroma),      // reserved, chromaFormat
		0xf8|byte(info.depthLuma),   // reserved, bitDepthLumaMinus8
		0xf8|byte(info.depthChroma), // reserved, bitDepthChromaMinus8
		0, 0,                        // avgFrameRate
		byte(info.maxSubLayersMinus1+1)<<3|info.nesting<<2|3, // constantFrameRate 0, numTemporalLayers, temporalIdNested, lengthSizeMinusOne 3
		3, // numOfArrays
	)
	for _, a := range []struct {
		typ   byte
		units [][]byte
	}{{32, vps}, {33, sps}, {34, pps}} {
		out = append(out, 0x80|a.typ, byte(len(a.units)>>8), byte(len(a.units)))
		for _, u := range a.units {
			out = append(out, byte(len(u)>>8), byte(len(u)))
			out = append(out, u...)
		}
	}
	return out, nil
}

type hevcSPSInfo struct {
	ptl                            [12]byte // general_profile_space .. general_level_idc
	maxSubLayersMinus1, nesting    byte
	chroma, depthLuma, depthChroma uint32
}

// parseHEVCSPS reads the SPS fields up to the bit depths (H.265 7.3.2.2.1).
func parseHEVCSPS(sps []byte) (hevcSPSInfo, error) {
	var info hevcSPSInfo
	if len(sps) < 3 {
		return info, fmt.Errorf("%w: SPS of %d bytes", ErrBadParamSet, len(sps))
	}
	// The fields of interest sit in the first ~100 bytes even with
	// sub-layer profiles; bound the unescaping work.
	buf := h264.EmulationPreventionRemove(sps[2:min(len(sps), 160)])
	if len(buf) < 13 {
		return info, fmt.Errorf("%w: H.265 SPS of %d bytes", ErrBadParamSet, len(sps))
	}
	info.maxSubLayersMinus1 = buf[0] >> 1 & 7
	info.nesting = buf[0] & 1
	copy(info.ptl[:], buf[1:13])
	br := &bitReader{buf: buf, pos: 13 * 8}
	n := int(info.maxSubLayersMinus1)
	var profilePresent, levelPresent [8]bool
	for i := range n {
		profilePresent[i] = br.flag()
		levelPresent[i] = br.flag()
	}
	if n > 0 {
		br.skip(2 * (8 - n)) // reserved_zero_2bits
	}
	for i := range n {
		if profilePresent[i] {
			br.skip(88)
		}
		if levelPresent[i] {
			br.skip(8)
		}
	}
	br.ue() // sps_seq_parameter_set_id
	info.chroma = br.ue()
	if info.chroma == 3 {
		br.skip(1) // separate_colour_plane_flag
	}
	br.ue()        // pic_width_in_luma_samples
	br.ue()        // pic_height_in_luma_samples
	if br.flag() { // conformance_window_flag
		br.ue()
		br.ue()
		br.ue()
		br.ue()
	}
	info.depthLuma = br.ue()
	info.depthChroma = br.ue()
	if br.err != nil {
		return info, fmt.Errorf("%w: H.265 SPS: %w", ErrBadParamSet, br.err)
	}
	if info.chroma > 3 || info.depthLuma > 8 || info.depthChroma > 8 {
		return info, fmt.Errorf("%w: H.265 SPS chroma_format_idc %d, bit depths %d/%d", ErrBadParamSet,
			info.chroma, info.depthLuma+8, info.depthChroma+8)
	}
	return info, nil
}

// bitReader reads an RBSP with mediacommon's bit functions, remembering the
// first error and never reading past the end.
type bitReader struct {
	buf []byte
	pos int
	err error
}

func (r *bitReader) ok(n int) bool {
	if r.err == nil && n > len(r.buf)*8-r.pos {
		r.err = fmt.Errorf("%w: %d bits past bit %d of %d", ErrTruncated, n, r.pos, len(r.buf)*8)
	}
	return r.err == nil
}

func (r *bitReader) skip(n int) {
	if r.ok(n) {
		r.pos += n
	}
}

func (r *bitReader) flag() bool {
	if !r.ok(1) {
		return false
	}
	v, _ := bits.ReadFlag(r.buf, &r.pos)
	return v
}

func (r *bitReader) ue() uint32 {
	if !r.ok(1) {
		return 0
	}
	v, err := bits.ReadGolombUnsigned(r.buf, &r.pos)
	if err != nil {
		r.err = err
	}
	return v
}
