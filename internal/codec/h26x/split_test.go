package h26x_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/moq-export/moq-export/internal/codec/h26x"
	"github.com/moq-export/moq-export/internal/samples"
)

// videoSamples returns the embedded H.264 and H.265 samples with their codec.
func videoSamples(t testing.TB) []struct {
	codec  h26x.Codec
	sample *samples.Sample
} {
	t.Helper()
	return []struct {
		codec  h26x.Codec
		sample *samples.Sample
	}{
		{h26x.H264, samples.MustLoadSample("h264")},
		{h26x.H265, samples.MustLoadSample("h265")},
	}
}

func unitsString(u [][]byte) string {
	var b bytes.Buffer
	for i, x := range u {
		if i > 0 {
			b.WriteByte('|')
		}
		fmt.Fprintf(&b, "% x", x)
	}
	return b.String()
}

func TestSplitAnnexBFindsUnitsBetweenStartCodes(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want string
		err  error
	}{
		{"empty input has no units", nil, "", nil},
		{"four-byte start codes", []byte{0, 0, 0, 1, 0x67, 0xaa, 0, 0, 0, 1, 0x68, 0xbb}, "67 aa|68 bb", nil},
		{"three-byte start codes", []byte{0, 0, 1, 0x65, 1, 2, 0, 0, 1, 0x06, 5}, "65 01 02|06 05", nil},
		{"mixed start codes", []byte{0, 0, 1, 0x09, 0xf0, 0, 0, 0, 1, 0x41, 9}, "09 f0|41 09", nil},
		{"leading zero bytes", []byte{0, 0, 0, 0, 0, 1, 0x41, 7}, "41 07", nil},
		{"trailing zero bytes dropped", []byte{0, 0, 1, 0x41, 7, 0, 0, 0, 0, 0, 1, 0x41, 8, 0, 0}, "41 07|41 08", nil},
		{"empty units skipped", []byte{0, 0, 1, 0, 0, 1, 0x41, 0, 0, 0, 1}, "41", nil},
		{"emulation prevention kept", []byte{0, 0, 1, 0x41, 0, 0, 3, 1}, "41 00 00 03 01", nil},
		{"start code only", []byte{0, 0, 0, 1}, "", nil},
		{"no start code", []byte{0x41, 0, 0, 1, 0x41}, "", h26x.ErrNoStartCode},
		{"AVCC length is not a start code", []byte{0, 0, 0, 2, 0x41, 0x9a}, "", h26x.ErrNoStartCode},
		{"single zero before one", []byte{0, 1, 0x41}, "", h26x.ErrNoStartCode},
		{"only zeros", []byte{0, 0, 0}, "", h26x.ErrNoStartCode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := h26x.SplitAnnexB(tt.in)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if s := unitsString(got); s != tt.want {
				t.Errorf("units = %q, want %q", s, tt.want)
			}
		})
	}
}

func TestSplitAVCCHonoursLengthSize(t *testing.T) {
	tests := []struct {
		name       string
		in         []byte
		lengthSize int
		want       string
		err        error
	}{
		{"empty input has no units", nil, 4, "", nil},
		{"four-byte lengths", []byte{0, 0, 0, 2, 0x67, 1, 0, 0, 0, 1, 0x68}, 4, "67 01|68", nil},
		{"two-byte lengths", []byte{0, 2, 0x67, 1, 0, 1, 0x68}, 2, "67 01|68", nil},
		{"one-byte lengths", []byte{2, 0x67, 1, 1, 0x68}, 1, "67 01|68", nil},
		{"three-byte lengths", []byte{0, 0, 1, 0x68}, 3, "68", nil},
		{"zero-length units skipped", []byte{0, 0, 0, 0, 0, 0, 0, 1, 0x41}, 4, "41", nil},
		{"length past the end", []byte{0, 0, 0, 5, 0x41, 1}, 4, "", h26x.ErrTruncated},
		{"partial length prefix", []byte{0, 0, 0, 1, 0x41, 0, 0}, 4, "", h26x.ErrTruncated},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff, 0x41}, 4, "", h26x.ErrTruncated},
		{"Annex B is not AVCC", []byte{0, 0, 0, 1, 0x67, 0x64, 0, 0, 0, 1, 0x68}, 4, "", h26x.ErrTruncated},
		{"length size zero", []byte{1, 0x41}, 0, "", h26x.ErrBadConfig},
		{"length size five", []byte{1, 0x41}, 5, "", h26x.ErrBadConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := h26x.SplitAVCC(tt.in, tt.lengthSize)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if s := unitsString(got); s != tt.want {
				t.Errorf("units = %q, want %q", s, tt.want)
			}
		})
	}
}

func TestAppendWritesFourByteFraming(t *testing.T) {
	units := [][]byte{{0x67, 1}, {0x68}}
	prefix := []byte("x")
	if got, want := h26x.AppendAVCC(prefix, units), []byte{'x', 0, 0, 0, 2, 0x67, 1, 0, 0, 0, 1, 0x68}; !bytes.Equal(got, want) {
		t.Errorf("AppendAVCC = % x, want % x", got, want)
	}
	if got, want := h26x.AppendAnnexB(prefix, units), []byte{'x', 0, 0, 0, 1, 0x67, 1, 0, 0, 0, 1, 0x68}; !bytes.Equal(got, want) {
		t.Errorf("AppendAnnexB = % x, want % x", got, want)
	}
	if got := h26x.AppendAnnexB(nil, nil); len(got) != 0 {
		t.Errorf("AppendAnnexB(nil, nil) = % x, want empty", got)
	}
}

