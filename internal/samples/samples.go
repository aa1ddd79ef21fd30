// Package samples embeds the sample media of testdata/ into the module,
// so that tests and the built-in demo broadcast of cmd/moq-export (package
// demo) run on a machine without ffmpeg and without the source tree. It
// owns the samples and their frame-dump format, nothing else.
//
// Each testdata/<name>.frames file is a frame dump made by
// scripts/mktestdata.sh from ffmpeg's test sources: the magic "MOQXFRM1", a
// uvarint length and a JSON header (the catalog fields of the rendition),
// then one record per frame in decode order: a flags byte (bit 0 =
// keyframe), a zigzag varint presentation timestamp in microseconds, a
// uvarint payload length and the payload. H.264/H.265 payloads are AVCC
// (4-byte lengths) with the avcC/hvcC in Description; AAC is raw with the
// AudioSpecificConfig in Description.
package samples

import (
	"bufio"
	"embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
)

//go:embed testdata/*.frames
var testdataFS embed.FS

// Sample is a short recording of one rendition.
type Sample struct {
	Name        string        `json:"-"`
	Kind        string        `json:"kind"` // "video", "audio" or "text"
	Codec       string        `json:"codec"`
	Description []byte        `json:"description,omitempty"`
	Width       int           `json:"width,omitempty"`
	Height      int           `json:"height,omitempty"`
	Framerate   float64       `json:"framerate,omitempty"`
	SampleRate  int           `json:"sampleRate,omitempty"`
	Channels    int           `json:"channels,omitempty"`
	Frames      []SampleFrame `json:"-"`
}

// SampleFrame is one encoded frame of a Sample.
type SampleFrame struct {
	Timestamp int64 // presentation time, microseconds
	Keyframe  bool
	Payload   []byte
}

// Duration returns the time from the first to one frame past the last
// presentation timestamp, estimated from the smallest frame gap.
func (s *Sample) Duration() int64 {
	if len(s.Frames) == 0 {
		return 0
	}
	ts := make([]int64, len(s.Frames))
	for i, f := range s.Frames {
		ts[i] = f.Timestamp
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	gap := int64(0)
	for i := 1; i < len(ts); i++ {
		if d := ts[i] - ts[i-1]; d > 0 && (gap == 0 || d < gap) {
			gap = d
		}
	}
	return ts[len(ts)-1] - ts[0] + gap
}

const sampleMagic = "MOQXFRM1"

// SampleNames lists the embedded samples, sorted.
func SampleNames() []string {
	entries, _ := testdataFS.ReadDir("testdata")
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".frames"); ok {
			names = append(names, n)
		}
	}
	names = append(names, WebVTTName)
	sort.Strings(names)
	return names
}

// LoadSample returns the embedded sample called name ("h264", "aac", ...).
func LoadSample(name string) (*Sample, error) {
	switch name {
	case WebVTTName:
		return webvttSample(), nil
	case UTF8Name:
		return utf8Sample(), nil
	case TTMLName:
		return ttmlSample(), nil
	}
	f, err := testdataFS.Open(path.Join("testdata", name+".frames"))
	if err != nil {
		return nil, fmt.Errorf("sample %q: %w", name, err)
	}
	defer f.Close()
	s, err := DecodeSample(f)
	if err != nil {
		return nil, fmt.Errorf("sample %q: %w", name, err)
	}
	s.Name = name
	return s, nil
}

// MustLoadSample is LoadSample for tests and the demo; it panics on error,
// which can only come from a broken build.
func MustLoadSample(name string) *Sample {
	s, err := LoadSample(name)
	if err != nil {
		panic(err)
	}
	return s
}

// Encode writes s as a frame dump.
func (s *Sample) Encode(w io.Writer) error {
	hdr, err := json.Marshal(s)
	if err != nil {
		return err
	}
	buf := []byte(sampleMagic)
	buf = binary.AppendUvarint(buf, uint64(len(hdr)))
	buf = append(buf, hdr...)
	for _, f := range s.Frames {
		var flags byte
		if f.Keyframe {
			flags = 1
		}
		buf = append(buf, flags)
		buf = binary.AppendVarint(buf, f.Timestamp)
		buf = binary.AppendUvarint(buf, uint64(len(f.Payload)))
		buf = append(buf, f.Payload...)
	}
	_, err = w.Write(buf)
	return err
}

// maxSamplePayload bounds a record so a corrupt file cannot make us allocate
// without limit.
const maxSamplePayload = 16 << 20

// DecodeSample reads a frame dump.
func DecodeSample(r io.Reader) (*Sample, error) {
	br := bufio.NewReader(r)
	magic := make([]byte, len(sampleMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != sampleMagic {
		return nil, errors.New("not a frame dump")
	}
	n, err := binary.ReadUvarint(br)
	if err != nil || n > 1<<20 {
		return nil, errors.New("bad frame dump header")
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return nil, fmt.Errorf("frame dump header: %w", err)
	}
	s := &Sample{}
	if err := json.Unmarshal(hdr, s); err != nil {
		return nil, fmt.Errorf("frame dump header: %w", err)
	}
	for {
		flags, err := br.ReadByte()
		if err == io.EOF {
			return s, nil
		}
		if err != nil {
			return nil, err
		}
		ts, err := binary.ReadVarint(br)
		if err != nil {
			return nil, fmt.Errorf("frame %d: %w", len(s.Frames), err)
		}
		size, err := binary.ReadUvarint(br)
		if err != nil || size > maxSamplePayload {
			return nil, fmt.Errorf("frame %d: bad size", len(s.Frames))
		}
		p := make([]byte, size)
		if _, err := io.ReadFull(br, p); err != nil {
			return nil, fmt.Errorf("frame %d: %w", len(s.Frames), err)
		}
		s.Frames = append(s.Frames, SampleFrame{Timestamp: ts, Keyframe: flags&1 != 0, Payload: p})
	}
}
