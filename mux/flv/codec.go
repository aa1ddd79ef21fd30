package flv

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/opus"

	"github.com/moq-export/moq-export/internal/codec/codecconf"
	"github.com/moq-export/moq-export/mux"
)

// codecInfo says how one codec family is carried in FLV.
type codecInfo struct {
	kind     mux.Kind // mux.CodecKind of the family
	enhanced bool     // Enhanced RTMP (FourCC) rather than a classic codec id
	fourCC   string   // Enhanced RTMP FourCC
	classic  byte     // classic CodecID / SoundFormat
	h26x     bool     // H.264/H.265: AVCC payloads, DTS/composition time
	cts      bool     // frames carry a signed 24-bit composition time
	metaID   float64
}

var codecs = map[string]codecInfo{
	"h264": {classic: codecAVC, h26x: true, cts: true, metaID: codecAVC},
	"h265": {enhanced: true, fourCC: "hvc1", h26x: true, cts: true},
	"av1":  {enhanced: true, fourCC: "av01"},
	"vp9":  {enhanced: true, fourCC: "vp09"},
	"aac":  {classic: soundAAC, metaID: soundAAC},
	"mp3":  {classic: soundMP3, metaID: soundMP3},
	"opus": {enhanced: true, fourCC: "Opus"},
}

// suggest names the container that carries a codec FLV cannot.
var suggest = map[string]string{
	"vp8":  "mkv",
	"flac": "mkv",
	"pcm":  "mkv",
	"mp2":  "ts",
	"ac3":  "ts",
	"eac3": "ts",
}

func init() {
	for fam, c := range codecs {
		c.kind = mux.CodecKind(fam)
		if c.enhanced {
			c.metaID = float64(fourCC(c.fourCC))
		}
		codecs[fam] = c
	}
}

// lookupCodec returns how t's codec is carried, or an error wrapping
// mux.ErrUnsupportedCodec.
func lookupCodec(t mux.Track) (string, codecInfo, error) {
	fam := mux.CodecFamily(t.Codec)
	c, ok := codecs[fam]
	if !ok {
		s, known := suggest[fam]
		if !known {
			s = "mkv"
		}
		return fam, c, &mux.UnsupportedCodecError{Container: "flv", Codec: t.Codec, Suggest: s}
	}
	if t.Kind != c.kind {
		return fam, c, fmt.Errorf("flv: track %d: codec %q is %v but the track says %v", t.ID, t.Codec, c.kind, t.Kind)
	}
	return fam, c, nil
}

// errBadDescription is wrapped by AddTrack when a codec configuration record
// from the catalog cannot be used.
var errBadDescription = errors.New("bad codec description")

// staticConfig returns the sequence header body for codecs whose
// configuration does not come from the frames: the catalog's description,
// or one built from the catalog fields when it has none. It returns nil for
// codecs without a sequence header (MP3) and for H.264/H.265 in Annex B
// form, whose configuration comes from the in-band parameter sets.
func staticConfig(fam string, t mux.Track) ([]byte, error) {
	switch fam {
	case "h264", "h265":
		return nil, nil // from the h26x normalizer
	case "aac":
		if t.Description != nil {
			var asc mpeg4audio.AudioSpecificConfig
			if err := asc.Unmarshal(t.Description); err != nil {
				return nil, fmt.Errorf("%w: AudioSpecificConfig: %w", errBadDescription, err)
			}
			return t.Description, nil
		}
		return buildASC(t)
	case "opus":
		if t.Description != nil {
			var h opus.IDHeader
			if err := h.Unmarshal(t.Description); err != nil {
				return nil, fmt.Errorf("%w: OpusHead: %w", errBadDescription, err)
			}
			return t.Description, nil
		}
		return buildOpusHead(t.SampleRate, t.Channels)
	case "av1":
		if t.Description != nil {
			if len(t.Description) < 4 || t.Description[0] != 0x81 {
				return nil, fmt.Errorf("%w: av1C must start with marker/version 0x81", errBadDescription)
			}
			return t.Description, nil
		}
		return buildAV1C(t.Codec), nil
	case "vp9":
		return buildVPCC(t.Codec), nil
	}
	return nil, nil
}

