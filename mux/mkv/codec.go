package mkv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/av1"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h265"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/opus"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/vp9"

	"golang.org/x/text/language"

	"github.com/moq-export/moq-export/internal/codec/codecconf"
	"github.com/moq-export/moq-export/internal/codec/h26x"
	"github.com/moq-export/moq-export/mux"
)

// ErrMissingConfig means a track lacks a codec configuration the container
// needs and that cannot be derived from the catalog or the frames.
var ErrMissingConfig = errors.New("codec configuration missing")

// codecIDs maps mux.CodecFamily to the Matroska CodecID.
var codecIDs = map[string]string{
	"h264": "V_MPEG4/ISO/AVC",
	"h265": "V_MPEGH/ISO/HEVC",
	"av1":  "V_AV1",
	"vp8":  "V_VP8",
	"vp9":  "V_VP9",
	"opus": "A_OPUS",
	"aac":  "A_AAC",
	"flac": "A_FLAC",
	"mp3":  "A_MPEG/L3",
	"mp2":  "A_MPEG/L2",
	"ac3":  "A_AC3",
	"eac3": "A_EAC3",
	// WebVTT as WebM defines it (ffmpeg 5.1 and mkvmerge read it; the
	// newer S_TEXT/WEBVTT is unknown to ffmpeg 5.1).
	"webvtt": "D_WEBVTT/SUBTITLES",
}

// webmFamilies are the codecs the WebM profile of Matroska allows.
var webmFamilies = map[string]bool{"vp8": true, "vp9": true, "av1": true, "opus": true, "webvtt": true}

// opusSeekPreRoll is the 80 ms of decoding an Opus decoder needs after a
// seek, in nanoseconds, as the WebM spec asks muxers to declare.
const opusSeekPreRoll = 80_000_000

