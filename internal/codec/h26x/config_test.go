package h26x_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/moq-export/moq-export/internal/codec/h26x"
)

func TestParseDecoderConfigReadsSampleParamSets(t *testing.T) {
	tests := []struct {
		codec         h26x.Codec
		vps, sps, pps int
	}{
		{h26x.H264, 0, 1, 1},
		{h26x.H265, 1, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.codec.String(), func(t *testing.T) {
			s := videoSamples(t)[tt.codec-1].sample
			ps, lengthSize, err := h26x.ParseDecoderConfig(tt.codec, s.Description)
			if err != nil {
				t.Fatal(err)
			}
			if lengthSize != 4 {
				t.Errorf("lengthSize = %d, want 4", lengthSize)
			}
			if len(ps.VPS) != tt.vps || len(ps.SPS) != tt.sps || len(ps.PPS) != tt.pps {
				t.Fatalf("got %d VPS, %d SPS, %d PPS; want %d, %d, %d", len(ps.VPS), len(ps.SPS), len(ps.PPS), tt.vps, tt.sps, tt.pps)
			}
			for _, u := range ps.NALUs() {
				if !h26x.IsParameterSet(tt.codec, u) {
					t.Errorf("unit % x is not a parameter set", u[:2])
				}
			}
			if !ps.Complete(tt.codec) {
				t.Error("Complete = false")
			}
		})
	}
}

