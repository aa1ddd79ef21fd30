package flv

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/yutopp/go-amf0"
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

// metaEntry is one key of onMetaData and its value (a float64, bool or
// string).
type metaEntry struct {
	key   string
	value any
}

// buildMetadata encodes onMetaData for the bound tracks. duration and
// filesize are 0, which players read as "live / unknown".
func buildMetadata(video, audio *track) (metadata, error) {
	entries := []metaEntry{
		{"duration", float64(0)},
		{"filesize", float64(0)},
	}
	if video != nil {
		if video.Width > 0 && video.Height > 0 {
			entries = append(entries, metaEntry{"width", float64(video.Width)}, metaEntry{"height", float64(video.Height)})
		}
		if video.Framerate > 0 {
			entries = append(entries, metaEntry{"framerate", video.Framerate})
		}
		entries = append(entries, metaEntry{"videocodecid", video.info.metaID})
	}
	if audio != nil {
		entries = append(entries, metaEntry{"audiocodecid", audio.info.metaID})
		if audio.SampleRate > 0 {
			entries = append(entries, metaEntry{"audiosamplerate", float64(audio.SampleRate)}, metaEntry{"audiosamplesize", float64(16)})
		}
		if audio.Channels > 0 {
			entries = append(entries, metaEntry{"stereo", audio.Channels > 1}, metaEntry{"audiochannels", float64(audio.Channels)})
		}
	}
	entries = append(entries, metaEntry{"encoder", "moq-export"})

	body, err := encodeScriptData("onMetaData", entries)
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

// encodeScriptData encodes a script tag's body: the name, then the entries
// as an AMF0 ECMA array in the order given. The name and every value go
// through go-amf0's encoder (the design card's FLV package); the array's
// framing, a marker, a count and each key's length-prefixed name, is
// written here because go-amf0 writes an array only from a Go map, whose
// order changes from run to run, and the file's bytes must not.
func encodeScriptData(name string, entries []metaEntry) ([]byte, error) {
	var b bytes.Buffer
	enc := amf0.NewEncoder(&b)
	if err := enc.Encode(name); err != nil {
		return nil, err
	}
	b.WriteByte(byte(amf0.MarkerEcmaArray))
	b.Write(binary.BigEndian.AppendUint32(nil, uint32(len(entries))))
	for _, e := range entries {
		if len(e.key) > math.MaxUint16 {
			return nil, fmt.Errorf("script data key of %d bytes", len(e.key))
		}
		b.Write(binary.BigEndian.AppendUint16(nil, uint16(len(e.key))))
		b.WriteString(e.key)
		if err := enc.Encode(e.value); err != nil {
			return nil, fmt.Errorf("script data %q: %w", e.key, err)
		}
	}
	if err := enc.Encode(amf0.ObjectEnd); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
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