// configure fills the track entry from the catalog. It returns whether the
// track is ready for the header; a track that is not waits for in-band
// configuration in its first keyframe (see track.configureFromFrame).
func (t *track) configure() error {
	e := &t.entry
	e.CodecID = codecIDs[t.family]
	e.FlagLacing = 0
	e.Name = t.Name
	if t.Label != "" {
		e.Name = t.Label
	}
	e.Language, e.LanguageIETF = languages(t.Language)
	switch t.Kind {
	case mux.Video:
		e.TrackType = 1
		e.Video = &video{PixelWidth: uint64(max(t.Width, 0)), PixelHeight: uint64(max(t.Height, 0))}
	case mux.Audio:
		e.TrackType = 2
		e.Audio = &audio{SamplingFrequency: float64(t.SampleRate), Channels: uint64(t.Channels)}
	case mux.Text:
		e.TrackType = 0x11 // subtitle
		if t.Role == "caption" {
			e.CodecID = "D_WEBVTT/CAPTIONS"
		}
	default:
		return fmt.Errorf("track %d: unknown kind %v", t.ID, t.Kind)
	}
	if k := mux.CodecKind(t.family); (k == mux.Video) != (t.Kind == mux.Video) || (k == mux.Text) != (t.Kind == mux.Text) {
		return fmt.Errorf("track %d: codec %q does not fit a %v track", t.ID, t.Codec, t.Kind)
	}
	desc := bytes.Clone(t.Description)
	switch t.family {
	case "h264", "h265":
		c, _ := h26x.CodecOf(t.family)
		if len(desc) == 0 {
			// Annex B with in-band parameter sets: the avcC/hvcC is built
			// from the first keyframe's.
			n, err := h26x.NewNormalizer(c, nil)
			if err != nil {
				return fmt.Errorf("track %d: %w", t.ID, err)
			}
			t.norm = n
			return nil
		}
		ps, _, err := h26x.ParseDecoderConfig(c, desc)
		if err != nil {
			return fmt.Errorf("track %d: bad %s decoder configuration record: %w", t.ID, t.family, err)
		}
		e.CodecPrivate = desc
		if e.Video.PixelWidth == 0 || e.Video.PixelHeight == 0 {
			t.sizeFromSPS(ps)
		}
		t.spsRate = h26x.FrameRate(c, ps)
		// A missing size is not worth holding the header for: the
		// decoder takes it from the SPS.
		t.ready = true
		return nil
	case "av1":
		if len(desc) == 0 {
			return nil // av1C is built from the first keyframe's sequence header
		}
		e.CodecPrivate = desc
		if e.Video.PixelWidth == 0 || e.Video.PixelHeight == 0 {
			if len(desc) > 4 {
				var bs av1.Bitstream
				if bs.Unmarshal(desc[4:]) == nil {
					for _, obu := range bs {
						var sh av1.SequenceHeader
						if obuType(obu) == av1.OBUTypeSequenceHeader && sh.Unmarshal(obu) == nil {
							e.Video.PixelWidth, e.Video.PixelHeight = uint64(sh.Width()), uint64(sh.Height())
						}
					}
				}
			}
		}
	case "vp8", "vp9":
		e.CodecPrivate = nil
	case "opus":
		if len(desc) == 0 {
			ch := t.Channels
			if ch == 0 {
				ch = 2
			}
			if ch > 2 {
				return fmt.Errorf("track %d: opus with %d channels and no OpusHead: %w", t.ID, ch, ErrMissingConfig)
			}
			// Browsers publish no OpusHead. The pre-skip is unknown; 0 shifts
			// the first few milliseconds at most.
			var err error
			if desc, err = codecconf.OpusHead(ch, 0, uint32(max(t.SampleRate, 0))); err != nil {
				return fmt.Errorf("track %d: %w", t.ID, err)
			}
		}
		var h opus.IDHeader
		if err := h.Unmarshal(desc); err != nil {
			return fmt.Errorf("track %d: bad OpusHead: %w", t.ID, err)
		}
		// mediacommon v2.9.3 reads the multi-byte OpusHead fields big-endian;
		// RFC 7845 defines them little-endian, so read pre-skip here.
		preSkip := binary.LittleEndian.Uint16(desc[10:])
		e.CodecPrivate = desc
		e.CodecDelay = uint64(preSkip) * 1_000_000_000 / 48000
		e.SeekPreRoll = opusSeekPreRoll
		// Opus always decodes at 48 kHz; Matroska wants that rate here.
		e.Audio.SamplingFrequency = 48000
		e.Audio.Channels = uint64(h.ChannelCount)
	case "aac":
		desc, asc, err := codecconf.AACRecord(t.Codec, desc, t.SampleRate, t.Channels)
		switch {
		case errors.Is(err, codecconf.ErrMissingFields):
			return fmt.Errorf("track %d: aac without AudioSpecificConfig: %w: %w", t.ID, ErrMissingConfig, err)
		case err != nil:
			return fmt.Errorf("track %d: bad AudioSpecificConfig: %w", t.ID, err)
		}
		e.CodecPrivate = desc
		if e.Audio.SamplingFrequency == 0 {
			e.Audio.SamplingFrequency = float64(asc.SampleRate)
		}
		if e.Audio.Channels == 0 {
			e.Audio.Channels = uint64(asc.ChannelConfig)
		}
	case "flac":
		priv, err := flacPrivate(desc)
		if err != nil {
			return fmt.Errorf("track %d: %w", t.ID, err)
		}
		e.CodecPrivate = priv
		si := priv[8:]
		// STREAMINFO: 20 bits sample rate, 3 bits channels-1, 5 bits bps-1.
		if e.Audio.SamplingFrequency == 0 {
			e.Audio.SamplingFrequency = float64(uint32(si[10])<<12 | uint32(si[11])<<4 | uint32(si[12])>>4)
		}
		if e.Audio.Channels == 0 {
			e.Audio.Channels = uint64(si[12]>>1&0x7) + 1
		}
		e.Audio.BitDepth = uint64((si[12]&1)<<4|si[13]>>4) + 1
	}
	if t.Kind == mux.Audio {
		if e.Audio.SamplingFrequency == 0 {
			e.Audio.SamplingFrequency = 48000
		}
		if e.Audio.Channels == 0 {
			e.Audio.Channels = 2
		}
	}
	t.ready = t.ready || t.Kind != mux.Video || (e.Video.PixelWidth > 0 && e.Video.PixelHeight > 0)
	return nil
}

