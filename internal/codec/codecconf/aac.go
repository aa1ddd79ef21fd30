package codecconf

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"
)

// ErrMissingFields means the catalog fields cannot describe the codec
// configuration: a sample rate or channel count is missing or has no
// encoding in the record.
var ErrMissingFields = errors.New("catalog fields cannot make a codec configuration")

// AACObjectType returns the MPEG-4 audio object type that a WebCodecs codec
// string names ("mp4a.40.2" AAC-LC, "mp4a.40.5" SBR, "mp4a.40.29" PS), and
// AAC-LC for any other string ("mp4a.67", "aac"). The number is returned as
// written, also where no record can carry it.
func AACObjectType(codec string) mpeg4audio.ObjectType {
	if ot, ok := strings.CutPrefix(strings.ToLower(codec), "mp4a.40."); ok {
		if n, err := strconv.Atoi(ot); err == nil && n >= 0 {
			return mpeg4audio.ObjectType(n)
		}
	}
	return mpeg4audio.ObjectTypeAACLC
}

// AACChannelConfig returns the MPEG-4 channelConfiguration (ISO/IEC 14496-3
// table 1.19) of a channel count: 1 to 6 channels are configurations 1 to
// 6, eight channels (7.1) is configuration 7. Other counts, 7 among them,
// have none (only a program config element describes them): ok is false.
func AACChannelConfig(channels int) (cfg uint8, ok bool) {
	switch {
	case channels >= 1 && channels <= 6:
		return uint8(channels), true
	case channels == 8:
		return 7, true
	}
	return 0, false
}

// AACConfig builds the AudioSpecificConfig of an AAC track that has no
// description, from its codec string (the object type, see AACObjectType),
// sample rate and channel count. HE-AAC (SBR, PS) is signalled implicitly,
// as in ADTS: the record describes the AAC-LC core and decoders find the
// extension in the stream; an object type of 0 or one the 5-bit field
// cannot hold gives AAC-LC too. Errors wrap ErrMissingFields.
func AACConfig(codec string, sampleRate, channels int) ([]byte, error) {
	cc, ok := AACChannelConfig(channels)
	if sampleRate <= 0 || !ok {
		return nil, fmt.Errorf("%w: AAC needs a sample rate and 1-6 or 8 channels (got %d Hz, %d channels)",
			ErrMissingFields, sampleRate, channels)
	}
	typ := AACObjectType(codec)
	if typ == 0 || typ == mpeg4audio.ObjectTypeSBR || typ == mpeg4audio.ObjectTypePS || typ >= 31 {
		typ = mpeg4audio.ObjectTypeAACLC
	}
	b, err := mpeg4audio.AudioSpecificConfig{Type: typ, SampleRate: sampleRate, ChannelConfig: cc}.Marshal()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMissingFields, err)
	}
	return b, nil
}

// AACRecord returns an AAC track's AudioSpecificConfig, as bytes and parsed:
// desc when the catalog has one, else the record AACConfig builds from the
// codec string, sample rate and channel count. Errors wrap ErrMissingFields
// when there is no description and the fields cannot make one; otherwise
// they are desc's parse error.
func AACRecord(codec string, desc []byte, sampleRate, channels int) ([]byte, mpeg4audio.AudioSpecificConfig, error) {
	var asc mpeg4audio.AudioSpecificConfig
	if len(desc) == 0 {
		var err error
		if desc, err = AACConfig(codec, sampleRate, channels); err != nil {
			return nil, asc, err
		}
	}
	if err := asc.Unmarshal(desc); err != nil {
		return nil, asc, err
	}
	return desc, asc, nil
}