// buildASC builds an AudioSpecificConfig from the codec string's object type
// ("mp4a.40.2" is AAC-LC), the sample rate and the channel count.
func buildASC(t mux.Track) ([]byte, error) {
	b, err := codecconf.AACConfig(t.Codec, t.SampleRate, t.Channels)
	if err != nil {
		return nil, fmt.Errorf("%w: AAC track without description: %w", errBadDescription, err)
	}
	return b, nil
}

// opusPreSkip is libopus' encoder delay at 48 kHz, which browsers' WebCodecs
// encoders have.
const opusPreSkip = 312

// buildOpusHead builds the OpusHead that a browser's Opus encoder would have
// produced, for catalogs that carry no description: two channels and 48 kHz
// unless the catalog says otherwise.
func buildOpusHead(sampleRate, channels int) ([]byte, error) {
	if channels == 0 {
		channels = 2
	}
	if sampleRate <= 0 {
		sampleRate = 48000
	}
	h, err := codecconf.OpusHead(channels, opusPreSkip, uint32(sampleRate))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadDescription, err)
	}
	return h, nil
}

// codecFields splits a WebCodecs string "fourcc.a.b.c" into numeric fields
// after the FourCC; a field that is not a number is -1.
func codecFields(codec string) []int {
	parts := strings.Split(codec, ".")
	out := make([]int, 0, len(parts))
	for _, p := range parts[1:] {
		n, err := strconv.Atoi(strings.TrimRight(p, "MHmh"))
		if err != nil {
			n = -1
		}
		out = append(out, n)
	}
	return out
}

// buildAV1C builds the 4 fixed bytes of an AV1CodecConfigurationRecord from
// "av01.P.LLT.DD[.M.CCC...]" (AV1 codec ISO media file format binding,
// section 5), without configOBUs: the decoder takes the sequence header from
// the keyframes.
func buildAV1C(codec string) []byte {
	f := codecFields(codec)
	get := func(i, def int) int {
		if i < len(f) && f[i] >= 0 {
			return f[i]
		}
		return def
	}
	profile, level, depth, mono := get(0, 0), get(1, 8), get(2, 8), get(3, 0)
	tier := 0
	if p := strings.Split(codec, "."); len(p) > 2 && strings.HasSuffix(strings.ToUpper(p[2]), "H") {
		tier = 1
	}
	high, twelve := 0, 0
	if depth > 8 {
		high = 1
	}
	if depth == 12 {
		twelve = 1
	}
	subX, subY := 1, 1 // 4:2:0 unless the string says otherwise
	if len(f) > 4 && f[4] >= 0 {
		subX, subY = f[4]/100%10, f[4]/10%10
	}
	return []byte{
		0x81,
		byte(profile&7)<<5 | byte(level&31),
		byte(tier)<<7 | byte(high)<<6 | byte(twelve)<<5 | byte(mono&1)<<4 | byte(subX&1)<<3 | byte(subY&1)<<2,
		0,
	}
}

// buildVPCC builds a VP Codec Configuration box payload (version 1, with
// its FullBox version and flags, as ffmpeg writes it) from
// "vp09.PP.LL.DD[.CC.cp.tc.mc.FF]" (VP Codec ISO Media File Format Binding,
// section "Codecs Parameter String"), with that document's defaults.
func buildVPCC(codec string) []byte {
	f := codecFields(codec)
	get := func(i, def int) int {
		if i < len(f) && f[i] >= 0 {
			return f[i]
		}
		return def
	}
	profile, level, depth := get(0, 0), get(1, 10), get(2, 8)
	chroma, cp, tc, mc, full := get(3, 1), get(4, 1), get(5, 1), get(6, 1), get(7, 0)
	return []byte{
		1, 0, 0, 0, // version 1, flags
		byte(profile), byte(level),
		byte(depth&15)<<4 | byte(chroma&7)<<1 | byte(full&1),
		byte(cp), byte(tc), byte(mc),
		0, 0, // codecInitializationDataSize
	}
}
