package ts

import (
	"encoding/binary"
	"fmt"

	"github.com/asticode/go-astits"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/opus"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts/substructs"

	"github.com/moq-export/moq-export/internal/codec/codecconf"
	"github.com/moq-export/moq-export/mux"
)

// PES stream ids (ISO 13818-1 table 2-22).
const (
	streamIDVideo   = 0xE0 // first MPEG video stream
	streamIDAudio   = 0xC0 // first MPEG audio stream
	streamIDPrivate = 0xBD // private_stream_1: Opus, AC-3, E-AC-3
)

// Stream types that astits has no constant for.
const (
	streamTypeMPEG1Audio = astits.StreamType(0x03)
	streamTypeMPEG2Audio = astits.StreamType(0x04)
	streamTypeAC3        = astits.StreamType(0x81) // ATSC A/52
	streamTypeEAC3       = astits.StreamType(0x87) // ATSC A/52 E-AC-3
)

// maxADTSFrame is the largest frame_length an ADTS header can carry.
const maxADTSFrame = 1<<13 - 1

// esConfig is what a codec contributes to the PMT and to every PES.
type esConfig struct {
	streamType  astits.StreamType
	streamID    uint8
	descriptors []*astits.Descriptor
	// adts is the ADTS header for AAC with frame_length zero; the writer
	// patches the length in for each frame.
	adts []byte
	// opus marks the Opus-in-TS control header.
	opus bool
}

// registration returns a registration descriptor (ISO 13818-1 2.6.8) with
// the 4-character format identifier id.
func registration(id string) *astits.Descriptor {
	return &astits.Descriptor{
		// astits writes nothing for a zero Length; the real length is
		// computed when writing.
		Length:       4,
		Tag:          astits.DescriptorTagRegistration,
		Registration: &astits.DescriptorRegistration{FormatIdentifier: binary.BigEndian.Uint32([]byte(id))},
	}
}

// configureES maps a catalog track to its elementary stream, or says why the
// codec cannot go into MPEG-TS.
func configureES(t mux.Track, family string) (esConfig, error) {
	switch family {
	case "h264":
		return esConfig{streamType: astits.StreamTypeH264Video, streamID: streamIDVideo}, nil
	case "h265":
		return esConfig{streamType: astits.StreamTypeH265Video, streamID: streamIDVideo}, nil
	case "aac":
		hdr, err := adtsTemplate(t)
		if err != nil {
			return esConfig{}, err
		}
		return esConfig{streamType: astits.StreamTypeAACAudio, streamID: streamIDAudio, adts: hdr}, nil
	case "opus":
		ch, err := opusChannels(t)
		if err != nil {
			return esConfig{}, err
		}
		ext := []byte{0x80, byte(ch)} // opus_audio_descriptor, channel_config_code
		return esConfig{
			streamType: astits.StreamTypePrivateData,
			streamID:   streamIDPrivate,
			opus:       true,
			descriptors: []*astits.Descriptor{
				registration("Opus"),
				{
					Length: 2,
					Tag:    astits.DescriptorTagExtension,
					Extension: &astits.DescriptorExtension{
						Tag:     ext[0],
						Unknown: new(ext[1:]),
					},
				},
			},
		}, nil
	case "ac3":
		return esConfig{
			streamType:  streamTypeAC3,
			streamID:    streamIDPrivate,
			descriptors: []*astits.Descriptor{registration("AC-3")},
		}, nil
	case "eac3":
		return esConfig{
			streamType:  streamTypeEAC3,
			streamID:    streamIDPrivate,
			descriptors: []*astits.Descriptor{registration("EAC3")},
		}, nil
	case "mp2", "mp3":
		st := streamTypeMPEG1Audio
		if t.SampleRate > 0 && t.SampleRate < 32000 {
			// MPEG-2 low sampling frequencies (ISO 13818-3).
			st = streamTypeMPEG2Audio
		}
		return esConfig{streamType: st, streamID: streamIDAudio}, nil
	}
	return esConfig{}, &mux.UnsupportedCodecError{Container: "ts", Codec: t.Codec, Suggest: "mkv"}
}

