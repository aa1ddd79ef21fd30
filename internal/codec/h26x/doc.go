// Package h26x is the H.264/H.265 payload plumbing shared by the muxers
// (mux/flv, mux/mkv, mux/ts): it converts between the two payload forms a
// broadcast carries, keeps a track's parameter sets and decoder
// configuration record, and estimates decode timestamps.
//
// A hang broadcast carries H.264/H.265 frames in one of two forms (see
// mux.Frame): AVCC, length-prefixed NAL units, when the catalog has a
// description (avcC/hvcC); Annex B with in-band parameter sets when it has
// none (the browser publisher). The pieces:
//
//   - SplitAnnexB, SplitAVCC, AppendAnnexB, AppendAVCC: split and join NAL
//     units. Splitting never copies; the units alias the input.
//   - ParseAVCDecoderConfig, ParseHEVCDecoderConfig, BuildAVCDecoderConfig,
//     BuildHEVCDecoderConfig: read and write avcC/hvcC records (ISO/IEC
//     14496-15) to and from ParamSets.
//   - IsParameterSet, IsAUD, IsKeyframe, NALUType, AUD: NAL unit
//     classification.
//   - Normalizer: one per track. Frame takes a payload in the track's input
//     form and returns its NAL units without parameter sets and AUDs; it
//     follows in-band parameter sets and offers Config (the current
//     avcC/hvcC), ParamSets and ConfigChanged. A muxer then writes AVCC
//     (AppendAVCC, FLV/MKV) or Annex B with ParamSets().NALUs() before each
//     keyframe (AppendAnnexB, MPEG-TS).
//   - DTS: decode timestamps in microseconds from PTS in decode order, for
//     containers that store DTS (MPEG-TS, FLV, MP4): for H.264 whose SPS
//     states its reorder depth, from the presentation times alone (a
//     window of the smallest ones, as ffmpeg), else from the picture order
//     count through mediacommon's extractor. A gap before a
//     keyframe (frames lost without a discontinuity said) starts the
//     estimate again there, as Reset does.
//   - DetectFraming, Deframer: for a track without a description, tell
//     Annex B from 4-byte length-prefixed units (MediaMTX sends avc3/hev1
//     that way) from the payload itself, and turn such a track into Annex
//     B once; a payload that parses neither way is refused and counted.
//
// The root package's Sample.AnnexB turns an embedded AVCC sample into the
// browser form for tests.
//
// What comes from github.com/bluenviron/mediacommon/v2: NAL unit type
// constants, emulation prevention removal, Exp-Golomb bit reading and the
// DTS extractors (pkg/codecs/h264, h265, bits). What is written here and why:
//
//   - The splitters: mediacommon's h264.AnnexB/AVCC only take 4-byte
//     lengths (avcC allows 1 and 2), cap an access unit at 50 NAL units
//     (more than sliced encoders may send), allocate per call and offer no
//     append form. Ours return subslices of the input, reuse their buffers inside
//     Normalizer, and are fuzzed.
//   - The avcC/hvcC records: mediacommon has no public API for them (its
//     internal/mp4 goes through abema/go-mp4's reflection-based box
//     codec), and building an hvcC needs the SPS's raw profile_tier_level
//     bytes and fields that its h265.SPS parser rejects for streams with
//     sub-layer profiles. The records are small fixed layouts; the SPS
//     fields they need (profile/tier/level, chroma format, bit depths) are
//     read here with mediacommon's bit reader.
package h26x
