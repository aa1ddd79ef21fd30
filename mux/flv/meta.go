package flv

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/bluenviron/gortmplib/pkg/amf0"
)

// metadata is the onMetaData script tag body and where, inside it, the
// duration and filesize numbers sit so that Close can patch them. AMF0
// numbers are fixed-size (a marker byte and a float64), so patching never
// moves anything.
type metadata struct {
	body       []byte
	durationAt int // offset of the duration float64 in body
	filesizeAt int // offset of the filesize float64 in body

	// videoFam and audioFam are the codec families the header declared.
	videoFam, audioFam string
}

// buildMetadata encodes onMetaData for the bound tracks. duration and
// filesize are 0, which players read as "live / unknown".
func buildMetadata(video, audio *track) (metadata, error) {
	entries := amf0.ECMAArray{
		{Key: "duration", Value: float64(0)},
		{Key: "filesize", Value: float64(0)},
	}
	if video != nil {
		if video.Width > 0 && video.Height > 0 {
			entries = append(entries,
				amf0.ObjectEntry{Key: "width", Value: float64(video.Width)},
				amf0.ObjectEntry{Key: "height", Value: float64(video.Height)})
		}
		if video.Framerate > 0 {
			entries = append(entries, amf0.ObjectEntry{Key: "framerate", Value: video.Framerate})
		}
		entries = append(entries, amf0.ObjectEntry{Key: "videocodecid", Value: video.info.metaID})
	}
	if audio != nil {
		entries = append(entries, amf0.ObjectEntry{Key: "audiocodecid", Value: audio.info.metaID})
		if audio.SampleRate > 0 {
			entries = append(entries,
				amf0.ObjectEntry{Key: "audiosamplerate", Value: float64(audio.SampleRate)},
				amf0.ObjectEntry{Key: "audiosamplesize", Value: float64(16)})
		}
		if audio.Channels > 0 {
			entries = append(entries,
				amf0.ObjectEntry{Key: "stereo", Value: audio.Channels > 1},
				amf0.ObjectEntry{Key: "audiochannels", Value: float64(audio.Channels)})
		}
	}
	entries = append(entries, amf0.ObjectEntry{Key: "encoder", Value: "moq-export"})

	body, err := amf0.Data{"onMetaData", entries}.Marshal()
	if err != nil {
		return metadata{}, fmt.Errorf("flv: encoding onMetaData: %w", err)
	}
	m := metadata{body: body}
	if m.durationAt, err = numberAt(body, "duration"); err != nil {
		return metadata{}, err
	}
	if m.filesizeAt, err = numberAt(body, "filesize"); err != nil {
		return metadata{}, err
	}
	return m, nil
}

// numberAt returns the offset of the float64 that follows key in an AMF0
// ECMA array body.
func numberAt(body []byte, key string) (int, error) {
	pat := make([]byte, 0, 3+len(key))
	pat = binary.BigEndian.AppendUint16(pat, uint16(len(key)))
	pat = append(pat, key...)
	pat = append(pat, 0) // number marker
	i := bytes.Index(body, pat)
	if i < 0 || i+len(pat)+8 > len(body) {
		return 0, fmt.Errorf("flv: onMetaData has no %s number", key)
	}
	return i + len(pat), nil
}

// float64Bytes returns v as AMF0 stores a number: big-endian IEEE 754.
func float64Bytes(v float64) []byte {
	return binary.BigEndian.AppendUint64(nil, math.Float64bits(v))
}
