package h26x_test

import (
	"bytes"
	"testing"

	"github.com/moq-export/moq-export/internal/codec/h26x"
)

// checkUnits asserts what every splitter promises: units are non-empty,
// lie inside in, and add up to at most len(in), so the allocation is
// bounded by the input.
func checkUnits(t *testing.T, in []byte, units [][]byte, overhead int) {
	t.Helper()
	total := 0
	for _, u := range units {
		if len(u) == 0 {
			t.Fatal("empty unit")
		}
		total += len(u) + overhead
	}
	if total > len(in) {
		t.Fatalf("%d units of %d bytes with framing from %d bytes of input", len(units), total, len(in))
	}
}

func FuzzSplitAnnexB(f *testing.F) {
	for _, vs := range videoSamples(f) {
		for _, fr := range vs.sample.MustAnnexB().Frames[:3] {
			f.Add(fr.Payload)
		}
	}
	f.Add([]byte{0, 0, 1})
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 1, 0x41, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		units, err := h26x.SplitAnnexB(b)
		if err != nil {
			if units != nil {
				t.Fatal("units with an error")
			}
			return
		}
		checkUnits(t, b, units, 3)
		// Re-framing with 4-byte start codes and splitting again is stable.
		again, err := h26x.SplitAnnexB(h26x.AppendAnnexB(nil, units))
		if err != nil || unitsString(again) != unitsString(units) {
			t.Fatalf("re-split differs: %v", err)
		}
	})
}

func FuzzSplitAVCC(f *testing.F) {
	for _, vs := range videoSamples(f) {
		for _, fr := range vs.sample.Frames[:3] {
			f.Add(fr.Payload, 4)
		}
	}
	f.Add([]byte{2, 0x67, 1, 1, 0x68}, 1)
	f.Add([]byte{0, 2, 0x67, 1}, 2)
	f.Fuzz(func(t *testing.T, b []byte, lengthSize int) {
		units, err := h26x.SplitAVCC(b, lengthSize)
		if err != nil {
			if units != nil {
				t.Fatal("units with an error")
			}
			return
		}
		checkUnits(t, b, units, lengthSize)
		if lengthSize == 4 {
			if again := h26x.AppendAVCC(nil, units); len(again) > len(b) {
				t.Fatal("re-joined payload longer than the input")
			}
		}
	})
}

func fuzzConfig(f *testing.F, c h26x.Codec) {
	for _, vs := range videoSamples(f) {
		f.Add(vs.sample.Description)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, lengthSize, err := h26x.ParseDecoderConfig(c, b)
		if err != nil {
			return
		}
		if lengthSize < 1 || lengthSize > 4 || lengthSize == 3 {
			t.Fatalf("lengthSize %d", lengthSize)
		}
		checkUnits(t, b, ps.NALUs(), 2)
		if fps := h26x.FrameRate(c, ps); fps < 0 || fps != fps {
			t.Fatalf("frame rate %v", fps)
		}
		// Whatever parses either builds into a record that parses back to
		// the same sets, or is rejected with an error.
		built, err := h26x.BuildDecoderConfig(c, ps)
		if err != nil {
			return
		}
		back, _, err := h26x.ParseDecoderConfig(c, built)
		if err != nil || !back.Equal(ps) {
			t.Fatalf("built record does not parse back: %v", err)
		}
	})
}

func FuzzParseAVCDecoderConfig(f *testing.F)  { fuzzConfig(f, h26x.H264) }
func FuzzParseHEVCDecoderConfig(f *testing.F) { fuzzConfig(f, h26x.H265) }

func FuzzNormalizerFrame(f *testing.F) {
	for _, vs := range videoSamples(f) {
		browser := vs.sample.MustAnnexB()
		for i := range 5 {
			f.Add(uint8(vs.codec), false, vs.sample.Frames[i].Payload, browser.Frames[i].Payload)
			f.Add(uint8(vs.codec), true, browser.Frames[i].Payload, vs.sample.Frames[i].Payload)
		}
	}
	descs := map[h26x.Codec][]byte{}
	for _, vs := range videoSamples(f) {
		descs[vs.codec] = vs.sample.Description
	}
	f.Fuzz(func(t *testing.T, codec uint8, annexB bool, first, second []byte) {
		c := h26x.H264
		if codec%2 == 0 {
			c = h26x.H265
		}
		var desc []byte
		if !annexB {
			desc = descs[c]
		}
		n := mustNormalizer(t, c, desc)
		d := h26x.NewDTS(c, 0)
		prev := int64(-1 << 62)
		for i, p := range [][]byte{first, second, first} {
			before := bytes.Clone(p)
			units, err := n.Frame(p)
			if !bytes.Equal(p, before) {
				t.Fatal("Frame modified its input")
			}
			if err != nil && units == nil {
				continue
			}
			for _, u := range units {
				if h26x.IsParameterSet(c, u) || h26x.IsAUD(c, u) {
					t.Fatal("parameter set or AUD in the output")
				}
			}
			if cfg := n.Config(); cfg != nil {
				if _, _, err := h26x.ParseDecoderConfig(c, cfg); err != nil {
					t.Fatalf("Config does not parse: %v", err)
				}
			}
			dts := d.Next(n.ParamSets(), units, int64(i)*33333)
			if dts <= prev {
				t.Fatalf("DTS %d after %d", dts, prev)
			}
			prev = dts
		}
	})
}

// FuzzIsKeyframeAnnexB: reading an Annex B access unit in place tells a
// keyframe exactly when splitting it and looking at its units does.
func FuzzIsKeyframeAnnexB(f *testing.F) {
	for _, vs := range videoSamples(f) {
		for _, fr := range vs.sample.MustAnnexB().Frames[:3] {
			f.Add(uint8(vs.codec), fr.Payload)
		}
	}
	f.Add(uint8(h26x.H264), []byte{0, 0, 1, 0, 0, 1, 0x65})
	f.Add(uint8(h26x.H265), []byte{0, 0, 0, 1, 0x26, 0x01, 0xaf})
	f.Fuzz(func(t *testing.T, c uint8, b []byte) {
		codec := h26x.Codec(c%2) + h26x.H264
		got := h26x.IsKeyframeAnnexB(codec, b)
		units, err := h26x.SplitAnnexB(b)
		if err != nil {
			return // no start code first: nothing to compare with
		}
		if want := h26x.IsKeyframe(codec, units); got != want {
			t.Fatalf("IsKeyframeAnnexB %v, IsKeyframe of its units %v (% x)", got, want, b[:min(len(b), 16)])
		}
	})
}