// languages returns the Matroska Language (ISO 639-2, which ffmpeg and
// older players read) and LanguageIETF (BCP 47) of a BCP 47 tag: "und" and
// nothing when the tag is empty or unknown.
func languages(tag string) (iso, bcp47 string) {
	if tag == "" {
		return "und", ""
	}
	t, err := language.Parse(tag)
	if err != nil {
		return "und", ""
	}
	base, conf := t.Base()
	if conf == language.No || base.ISO3() == "" {
		return "und", t.String()
	}
	return base.ISO3(), t.String()
}

// flacPrivate returns the Matroska A_FLAC CodecPrivate ("fLaC" and the
// metadata blocks, STREAMINFO first) from a description that is either that
// already or a bare 34-byte STREAMINFO.
func flacPrivate(desc []byte) ([]byte, error) {
	if len(desc) == 34 {
		return append([]byte{'f', 'L', 'a', 'C', 0x80, 0, 0, 34}, desc...), nil
	}
	if len(desc) < 42 || string(desc[:4]) != "fLaC" || desc[4]&0x7f != 0 ||
		int(desc[5])<<16|int(desc[6])<<8|int(desc[7]) != 34 {
		return nil, fmt.Errorf("flac needs fLaC+STREAMINFO as its description: %w", ErrMissingConfig)
	}
	return desc, nil
}

func obuType(obu []byte) av1.OBUType { return av1.OBUType(obu[0] >> 3 & 0x0f) }

// configureFromFrame completes a track that waits for in-band configuration
// from one of its frames. It reports whether the track is now ready.
func (t *track) configureFromFrame(payload []byte, keyframe bool) bool {
	if !keyframe {
		return false
	}
	e := &t.entry
	switch t.family {
	case "av1":
		var bs av1.Bitstream
		if err := bs.Unmarshal(payload); err != nil {
			return false
		}
		for _, obu := range bs {
			if obuType(obu) != av1.OBUTypeSequenceHeader {
				continue
			}
			var sh av1.SequenceHeader
			if sh.Unmarshal(obu) != nil {
				return false
			}
			if e.CodecPrivate == nil {
				cfg, err := av1Config(&sh, obu)
				if err != nil {
					return false
				}
				e.CodecPrivate = cfg
			}
			if e.Video.PixelWidth == 0 || e.Video.PixelHeight == 0 {
				e.Video.PixelWidth, e.Video.PixelHeight = uint64(sh.Width()), uint64(sh.Height())
			}
			return true
		}
	case "vp8":
		// RFC 6386 9.1: 3-byte frame tag, start code 9d 01 2a, 14-bit
		// width and height. No library here parses it; it is six bytes.
		if len(payload) >= 10 && payload[0]&1 == 0 && payload[3] == 0x9d && payload[4] == 0x01 && payload[5] == 0x2a {
			e.Video.PixelWidth = uint64(binary.LittleEndian.Uint16(payload[6:]) & 0x3fff)
			e.Video.PixelHeight = uint64(binary.LittleEndian.Uint16(payload[8:]) & 0x3fff)
			return e.Video.PixelWidth > 0 && e.Video.PixelHeight > 0
		}
	case "vp9":
		var h vp9.Header
		if h.Unmarshal(payload) == nil && h.Width() > 0 && h.Height() > 0 {
			e.Video.PixelWidth, e.Video.PixelHeight = uint64(h.Width()), uint64(h.Height())
			return true
		}
	}
	return false
}