func TestBuildAVCDecoderConfigReproducesFFmpegRecord(t *testing.T) {
	desc := videoSamples(t)[0].sample.Description
	ps, _, err := h26x.ParseAVCDecoderConfig(desc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := h26x.BuildAVCDecoderConfig(ps.SPS, ps.PPS)
	if err != nil {
		t.Fatal(err)
	}
	// ffmpeg wrote the sample's avcC, High-profile extension included.
	if !bytes.Equal(got, desc) {
		t.Fatalf("built avcC\n% x\nwant\n% x", got, desc)
	}
}

func TestBuildHEVCDecoderConfigMatchesFFmpegHeader(t *testing.T) {
	desc := videoSamples(t)[1].sample.Description
	ps, _, err := h26x.ParseHEVCDecoderConfig(desc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := h26x.BuildHEVCDecoderConfig(ps.VPS, ps.SPS, ps.PPS)
	if err != nil {
		t.Fatal(err)
	}
	// The 22 bytes before numOfArrays (profile, tier, level, constraint
	// flags, chroma format, bit depths, temporal layers, length size) must
	// match ffmpeg's; ffmpeg also stores an SEI array, which we do not.
	if !bytes.Equal(got[:22], desc[:22]) {
		t.Fatalf("built hvcC header\n% x\nwant\n% x", got[:22], desc[:22])
	}
	if got[22] != 3 {
		t.Errorf("numOfArrays = %d, want 3", got[22])
	}
	back, lengthSize, err := h26x.ParseHEVCDecoderConfig(got)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(ps) || lengthSize != 4 {
		t.Fatalf("built hvcC parses to other parameter sets or length size %d", lengthSize)
	}
	// array_completeness = 1 on every array.
	pos := 23
	for i := 0; i < 3; i++ {
		if got[pos]&0x80 == 0 {
			t.Errorf("array %d: array_completeness = 0", i)
		}
		n := int(got[pos+1])<<8 | int(got[pos+2])
		pos += 3
		for range n {
			pos += 2 + (int(got[pos])<<8 | int(got[pos+1]))
		}
	}
	if pos != len(got) {
		t.Errorf("arrays end at %d of %d bytes", pos, len(got))
	}
}

func TestBuildDecoderConfigRejectsMissingParamSets(t *testing.T) {
	h264ps, _, _ := h26x.ParseAVCDecoderConfig(videoSamples(t)[0].sample.Description)
	h265ps, _, _ := h26x.ParseHEVCDecoderConfig(videoSamples(t)[1].sample.Description)
	tests := []struct {
		name  string
		codec h26x.Codec
		ps    h26x.ParamSets
		err   error
	}{
		{"h264 without SPS", h26x.H264, h26x.ParamSets{PPS: h264ps.PPS}, h26x.ErrBadParamSet},
		{"h264 without PPS", h26x.H264, h26x.ParamSets{SPS: h264ps.SPS}, h26x.ErrBadParamSet},
		{"h264 PPS as SPS", h26x.H264, h26x.ParamSets{SPS: h264ps.PPS, PPS: h264ps.PPS}, h26x.ErrBadParamSet},
		{"h264 truncated SPS", h26x.H264, h26x.ParamSets{SPS: [][]byte{h264ps.SPS[0][:4]}, PPS: h264ps.PPS}, h26x.ErrBadParamSet},
		{"h264 three-byte SPS", h26x.H264, h26x.ParamSets{SPS: [][]byte{{0x67, 0x64, 0}}, PPS: h264ps.PPS}, h26x.ErrBadParamSet},
		{"h265 without VPS", h26x.H265, h26x.ParamSets{SPS: h265ps.SPS, PPS: h265ps.PPS}, h26x.ErrBadParamSet},
		{"h265 without PPS", h26x.H265, h26x.ParamSets{VPS: h265ps.VPS, SPS: h265ps.SPS}, h26x.ErrBadParamSet},
		{"h265 truncated SPS", h26x.H265, h26x.ParamSets{VPS: h265ps.VPS, SPS: [][]byte{h265ps.SPS[0][:16]}, PPS: h265ps.PPS}, h26x.ErrBadParamSet},
		{"h264 sets for h265", h26x.H265, h264ps, h26x.ErrBadParamSet},
		{"unknown codec", h26x.Codec(0), h264ps, h26x.ErrUnknownCodec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := h26x.BuildDecoderConfig(tt.codec, tt.ps)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if cfg != nil {
				t.Errorf("got a record of %d bytes with the error", len(cfg))
			}
		})
	}
}

func TestParseDecoderConfigRejectsTruncatedRecords(t *testing.T) {
	for _, vs := range videoSamples(t) {
		t.Run(vs.codec.String(), func(t *testing.T) {
			desc := vs.sample.Description
			end := len(desc)
			if vs.codec == h26x.H264 {
				end -= 4 // the High-profile extension is optional
			}
			for n := 0; n < end; n++ {
				if _, _, err := h26x.ParseDecoderConfig(vs.codec, desc[:n]); !errors.Is(err, h26x.ErrBadConfig) {
					t.Fatalf("%d of %d bytes: err = %v, want ErrBadConfig", n, len(desc), err)
				}
			}
		})
	}
}

func TestParseDecoderConfigRejectsMalformedRecords(t *testing.T) {
	avcC := videoSamples(t)[0].sample.Description
	hvcC := videoSamples(t)[1].sample.Description
	edit := func(b []byte, i int, v byte) []byte {
		b = bytes.Clone(b)
		b[i] = v
		return b
	}
	tests := []struct {
		name  string
		codec h26x.Codec
		in    []byte
	}{
		{"avcC version 0", h26x.H264, edit(avcC, 0, 0)},
		{"avcC length size 3", h26x.H264, edit(avcC, 4, 0xfe)},
		{"avcC SPS of wrong type", h26x.H264, edit(avcC, 8, 0x68)},
		{"avcC too many SPS", h26x.H264, edit(avcC, 5, 0xe3)},
		{"Annex B as avcC", h26x.H264, []byte{0, 0, 0, 1, 0x67, 0x64, 0, 0x0d}},
		{"hvcC version 2", h26x.H265, edit(hvcC, 0, 2)},
		{"hvcC length size 3", h26x.H265, edit(hvcC, 21, 0x0e)},
		{"hvcC VPS array holding SPS", h26x.H265, edit(hvcC, 28, 0x42)},
		{"hvcC too many arrays", h26x.H265, edit(hvcC, 22, 9)},
		{"avcC as hvcC", h26x.H265, avcC},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := h26x.ParseDecoderConfig(tt.codec, tt.in); !errors.Is(err, h26x.ErrBadConfig) {
				t.Fatalf("err = %v, want ErrBadConfig", err)
			}
		})
	}
}
