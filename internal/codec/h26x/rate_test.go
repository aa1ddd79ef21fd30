package h26x_test

import (
	"testing"

	"github.com/moq-export/moq-export/internal/codec/h26x"
)

// TestFrameRateIsWhatTheSPSTimingDeclares: the samples' SPS declare 30
// fps; an SPS cut before its VUI, or none, or one of the other codec,
// declares none.
func TestFrameRateIsWhatTheSPSTimingDeclares(t *testing.T) {
	for _, vs := range videoSamples(t) {
		ps, _, err := h26x.ParseDecoderConfig(vs.codec, vs.sample.Description)
		if err != nil {
			t.Fatal(err)
		}
		if got := h26x.FrameRate(vs.codec, ps); got != 30 {
			t.Errorf("%v: %v fps, want 30", vs.codec, got)
		}
		cut := ps.Clone()
		cut.SPS[0] = cut.SPS[0][:4]
		other := h26x.H264
		if vs.codec == h26x.H264 {
			other = h26x.H265
		}
		for name, got := range map[string]float64{
			"cut SPS":     h26x.FrameRate(vs.codec, cut),
			"no SPS":      h26x.FrameRate(vs.codec, h26x.ParamSets{}),
			"other codec": h26x.FrameRate(other, ps),
		} {
			if got != 0 {
				t.Errorf("%v, %s: %v fps, want 0", vs.codec, name, got)
			}
		}
	}
}
