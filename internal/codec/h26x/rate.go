package h26x

import (
	"math"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h265"
)

// FrameRate returns the frame rate the first SPS of ps declares in its VUI
// timing information, or 0 when it declares none (or does not parse). A
// muxer whose catalog gave no framerate needs the rate before the frames
// show it: in decode order with B-frames the first two frames are several
// frames apart.
func FrameRate(c Codec, ps ParamSets) float64 {
	if len(ps.SPS) == 0 {
		return 0
	}
	var fps float64
	switch c {
	case H264:
		var s h264.SPS
		if s.Unmarshal(ps.SPS[0]) == nil {
			fps = s.FPS()
		}
	case H265:
		var s h265.SPS
		if s.Unmarshal(ps.SPS[0]) == nil {
			fps = s.FPS()
		}
	}
	if math.IsNaN(fps) || math.IsInf(fps, 0) || fps < 0 {
		return 0
	}
	return fps
}
