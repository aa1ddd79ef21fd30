package mp4

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/ac3"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/av1"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/eac3"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/flac"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg1audio"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/opus"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/vp9"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mp4/codecs"

	"github.com/moq-export/moq-export/internal/codec/codecconf"
	"github.com/moq-export/moq-export/internal/codec/h26x"
	"github.com/moq-export/moq-export/mux"
)

// ErrMissingConfig means a track lacks a codec configuration MP4 needs and
// that cannot be derived from the catalog or the frames.
var ErrMissingConfig = errors.New("codec configuration missing")

// families are the codecs MP4 carries here, with the sample entry each gets.
var families = map[string]string{
	"h264": "avc1", "h265": "hvc1", "av1": "av01", "vp9": "vp09",
	"aac": "mp4a", "opus": "Opus", "flac": "fLaC", "mp3": "mp4a (.6B)",
	"ac3": "ac-3", "eac3": "ec-3",
	"webvtt": "tx3g", "utf8": "tx3g", // text.go
}

// suggestions name a container for the codecs MP4 cannot carry.
var suggestions = map[string]string{"vp8": "webm or mkv", "mp2": "mkv or ts"}

// Caps says what an MP4 file carries: the tracks Supports accepts, any
// number of each kind.
var Caps = mux.Caps{Container: "mp4", Supports: Supports}

// Supports returns nil when an MP4 file can carry track t, else an error
// wrapping mux.ErrUnsupportedCodec (a *mux.UnsupportedCodecError naming a
// container that can, where one exists), or an error saying what is wrong
// with its configuration. It looks at t only, not at any muxer's state.
func Supports(t mux.Track) error {
	_, err := checkedTrack(t)
	return err
}

// checkedTrack returns the writer's state for t, or why MP4 cannot carry it.
func checkedTrack(mt mux.Track) (*track, error) {
	if err := supportsCodec(mt); err != nil {
		return nil, fmt.Errorf("mp4: track %d: %w", mt.ID, err)
	}
	t := &track{Track: mt, family: mux.CodecFamily(mt.Codec)}
	if t.Kind == 0 {
		t.Kind = mux.CodecKind(t.family)
	}
	if err := t.configure(); err != nil {
		return nil, fmt.Errorf("mp4: %w", err)
	}
	return t, nil
}

func supportsCodec(t mux.Track) error {
	fam := mux.CodecFamily(t.Codec)
	if _, ok := families[fam]; !ok {
		return &mux.UnsupportedCodecError{Container: "mp4", Codec: t.Codec, Suggest: suggestions[fam]}
	}
	if k := mux.CodecKind(fam); t.Kind != 0 && k != t.Kind {
		return fmt.Errorf("codec %q does not fit a %v track: %w", t.Codec, t.Kind, mux.ErrUnsupportedCodec)
	}
	return nil
}

