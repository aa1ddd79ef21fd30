package samples

import (
	"fmt"

	"github.com/moq-export/moq-export/internal/codec/h26x"
)

// AnnexB returns s in the form the browser publisher sends: for H.264/H.265
// samples with a description, a copy with no description whose payloads are
// Annex B (4-byte start codes) and whose keyframes carry the description's
// parameter sets in band (VPS, SPS, PPS) before their own NAL units. Other
// samples and samples without description are returned unchanged.
func (s *Sample) AnnexB() (*Sample, error) {
	var c h26x.Codec
	switch s.Codec[:min(4, len(s.Codec))] {
	case "avc1", "avc3":
		c = h26x.H264
	case "hvc1", "hev1":
		c = h26x.H265
	default:
		return s, nil
	}
	if len(s.Description) == 0 {
		return s, nil
	}
	n, err := h26x.NewNormalizer(c, s.Description)
	if err != nil {
		return nil, fmt.Errorf("sample %q: %w", s.Name, err)
	}
	out := *s
	out.Description = nil
	out.Frames = make([]SampleFrame, len(s.Frames))
	ps := n.ParamSets().NALUs()
	for i, f := range s.Frames {
		nalus, err := n.Frame(f.Payload)
		if err != nil {
			return nil, fmt.Errorf("sample %q frame %d: %w", s.Name, i, err)
		}
		var p []byte
		if f.Keyframe {
			p = h26x.AppendAnnexB(p, ps)
		}
		out.Frames[i] = SampleFrame{Timestamp: f.Timestamp, Keyframe: f.Keyframe, Payload: h26x.AppendAnnexB(p, nalus)}
	}
	return &out, nil
}

// MustAnnexB is AnnexB for tests; it panics on error, which can only come
// from a broken embedded sample.
func (s *Sample) MustAnnexB() *Sample {
	a, err := s.AnnexB()
	if err != nil {
		panic(err)
	}
	return a
}