// av1Config builds an AV1CodecConfigurationRecord (av1C, AV1 ISOBMFF
// binding 2.3) from a parsed sequence header and its OBU. mediacommon parses
// the sequence header but has no av1C writer; the record is four bytes of
// fields copied from it plus the OBU.
func av1Config(sh *av1.SequenceHeader, obu []byte) ([]byte, error) {
	level, tier := uint8(0), false
	if len(sh.SeqLevelIdx) > 0 {
		level = sh.SeqLevelIdx[0]
	}
	if len(sh.SeqTier) > 0 {
		tier = sh.SeqTier[0]
	}
	cc := sh.ColorConfig
	b2 := byte(0)
	if tier {
		b2 |= 0x80
	}
	if cc.HighBitDepth {
		b2 |= 0x40
	}
	if cc.TwelveBit {
		b2 |= 0x20
	}
	if cc.MonoChrome {
		b2 |= 0x10
	}
	if cc.SubsamplingX {
		b2 |= 0x08
	}
	if cc.SubsamplingY {
		b2 |= 0x04
	}
	b2 |= byte(cc.ChromaSamplePosition) & 0x03
	// Config OBUs carry their size field (low overhead bitstream format).
	withSize, err := av1.Bitstream{obu}.Marshal()
	if err != nil {
		return nil, err
	}
	return append([]byte{0x81, sh.SeqProfile<<5 | level&0x1f, b2, 0}, withSize...), nil
}

// sizeFromSPS fills the pixel size of an H.264/H.265 track from its first
// SPS, when mediacommon can parse it.
func (t *track) sizeFromSPS(ps h26x.ParamSets) {
	if len(ps.SPS) == 0 {
		return
	}
	var w, h int
	switch t.family {
	case "h264":
		var sps h264.SPS
		if sps.Unmarshal(ps.SPS[0]) != nil {
			return
		}
		w, h = sps.Width(), sps.Height()
	case "h265":
		var sps h265.SPS
		if sps.Unmarshal(ps.SPS[0]) != nil {
			return
		}
		w, h = sps.Width(), sps.Height()
	}
	if w > 0 && h > 0 {
		t.entry.Video.PixelWidth, t.entry.Video.PixelHeight = uint64(w), uint64(h)
	}
}

// annexBToAVCC converts one Annex B access unit of an H.264/H.265 track
// without a catalog record into length-prefixed NAL units (the form
// V_MPEG4/ISO/AVC and V_MPEGH/ISO/HEVC carry), taking the CodecPrivate from
// the first keyframe whose parameter sets make a record. Frames before that
// keyframe, and malformed access units, give ok false and are dropped: they
// cannot be decoded. CodecPrivate cannot change once the header is written,
// so when later in-band parameter sets differ from it they are kept in band
// on keyframes, where decoders pick them up. The result is valid until the
// next call.
func (t *track) annexBToAVCC(payload []byte, keyframe bool, started bool, log *slog.Logger) (out []byte, ok bool, why string) {
	nalus, err := t.norm.Frame(payload)
	if len(nalus) == 0 {
		if err != nil {
			return nil, false, "malformed access unit: " + err.Error()
		}
		return nil, false, "access unit without picture data"
	}
	cfg := t.norm.Config()
	changed := t.norm.ConfigChanged()
	if t.entry.CodecPrivate == nil {
		if started || cfg == nil || !keyframe {
			return nil, false, "waiting for a keyframe with parameter sets"
		}
		t.entry.CodecPrivate = bytes.Clone(cfg)
		if t.entry.Video.PixelWidth == 0 || t.entry.Video.PixelHeight == 0 {
			t.sizeFromSPS(t.norm.ParamSets())
		}
		t.spsRate = h26x.FrameRate(t.norm.Codec(), t.norm.ParamSets())
		t.ready = true
	} else if changed && cfg != nil && !bytes.Equal(cfg, t.entry.CodecPrivate) && !t.psWarned {
		t.psWarned = true
		log.Warn("mkv: parameter sets changed after the header; keeping them in band", "track", t.ID, "codec", t.Codec)
	}
	t.conv = t.conv[:0]
	if keyframe && cfg != nil && !bytes.Equal(cfg, t.entry.CodecPrivate) {
		t.conv = h26x.AppendAVCC(t.conv, t.norm.ParamSets().NALUs())
	}
	t.conv = h26x.AppendAVCC(t.conv, nalus)
	return t.conv, true, ""
}
