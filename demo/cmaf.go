package demo

import (
	"fmt"
	"slices"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/av1"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/flac"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4/seekablebuffer"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mp4/codecs"

	"github.com/moq-export/moq-export/internal/codec/h26x"
	"github.com/moq-export/moq-export/internal/samples"
)

// videoTimescale is the mdhd timescale of the demo's CMAF video tracks:
// the samples' own (their timestamps are microseconds), so the demo in
// CMAF carries exactly the legacy demo's times. (ffmpeg's files, which the
// CMAF tests use, have 15360, 12800, 90000 and the like.)
const videoTimescale = 1_000_000

// cmafTrack packages the frames of one sample the way `moq import fmp4`
// publishes ffmpeg's fragmented MP4: an init segment (ftyp+moov, written
// by mediacommon) for the catalog, and one single-track moof+mdat per frame
// with the decode time in the tfdt, the duration and the composition
// offset in the trun, at the media's own timescale.
type cmafTrack struct {
	init      []byte
	timescale int64
	dts       []int64 // decode time of each frame, µs, decode order
	dur       []int64 // until the next frame's decode time, µs
	seq       uint32
}

// newCMAFTrack builds the init of sample s and its decode times. shift is
// added to every timestamp (the tfdt cannot go below zero, while a
// B-frame stream decodes before it presents).
func newCMAFTrack(s *samples.Sample, shift int64) (*cmafTrack, error) {
	c, err := cmafCodec(s)
	if err != nil {
		return nil, err
	}
	ts := int64(videoTimescale)
	if s.Kind == "audio" {
		ts = int64(s.SampleRate)
	}
	if ts <= 0 {
		return nil, fmt.Errorf("demo: sample %q has no sample rate", s.Name)
	}
	var buf seekablebuffer.Buffer
	in := fmp4.Init{Tracks: []*fmp4.InitTrack{{ID: 1, TimeScale: uint32(ts), Codec: c}}}
	if err := in.Marshal(&buf); err != nil {
		return nil, fmt.Errorf("demo: %s init: %w", s.Name, err)
	}
	t := &cmafTrack{init: buf.Bytes(), timescale: ts}
	t.dts, t.dur = decodeTimes(s, shift)
	return t, nil
}

// decodeTimes returns the decode time and duration of each frame of s, in
// µs with shift added: the presentation times in order, moved back by the
// stream's reorder delay, so that no frame decodes after it presents. The
// last frame lasts until the first one of the next loop.
func decodeTimes(s *samples.Sample, shift int64) (dts, dur []int64) {
	pts := make([]int64, len(s.Frames))
	for i, f := range s.Frames {
		pts[i] = f.Timestamp
	}
	sorted := slices.Clone(pts)
	slices.Sort(sorted)
	var delay int64
	for i := range pts {
		delay = max(delay, sorted[i]-pts[i])
	}
	dts = make([]int64, len(pts))
	for i := range sorted {
		dts[i] = sorted[i] - delay + shift
	}
	dur = make([]int64, len(pts))
	for i := range dts {
		next := dts[0] + s.Duration()
		if i+1 < len(dts) {
			next = dts[i+1]
		}
		dur[i] = next - dts[i]
	}
	return dts, dur
}

// reorderDelay returns how far sample s decodes before it presents.
func reorderDelay(s *samples.Sample) int64 {
	dts, _ := decodeTimes(s, 0)
	if len(dts) == 0 || dts[0] >= 0 {
		return 0
	}
	return (-dts[0] + 999) / 1000 * 1000 // whole milliseconds: exact in every timescale
}

// ticks converts µs to the track's timescale, rounding to nearest.
func (t *cmafTrack) ticks(us int64) int64 {
	return (us*t.timescale + 500_000) / 1_000_000
}

// fragment returns the moof+mdat of frame i of a loop that starts at base
// µs; pts is its presentation time (µs, shift included).
func (t *cmafTrack) fragment(f samples.SampleFrame, i int, base, pts int64) ([]byte, error) {
	dts := t.ticks(base + t.dts[i])
	next := t.ticks(base + t.dts[i] + t.dur[i])
	t.seq++
	p := fmp4.Part{SequenceNumber: t.seq, Tracks: []*fmp4.PartTrack{{
		ID: 1, BaseTime: uint64(max(dts, 0)),
		Samples: []*fmp4.Sample{{
			Duration:        uint32(next - dts),
			PTSOffset:       int32(t.ticks(base+pts) - dts),
			IsNonSyncSample: !f.Keyframe,
			Payload:         f.Payload,
		}},
	}}}
	var buf seekablebuffer.Buffer
	if err := p.Marshal(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// cmafCodec returns the sample's codec as mediacommon writes it into an
// init segment. mediacommon has no VP8 or AC-3 sample entry writer from
// our data (AC-3 needs fields of the bitstream's own header), so those
// samples have no CMAF form in the demo.
func cmafCodec(s *samples.Sample) (codecs.Codec, error) {
	switch s.Name {
	case "h264":
		ps, _, err := h26x.ParseAVCDecoderConfig(s.Description)
		if err != nil || len(ps.SPS) == 0 || len(ps.PPS) == 0 {
			return nil, fmt.Errorf("demo: h264 avcC: %v", err)
		}
		return &codecs.H264{SPS: ps.SPS[0], PPS: ps.PPS[0]}, nil
	case "h265":
		ps, _, err := h26x.ParseHEVCDecoderConfig(s.Description)
		if err != nil || len(ps.VPS) == 0 || len(ps.SPS) == 0 || len(ps.PPS) == 0 {
			return nil, fmt.Errorf("demo: h265 hvcC: %v", err)
		}
		return &codecs.H265{VPS: ps.VPS[0], SPS: ps.SPS[0], PPS: ps.PPS[0]}, nil
	case "av1":
		for _, f := range s.Frames {
			var tu av1.Bitstream
			if !f.Keyframe || tu.Unmarshal(f.Payload) != nil {
				continue
			}
			for _, obu := range tu {
				if len(obu) > 0 && av1.OBUType((obu[0]>>3)&0xf) == av1.OBUTypeSequenceHeader {
					return &codecs.AV1{SequenceHeader: obu}, nil
				}
			}
		}
		return nil, fmt.Errorf("demo: av1 sample without a sequence header")
	case "vp9":
		return &codecs.VP9{Width: s.Width, Height: s.Height, Profile: 0, BitDepth: 8, ChromaSubsampling: 1}, nil
	case "aac":
		var asc mpeg4audio.AudioSpecificConfig
		if err := asc.Unmarshal(s.Description); err != nil {
			return nil, fmt.Errorf("demo: aac config: %w", err)
		}
		return &codecs.MPEG4Audio{Config: asc}, nil
	case "opus":
		return &codecs.Opus{ChannelCount: s.Channels}, nil
	case "flac":
		// "fLaC", a metadata block header, then STREAMINFO.
		if len(s.Description) < 8+34 {
			return nil, fmt.Errorf("demo: flac description of %d bytes", len(s.Description))
		}
		var si flac.StreamInfo
		if err := si.Unmarshal(s.Description[8:]); err != nil {
			return nil, fmt.Errorf("demo: flac STREAMINFO: %w", err)
		}
		return &codecs.FLAC{StreamInfo: &si}, nil
	case "mp3":
		return &codecs.MPEG1Audio{SampleRate: s.SampleRate, ChannelCount: s.Channels}, nil
	}
	return nil, fmt.Errorf("demo: no CMAF form of the %s sample (mediacommon writes no such init)", s.Name)
}
