package h26x_test

import (
	"testing"

	"github.com/moq-export/moq-export/internal/codec/h26x"
)

func benchFrames(b *testing.B, annexB bool) (h26x.Codec, []byte, [][]byte) {
	vs := videoSamples(b)[0]
	s := vs.sample
	if annexB {
		s = s.MustAnnexB()
	}
	payloads := make([][]byte, len(s.Frames))
	total := 0
	for i, f := range s.Frames {
		payloads[i] = f.Payload
		total += len(f.Payload)
	}
	b.SetBytes(int64(total / len(payloads)))
	return vs.codec, s.Description, payloads
}

func benchmarkNormalizer(b *testing.B, annexB bool) {
	c, desc, payloads := benchFrames(b, annexB)
	n := mustNormalizer(b, c, desc)
	var out []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		units, err := n.Frame(payloads[i%len(payloads)])
		if err != nil {
			b.Fatal(err)
		}
		out = h26x.AppendAVCC(out[:0], units)
	}
}

// BenchmarkNormalizerAVCCToAVCC is the FLV/MKV path for a track with a
// description: split and re-join every frame.
func BenchmarkNormalizerAVCCToAVCC(b *testing.B) { benchmarkNormalizer(b, false) }

// BenchmarkNormalizerAnnexBToAVCC is the same for the browser form, with
// the parameter sets in band on every keyframe.
func BenchmarkNormalizerAnnexBToAVCC(b *testing.B) { benchmarkNormalizer(b, true) }

// BenchmarkAVCCToAnnexBWithParamSets is the MPEG-TS path.
func BenchmarkAVCCToAnnexBWithParamSets(b *testing.B) {
	c, desc, payloads := benchFrames(b, false)
	n := mustNormalizer(b, c, desc)
	ps := n.ParamSets().NALUs()
	var out []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		units, err := n.Frame(payloads[i%len(payloads)])
		if err != nil {
			b.Fatal(err)
		}
		out = h26x.AppendAnnexB(out[:0], ps)
		out = h26x.AppendAnnexB(out, units)
	}
}

func BenchmarkDTSNext(b *testing.B) {
	vs := videoSamples(b)[0]
	n := mustNormalizer(b, vs.codec, vs.sample.Description)
	units := make([][][]byte, len(vs.sample.Frames))
	for i, f := range vs.sample.Frames {
		u, err := n.Frame(f.Payload)
		if err != nil {
			b.Fatal(err)
		}
		units[i] = append([][]byte(nil), u...)
	}
	ps := n.ParamSets()
	d := h26x.NewDTS(vs.codec, 0)
	dur := vs.sample.Duration()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k := i % len(units)
		d.Next(ps, units[k], int64(i/len(units))*dur+vs.sample.Frames[k].Timestamp)
	}
}

func BenchmarkBuildHEVCDecoderConfig(b *testing.B) {
	ps, _, err := h26x.ParseHEVCDecoderConfig(videoSamples(b)[1].sample.Description)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h26x.BuildHEVCDecoderConfig(ps.VPS, ps.SPS, ps.PPS); err != nil {
			b.Fatal(err)
		}
	}
}
