package h26x_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/moq-export/moq-export/internal/codec/h26x"
	"github.com/moq-export/moq-export/internal/samples"
)

// avcc returns nalus with 4-byte lengths.
func avcc(nalus ...[]byte) []byte { return h26x.AppendAVCC(nil, nalus) }

// slice returns an H.264 coded slice NAL unit of n bytes (type 1).
func slice(n int) []byte {
	b := bytes.Repeat([]byte{0xaa}, n)
	b[0] = 0x41
	return b
}

// TestDetectFramingTellsLengthPrefixedFromAnnexB: every frame of the
// H.264 and H.265 samples is detected as length-prefixed in its AVCC form
// and as Annex B in its browser form; a unit of 256 to 511 bytes, whose
// length 00 00 01 xx looks like a start code (what made the MKV muxer
// write frames MediaMTX sent as garbage), is still length-prefixed; bytes
// that are neither are unknown.
func TestDetectFramingTellsLengthPrefixedFromAnnexB(t *testing.T) {
	for _, tc := range []struct {
		sample string
		codec  h26x.Codec
	}{{"h264", h26x.H264}, {"h265", h26x.H265}} {
		s := samples.MustLoadSample(tc.sample)
		ab, err := s.AnnexB()
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range s.Frames {
			if got := h26x.DetectFraming(tc.codec, f.Payload); got != h26x.FramingLengthPrefixed {
				t.Fatalf("%s frame %d (AVCC): %v", tc.sample, i, got)
			}
			if got := h26x.DetectFraming(tc.codec, ab.Frames[i].Payload); got != h26x.FramingAnnexB {
				t.Fatalf("%s frame %d (Annex B): %v", tc.sample, i, got)
			}
		}
	}
	for _, tc := range []struct {
		name string
		p    []byte
		want h26x.Framing
	}{
		{"a 300-byte unit, length 00 00 01 2c", avcc(slice(300)), h26x.FramingLengthPrefixed},
		{"a 1-byte unit cannot be a slice, but is a unit", avcc([]byte{0x09}, slice(20)), h26x.FramingLengthPrefixed},
		{"lengths one short of the end", append(avcc(slice(40)), 0x00), h26x.FramingUnknown},
		{"lengths past the end", avcc(slice(40))[:30], h26x.FramingUnknown},
		{"forbidden bit set", avcc([]byte{0xc1, 1, 2}), h26x.FramingUnknown},
		{"3-byte start code", []byte{0, 0, 1, 0x65, 1, 2}, h26x.FramingAnnexB},
		{"4-byte start code", []byte{0, 0, 0, 1, 0x67, 1, 2}, h26x.FramingAnnexB},
		{"start code, then a forbidden bit", []byte{0, 0, 1, 0x80}, h26x.FramingUnknown},
		{"neither", []byte{0x12, 0x34, 0x56, 0x78, 0x9a}, h26x.FramingUnknown},
		{"empty", nil, h26x.FramingUnknown},
	} {
		if got := h26x.DetectFraming(h26x.H264, tc.p); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestDeframerConvertsOnceAndRefusesWhatParsesNeitherWay: a length-prefixed
// track comes out in Annex B with the same NAL units, an Annex B track
// unchanged; the framing is decided by the first frame; a payload that
// parses neither way is refused and counted, never passed on.
func TestDeframerConvertsOnceAndRefusesWhatParsesNeitherWay(t *testing.T) {
	s := samples.MustLoadSample("h264")
	d := h26x.NewDeframer(h26x.H264)
	var buf []byte
	for i, f := range s.Frames {
		out, decided, err := d.AnnexB(buf, f.Payload)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if decided != (i == 0) {
			t.Fatalf("frame %d decided %v", i, decided)
		}
		want, _ := h26x.SplitAVCC(f.Payload, 4)
		got, err := h26x.SplitAnnexB(out)
		if err != nil || len(got) != len(want) {
			t.Fatalf("frame %d: %d units (%v), want %d", i, len(got), err, len(want))
		}
		for j := range want {
			if !bytes.Equal(got[j], want[j]) {
				t.Fatalf("frame %d unit %d differs", i, j)
			}
		}
		buf = out
	}
	if d.Framing() != h26x.FramingLengthPrefixed || d.Refused.Load() != 0 {
		t.Fatalf("framing %v, refused %d", d.Framing(), d.Refused.Load())
	}
	if _, _, err := d.AnnexB(nil, []byte{0x12, 0x34, 0x56, 0x78, 0x9a}); !errors.Is(err, h26x.ErrUnframed) || d.Refused.Load() != 1 {
		t.Fatalf("garbage: %v, refused %d", err, d.Refused.Load())
	}

	ab := h26x.NewDeframer(h26x.H264)
	p := []byte{0, 0, 0, 1, 0x65, 1, 2, 3}
	if out, _, err := ab.AnnexB(nil, p); err != nil || !bytes.Equal(out, p) || ab.Framing() != h26x.FramingAnnexB {
		t.Fatalf("Annex B: %x %v %v", out, err, ab.Framing())
	}
	// Undecided frames do not decide.
	un := h26x.NewDeframer(h26x.H264)
	if _, decided, err := un.AnnexB(nil, []byte{1, 2, 3}); err == nil || decided || un.Framing() != h26x.FramingUnknown {
		t.Fatalf("garbage decided the framing: %v %v", err, un.Framing())
	}
}

// FuzzDeframer: any payload gives Annex B whose units split cleanly, or
// ErrUnframed; never a panic.
func FuzzDeframer(f *testing.F) {
	s := samples.MustLoadSample("h264")
	f.Add(s.Frames[0].Payload, true)
	f.Add(avcc(slice(300)), true)
	f.Add([]byte{0, 0, 1, 0x65, 1, 2}, false)
	f.Add([]byte{0, 0, 0, 1, 0x40, 1, 0x26, 1}, false)
	f.Fuzz(func(t *testing.T, p []byte, h265 bool) {
		c := h26x.H264
		if h265 {
			c = h26x.H265
		}
		d := h26x.NewDeframer(c)
		out, _, err := d.AnnexB(nil, p)
		if err != nil {
			if !errors.Is(err, h26x.ErrUnframed) {
				t.Fatalf("error %v is not ErrUnframed", err)
			}
			return
		}
		units, err := h26x.SplitAnnexB(out)
		if err != nil || len(units) == 0 {
			t.Fatalf("output %x does not split as Annex B: %v", out, err)
		}
	})
}