func TestAVCCToAnnexBToAVCCIsLossless(t *testing.T) {
	for _, vs := range videoSamples(t) {
		t.Run(vs.codec.String(), func(t *testing.T) {
			var annexB, avcc []byte
			units := 0
			for i, f := range vs.sample.Frames {
				nalus, err := h26x.SplitAVCC(f.Payload, 4)
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				units += len(nalus)
				annexB = h26x.AppendAnnexB(annexB[:0], nalus)
				back, err := h26x.SplitAnnexB(annexB)
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				avcc = h26x.AppendAVCC(avcc[:0], back)
				if !bytes.Equal(avcc, f.Payload) {
					t.Fatalf("frame %d: AVCC -> Annex B -> AVCC changed the payload (%d -> %d bytes)", i, len(f.Payload), len(avcc))
				}
			}
			if units < len(vs.sample.Frames) {
				t.Fatalf("only %d NAL units in %d frames", units, len(vs.sample.Frames))
			}
		})
	}
}

func TestNALUClassification(t *testing.T) {
	tests := []struct {
		name          string
		codec         h26x.Codec
		nalu          []byte
		typ           int
		paramSet, aud bool
		keyframe      bool
	}{
		{"h264 SPS", h26x.H264, []byte{0x67, 0x64}, 7, true, false, false},
		{"h264 PPS", h26x.H264, []byte{0x68, 0xee}, 8, true, false, false},
		{"h264 IDR", h26x.H264, []byte{0x65, 0x88}, 5, false, false, true},
		{"h264 non-IDR", h26x.H264, []byte{0x41, 0x9a}, 1, false, false, false},
		{"h264 SEI", h26x.H264, []byte{0x06, 0x05}, 6, false, false, false},
		{"h264 AUD", h26x.H264, h26x.AUD(h26x.H264), 9, false, true, false},
		{"h264 empty", h26x.H264, nil, -1, false, false, false},
		{"h265 VPS", h26x.H265, []byte{0x40, 0x01, 0x0c}, 32, true, false, false},
		{"h265 SPS", h26x.H265, []byte{0x42, 0x01, 0x01}, 33, true, false, false},
		{"h265 PPS", h26x.H265, []byte{0x44, 0x01, 0xc1}, 34, true, false, false},
		{"h265 AUD", h26x.H265, h26x.AUD(h26x.H265), 35, false, true, false},
		{"h265 IDR_W_RADL", h26x.H265, []byte{0x26, 0x01, 0xaf}, 19, false, false, true},
		{"h265 IDR_N_LP", h26x.H265, []byte{0x28, 0x01, 0xaf}, 20, false, false, true},
		{"h265 CRA", h26x.H265, []byte{0x2a, 0x01, 0xaf}, 21, false, false, true},
		{"h265 BLA_W_LP", h26x.H265, []byte{0x20, 0x01, 0xaf}, 16, false, false, true},
		{"h265 TRAIL_R", h26x.H265, []byte{0x02, 0x01, 0xd0}, 1, false, false, false},
		{"h265 prefix SEI", h26x.H265, []byte{0x4e, 0x01, 0x05}, 39, false, false, false},
		{"h265 one-byte unit", h26x.H265, []byte{0x40}, -1, false, false, false},
		{"unknown codec", h26x.Codec(9), []byte{0x67}, -1, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := h26x.NALUType(tt.codec, tt.nalu); got != tt.typ {
				t.Errorf("NALUType = %d, want %d", got, tt.typ)
			}
			if got := h26x.IsParameterSet(tt.codec, tt.nalu); got != tt.paramSet {
				t.Errorf("IsParameterSet = %v, want %v", got, tt.paramSet)
			}
			if got := h26x.IsAUD(tt.codec, tt.nalu); got != tt.aud {
				t.Errorf("IsAUD = %v, want %v", got, tt.aud)
			}
			au := [][]byte{{0x06, 0x05}, tt.nalu}
			if got := h26x.IsKeyframe(tt.codec, au); got != tt.keyframe {
				t.Errorf("IsKeyframe = %v, want %v", got, tt.keyframe)
			}
		})
	}
}

func TestIsKeyframeAgreesWithSampleFlags(t *testing.T) {
	for _, vs := range videoSamples(t) {
		t.Run(vs.codec.String(), func(t *testing.T) {
			keys := 0
			for i, f := range vs.sample.Frames {
				nalus, err := h26x.SplitAVCC(f.Payload, 4)
				if err != nil {
					t.Fatal(err)
				}
				if got := h26x.IsKeyframe(vs.codec, nalus); got != f.Keyframe {
					t.Errorf("frame %d: IsKeyframe = %v, sample says %v", i, got, f.Keyframe)
				}
				if f.Keyframe {
					keys++
				}
			}
			if keys < 2 {
				t.Fatalf("sample has %d keyframes, want several", keys)
			}
		})
	}
}

func TestCodecOfMapsMuxFamilies(t *testing.T) {
	for _, tt := range []struct {
		family string
		want   h26x.Codec
		ok     bool
	}{{"h264", h26x.H264, true}, {"h265", h26x.H265, true}, {"av1", 0, false}, {"", 0, false}} {
		got, ok := h26x.CodecOf(tt.family)
		if got != tt.want || ok != tt.ok {
			t.Errorf("CodecOf(%q) = %v, %v; want %v, %v", tt.family, got, ok, tt.want, tt.ok)
		}
		if ok && got.String() != tt.family {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), tt.family)
		}
	}
}
