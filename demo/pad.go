package demo

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/moq-export/moq-export/internal/samples"
)

// padded caches the padded samples by name and bitrate: a benchmark
// publishing a thousand broadcasts at 4 Mb/s shares one copy.
var padded sync.Map // paddedKey -> *samples.Sample

type paddedKey struct {
	name    string
	bitrate int
}

// paddedSample returns a copy of video sample s whose frames are padded
// with a filler-data NAL unit (H.264 type 12, H.265 type 38; decoders skip
// them) to bitrate bits per second on average; frames already larger stay
// as they are. The payloads are AVCC/HVCC with 4-byte lengths.
func paddedSample(s *samples.Sample, bitrate int) (*samples.Sample, error) {
	key := paddedKey{s.Name, bitrate}
	if p, ok := padded.Load(key); ok {
		return p.(*samples.Sample), nil
	}
	var header []byte
	switch {
	case strings.HasPrefix(s.Codec, "avc1"), strings.HasPrefix(s.Codec, "avc3"):
		header = []byte{12} // nal_ref_idc 0, filler data
	case strings.HasPrefix(s.Codec, "hvc1"), strings.HasPrefix(s.Codec, "hev1"):
		header = []byte{38 << 1, 1} // FD_NUT, layer 0, temporal id 0
	default:
		return nil, fmt.Errorf("demo: VideoBitrate pads H.264 or H.265, not %s (%s)", s.Codec, s.Name)
	}
	if s.Framerate <= 0 {
		return nil, fmt.Errorf("demo: sample %s has no frame rate to pad to a bitrate", s.Name)
	}
	target := int(math.Ceil(float64(bitrate) / 8 / s.Framerate))
	out := *s
	out.Frames = make([]samples.SampleFrame, len(s.Frames))
	for i, f := range s.Frames {
		out.Frames[i] = f
		// length, header, at least one 0xFF and the stop bit
		fill := target - len(f.Payload) - 4 - len(header) - 1
		if fill < 1 {
			continue
		}
		p := make([]byte, 0, target)
		p = append(p, f.Payload...)
		p = binary.BigEndian.AppendUint32(p, uint32(len(header)+fill+1))
		p = append(p, header...)
		for range fill {
			p = append(p, 0xff)
		}
		out.Frames[i].Payload = append(p, 0x80)
	}
	p, _ := padded.LoadOrStore(key, &out)
	return p.(*samples.Sample), nil
}