// configure prepares t from the catalog: the timescale and, when the
// catalog says enough, the mediacommon codec that describes its sample
// entry. A track whose configuration comes from its first keyframe (Annex
// B H.264/H.265, AV1 without av1C, VP9, AC-3, E-AC-3, MP3 without a sample
// rate) stays not ready until configureFromFrame succeeds.
func (t *track) configure() error {
	desc := bytes.Clone(t.Description)
	switch t.family {
	case "h264", "h265":
		c, _ := h26x.CodecOf(t.family)
		n, err := h26x.NewNormalizer(c, desc)
		if err != nil {
			return fmt.Errorf("track %d: bad %s decoder configuration record: %w", t.ID, t.family, err)
		}
		t.norm = n
		t.dts = h26x.NewDTS(c, t.Jitter)
		t.timescale = videoTimescale
		if len(desc) > 0 {
			_, t.lengthSize, _ = h26x.ParseDecoderConfig(c, desc)
			return t.setParamSets(n.ParamSets())
		}
		return nil
	case "av1":
		t.timescale = videoTimescale
		if len(desc) > 4 {
			var bs av1.Bitstream
			if bs.Unmarshal(desc[4:]) == nil {
				for _, obu := range bs {
					if obuType(obu) == av1.OBUTypeSequenceHeader {
						var sh av1.SequenceHeader
						if sh.Unmarshal(obu) == nil {
							t.codec = &codecs.AV1{SequenceHeader: bytes.Clone(obu)}
						}
					}
				}
			}
		}
		return nil // else from the first keyframe's sequence header
	case "vp9":
		t.timescale = videoTimescale
		return nil // from the first keyframe's frame header
	case "aac":
		_, asc, err := codecconf.AACRecord(t.Codec, desc, t.SampleRate, t.Channels)
		switch {
		case errors.Is(err, codecconf.ErrMissingFields):
			return fmt.Errorf("track %d: aac without AudioSpecificConfig: %w: %w", t.ID, ErrMissingConfig, err)
		case err != nil:
			return fmt.Errorf("track %d: bad AudioSpecificConfig: %w", t.ID, err)
		}
		t.codec = &codecs.MPEG4Audio{Config: asc}
		t.timescale = uint32(asc.SampleRate)
		t.frameSamples = 1024
		if asc.FrameLengthFlag {
			t.frameSamples = 960
		}
	case "opus":
		ch := t.Channels
		if len(desc) > 0 {
			var h opus.IDHeader
			if err := h.Unmarshal(desc); err != nil {
				return fmt.Errorf("track %d: bad OpusHead: %w", t.ID, err)
			}
			ch = int(h.ChannelCount)
		}
		if ch == 0 {
			ch = 2
		}
		if ch > 2 {
			// mediacommon writes dOps with channel mapping family 0, which
			// only describes mono and stereo.
			return fmt.Errorf("track %d: opus with %d channels: %w", t.ID, ch, &mux.UnsupportedCodecError{Container: "mp4", Codec: t.Codec + " (more than 2 channels)", Suggest: "mkv or webm"})
		}
		t.codec = &codecs.Opus{ChannelCount: ch}
		t.timescale = 48000
		t.frameSamples = 960
	case "flac":
		si, err := flacStreamInfo(desc)
		if err != nil {
			return fmt.Errorf("track %d: %w", t.ID, err)
		}
		t.codec = &codecs.FLAC{StreamInfo: si}
		t.timescale = si.SampleRate
		t.frameSamples = uint32(si.MaxBlockSize)
	case "mp3":
		t.frameSamples = 1152
		if t.SampleRate > 0 && t.Channels > 0 {
			t.codec = &codecs.MPEG1Audio{SampleRate: t.SampleRate, ChannelCount: t.Channels}
			t.timescale = uint32(t.SampleRate)
		}
	case "ac3", "eac3":
		t.frameSamples = 1536
	case "webvtt", "utf8":
		t.timescale = textTimescale
	default:
		return fmt.Errorf("track %d: %w", t.ID, supportsCodec(t.Track))
	}
	if t.codec != nil && t.timescale == 0 {
		return fmt.Errorf("track %d: %s without a sample rate: %w", t.ID, t.Codec, ErrMissingConfig)
	}
	return nil
}

// videoTimescale is the MP4 timescale of video tracks: the 90 kHz clock of
// RTP and MPEG-TS, which every editor and player expects.
const videoTimescale = 90000

// setParamSets makes the sample entry of an H.264/H.265 track from its
// parameter sets (mediacommon builds the avcC/hvcC from the first of each).
func (t *track) setParamSets(ps h26x.ParamSets) error {
	if !ps.Complete(t.norm.Codec()) {
		return fmt.Errorf("track %d: %s decoder configuration record without parameter sets: %w", t.ID, t.family, ErrMissingConfig)
	}
	t.headerPS = ps.Clone()
	switch t.family {
	case "h264":
		t.codec = &codecs.H264{SPS: t.headerPS.SPS[0], PPS: t.headerPS.PPS[0]}
	case "h265":
		t.codec = &codecs.H265{VPS: t.headerPS.VPS[0], SPS: t.headerPS.SPS[0], PPS: t.headerPS.PPS[0]}
	}
	return nil
}

// flacStreamInfo reads STREAMINFO from a description that is fLaC and the
// metadata blocks (STREAMINFO first), or a bare 34-byte STREAMINFO.
func flacStreamInfo(desc []byte) (*flac.StreamInfo, error) {
	if len(desc) >= 42 && string(desc[:4]) == "fLaC" && desc[4]&0x7f == 0 &&
		int(desc[5])<<16|int(desc[6])<<8|int(desc[7]) == 34 {
		desc = desc[8:42]
	}
	if len(desc) != 34 {
		return nil, fmt.Errorf("flac needs fLaC+STREAMINFO as its description: %w", ErrMissingConfig)
	}
	var si flac.StreamInfo
	if err := si.Unmarshal(desc); err != nil {
		return nil, fmt.Errorf("bad FLAC STREAMINFO: %w", err)
	}
	if si.SampleRate == 0 {
		return nil, fmt.Errorf("FLAC STREAMINFO without a sample rate: %w", ErrMissingConfig)
	}
	return &si, nil
}

