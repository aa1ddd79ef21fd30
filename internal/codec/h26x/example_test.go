package h26x_test

import (
	"fmt"

	"github.com/moq-export/moq-export/internal/codec/h26x"
	"github.com/moq-export/moq-export/internal/samples"
)

// A muxer normalizes every frame of a track, whichever form the broadcast
// uses, and writes the form its container needs.
func ExampleNormalizer() {
	s := samples.MustLoadSample("h264").MustAnnexB() // browser form: no description
	codec, _ := h26x.CodecOf("h264")
	n, err := h26x.NewNormalizer(codec, s.Description)
	if err != nil {
		panic(err)
	}
	fmt.Println("config before the first frame:", n.Config() == nil)
	var avcc []byte
	for _, f := range s.Frames[:2] {
		units, err := n.Frame(f.Payload)
		if err != nil {
			panic(err)
		}
		if n.ConfigChanged() {
			fmt.Printf("new avcC of %d bytes (send a sequence header)\n", len(n.Config()))
		}
		avcc = h26x.AppendAVCC(avcc[:0], units) // FLV/MKV payload
		fmt.Printf("keyframe=%v units=%d\n", h26x.IsKeyframe(codec, units), len(units))
	}
	// Output:
	// config before the first frame: true
	// new avcC of 45 bytes (send a sequence header)
	// keyframe=true units=2
	// keyframe=false units=1
}

// MPEG-TS wants Annex B with the parameter sets before every keyframe.
func ExampleAppendAnnexB() {
	s := samples.MustLoadSample("h265")
	n, err := h26x.NewNormalizer(h26x.H265, s.Description)
	if err != nil {
		panic(err)
	}
	f := s.Frames[0]
	units, err := n.Frame(f.Payload)
	if err != nil {
		panic(err)
	}
	es := h26x.AppendAnnexB(nil, [][]byte{h26x.AUD(h26x.H265)})
	if f.Keyframe {
		es = h26x.AppendAnnexB(es, n.ParamSets().NALUs())
	}
	es = h26x.AppendAnnexB(es, units)
	all, _ := h26x.SplitAnnexB(es)
	for _, u := range all {
		fmt.Print(h26x.NALUType(h26x.H265, u), " ")
	}
	fmt.Println()
	// Output: 35 32 33 34 20
}

func ExampleSplitAVCC() {
	units, err := h26x.SplitAVCC([]byte{0, 0, 0, 2, 0x67, 0x64, 0, 0, 0, 1, 0x68}, 4)
	fmt.Printf("% x %v\n", units, err)
	_, err = h26x.SplitAVCC([]byte{0, 0, 0, 9, 0x67}, 4)
	fmt.Println(err)
	// Output:
	// [67 64 68] <nil>
	// truncated H.264/H.265 data: NAL unit of 9 bytes at offset 4, 1 left
}

func ExampleBuildAVCDecoderConfig() {
	desc := samples.MustLoadSample("h264").Description
	ps, lengthSize, err := h26x.ParseAVCDecoderConfig(desc)
	if err != nil {
		panic(err)
	}
	avcC, err := h26x.BuildAVCDecoderConfig(ps.SPS, ps.PPS)
	if err != nil {
		panic(err)
	}
	fmt.Printf("length size %d, profile %d, level %d, %d bytes\n", lengthSize, avcC[1], avcC[3], len(avcC))
	// Output: length size 4, profile 100, level 13, 45 bytes
}

// Decode timestamps for a B-frame stream, PTS in microseconds.
func ExampleDTS() {
	s := samples.MustLoadSample("h264")
	n, _ := h26x.NewNormalizer(h26x.H264, s.Description)
	d := h26x.NewDTS(h26x.H264, 0) // or the track's catalog jitter
	for _, f := range s.Frames[:6] {
		units, _ := n.Frame(f.Payload)
		fmt.Printf("pts %6d dts %6d\n", f.Timestamp, d.Next(n.ParamSets(), units, f.Timestamp))
	}
	// Output:
	// pts      0 dts      0
	// pts 100000 dts   1000
	// pts  33333 dts   2000
	// pts  66666 dts  33333
	// pts 200000 dts  66666
	// pts 133333 dts 100000
}