// adtsTemplate builds the 7-byte ADTS header of an AAC track from its
// AudioSpecificConfig, or from the codec string and catalog fields when the
// catalog has none. mediacommon validates the fields and lays out the bits.
func adtsTemplate(t mux.Track) ([]byte, error) {
	pkt := mpeg4audio.ADTSPacket{SampleRate: t.SampleRate}
	if len(t.Description) > 0 {
		var asc mpeg4audio.AudioSpecificConfig
		if err := asc.Unmarshal(t.Description); err != nil {
			return nil, fmt.Errorf("ts: track %d: AudioSpecificConfig: %w", t.ID, err)
		}
		pkt.Type = asc.Type
		pkt.SampleRate = asc.SampleRate
		pkt.ChannelConfig = asc.ChannelConfig
		if asc.ChannelConfig == 0 && t.Channels > 0 {
			// A PCE-described layout: ADTS can only say "see the PCE",
			// which ffmpeg rejects without one; fall back to the count.
			pkt.ChannelConfig, _ = codecconf.AACChannelConfig(t.Channels)
		}
	} else {
		pkt.Type = codecconf.AACObjectType(t.Codec)
		pkt.ChannelConfig, _ = codecconf.AACChannelConfig(t.Channels)
	}
	// HE-AAC (SBR, PS) is signalled implicitly: ADTS carries the AAC-LC core.
	if pkt.Type == mpeg4audio.ObjectTypeSBR || pkt.Type == mpeg4audio.ObjectTypePS {
		pkt.Type = mpeg4audio.ObjectTypeAACLC
	}
	enc, err := mpeg4audio.ADTSPackets{&pkt}.Marshal()
	if err != nil {
		return nil, &mux.UnsupportedCodecError{Container: "ts", Codec: fmt.Sprintf("%s (%v)", t.Codec, err), Suggest: "mkv"}
	}
	return enc, nil
}

// putADTSLength writes the 13-bit frame_length of an ADTS header.
func putADTSLength(h []byte, frameLen int) {
	h[3] = h[3]&0xFC | byte(frameLen>>11)&0x03
	h[4] = byte(frameLen >> 3)
	h[5] = h[5]&0x1F | byte(frameLen&0x07)<<5
}

// opusChannels returns the channel count for the Opus audio descriptor,
// from the OpusHead when there is one.
func opusChannels(t mux.Track) (int, error) {
	ch := t.Channels
	if len(t.Description) > 0 {
		var h opus.IDHeader
		if err := h.Unmarshal(t.Description); err != nil {
			return 0, fmt.Errorf("ts: track %d: OpusHead: %w", t.ID, err)
		}
		ch = int(h.ChannelCount)
	}
	if ch == 0 {
		ch = 2
	}
	// channel_config_code 1..8 selects the Vorbis channel order, the only
	// layouts ffmpeg's demuxer maps.
	if ch < 1 || ch > 8 {
		return 0, &mux.UnsupportedCodecError{Container: "ts", Codec: fmt.Sprintf("%s with %d channels", t.Codec, ch), Suggest: "mkv"}
	}
	return ch, nil
}

// appendOpusAU appends one Opus access unit (control header plus packet,
// ETSI TS 102 366 style "Opus in MPEG-TS") to dst.
func appendOpusAU(dst, pkt []byte) ([]byte, error) {
	au := substructs.OpusAccessUnit{
		ControlHeader: substructs.OpusControlHeader{PayloadSize: len(pkt)},
		Packet:        pkt,
	}
	n := len(dst)
	dst = grow(dst, au.MarshalSize())
	if _, err := au.MarshalTo(dst[n:]); err != nil {
		return dst[:n], err
	}
	return dst, nil
}

// grow returns b extended by n bytes, reallocating only when needed.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), 2*cap(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}