func obuType(obu []byte) av1.OBUType { return av1.OBUType(obu[0] >> 3 & 0x0f) }

// configureFromFrame completes a track whose sample entry comes from its
// first frame (a keyframe for video). payload is the frame as it will be
// stored. It reports whether the track is now ready.
func (t *track) configureFromFrame(payload []byte, keyframe bool) bool {
	switch t.family {
	case "h264", "h265":
		ps := t.norm.ParamSets()
		return keyframe && ps.Complete(t.norm.Codec()) && t.setParamSets(ps) == nil
	case "av1":
		if !keyframe {
			return false
		}
		var bs av1.Bitstream
		if bs.Unmarshal(payload) != nil {
			return false
		}
		for _, obu := range bs {
			var sh av1.SequenceHeader
			if obuType(obu) == av1.OBUTypeSequenceHeader && sh.Unmarshal(obu) == nil {
				t.codec = &codecs.AV1{SequenceHeader: bytes.Clone(obu)}
				return true
			}
		}
	case "vp9":
		var h vp9.Header
		if !keyframe || h.Unmarshal(payload) != nil || h.Width() == 0 || h.Height() == 0 {
			return false
		}
		c := &codecs.VP9{Width: h.Width(), Height: h.Height(), Profile: h.Profile, BitDepth: 8}
		if h.ColorConfig != nil {
			c.BitDepth = h.ColorConfig.BitDepth
			c.ColorRange = h.ColorConfig.ColorRange
			switch {
			case h.ColorConfig.SubsamplingX && h.ColorConfig.SubsamplingY:
				c.ChromaSubsampling = 1 // 4:2:0 colocated with luma (0,0)
			case h.ColorConfig.SubsamplingX:
				c.ChromaSubsampling = 2 // 4:2:2
			default:
				c.ChromaSubsampling = 3 // 4:4:4
			}
		}
		if c.BitDepth == 0 {
			c.BitDepth = 8
		}
		t.codec = c
		return true
	case "mp3":
		var h mpeg1audio.FrameHeader
		if h.Unmarshal(payload) != nil || h.SampleRate == 0 {
			return false
		}
		ch := 2
		if h.ChannelMode == mpeg1audio.ChannelModeMono {
			ch = 1
		}
		t.codec = &codecs.MPEG1Audio{SampleRate: h.SampleRate, ChannelCount: ch}
		t.timescale = uint32(h.SampleRate)
		t.frameSamples = uint32(h.SampleCount())
		return true
	case "ac3":
		var si ac3.SyncInfo
		var bsi ac3.BSI
		if len(payload) < 6 || si.Unmarshal(payload) != nil || bsi.Unmarshal(payload[5:]) != nil || si.SampleRate() == 0 {
			return false
		}
		t.codec = &codecs.AC3{
			SampleRate: si.SampleRate(), ChannelCount: bsi.ChannelCount(),
			Bsid: bsi.Bsid, Bsmod: bsi.Bsmod, Acmod: bsi.Acmod, LfeOn: bsi.LfeOn,
			BitRateCode: si.Frmsizecod >> 1,
		}
		t.timescale = uint32(si.SampleRate())
		return true
	case "eac3":
		var si eac3.SyncInfo
		if si.Unmarshal(payload) != nil || si.SampleRate() == 0 || si.NumBlocks() == 0 {
			return false
		}
		// dec3 data_rate in kbit/s: frame bits per frame duration.
		rate := uint64(si.FrameSize()) * 8 * uint64(si.SampleRate()) / (256 * uint64(si.NumBlocks())) / 1000
		c := &codecs.EAC3{
			SampleRate: si.SampleRate(), ChannelCount: si.ChannelCount(),
			DataRate: uint16(min(rate, 0x1fff)), Acmod: si.Acmod, LfeOn: si.Lfeon,
		}
		// bsmod is not in mediacommon's SyncInfo (it follows optional
		// metadata); 0, complete main audio service, is what ffmpeg writes
		// too when the stream has no informational metadata.
		t.codec = c
		t.timescale = uint32(si.SampleRate())
		t.frameSamples = uint32(256 * si.NumBlocks())
		return true
	}
	return false
}
