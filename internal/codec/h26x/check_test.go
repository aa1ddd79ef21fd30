package h26x

import (
	"errors"
	"testing"
)

func TestCheckAccessUnitTakesWhatTheCodecSaysAndNothingElse(t *testing.T) {
	idr := []byte{0x65, 0x88, 0x84}
	sps := []byte{0x67, 0x42, 0x00, 0x1f}
	for _, tt := range []struct {
		name       string
		p          []byte
		lengthSize int
		ok         bool
	}{
		{"FourByteLengths", append(append([]byte{0, 0, 0, 4}, sps...), append([]byte{0, 0, 0, 3}, idr...)...), 4, true},
		{"TwoByteLengths", append([]byte{0, 3}, idr...), 2, true},
		{"AnnexB", append([]byte{0, 0, 0, 1}, idr...), 4, true},
		{"LengthPastTheEnd", append([]byte{0, 0, 0, 9}, idr...), 4, false},
		{"LengthsShortOfTheEnd", append(append([]byte{0, 0, 0, 3}, idr...), 0xff), 4, false},
		// What the issue met: a legacy timestamp varint left before
		// AVCC, read as a length (100663222).
		{"VarintBeforeAVCC", append([]byte{0x06, 0x00, 0x00, 0xb6, 0x00, 0x00, 0x00, 0x03}, idr...), 4, false},
		{"ForbiddenBit", []byte{0, 0, 0, 2, 0xe5, 0x00}, 4, false},
		{"Empty", nil, 4, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckAccessUnit(H264, tt.p, tt.lengthSize)
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrMalformedAU)) {
				t.Fatalf("got %v, want ok %v", err, tt.ok)
			}
		})
	}
}

func FuzzCheckAccessUnit(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 0x65, 0x88, 0x84}, 4)
	f.Add([]byte{0, 0, 1, 0x65}, 4)
	f.Fuzz(func(t *testing.T, p []byte, ls int) {
		_ = CheckAccessUnit(H264, p, ls)
		_ = CheckAccessUnit(H265, p, ls)
	})
}

// TestCheckAccessUnitTakesH265NALUnitsWhoseLengthsAddUp: the same check
// on H.265, whose NAL unit header is two bytes (a temporal id of 0 is
// invalid, as is the forbidden bit).
func TestCheckAccessUnitTakesH265NALUnitsWhoseLengthsAddUp(t *testing.T) {
	idr := []byte{0x26, 0x01, 0xaf, 0x00} // IDR_W_RADL
	vps := []byte{0x40, 0x01, 0x0c}
	for _, tt := range []struct {
		name string
		p    []byte
		ok   bool
	}{
		{"FourByteLengths", append(append([]byte{0, 0, 0, 3}, vps...), append([]byte{0, 0, 0, 4}, idr...)...), true},
		{"AnnexB", append([]byte{0, 0, 0, 1}, idr...), true},
		{"LengthPastTheEnd", append([]byte{0, 0, 0, 9}, idr...), false},
		{"LengthsShortOfTheEnd", append(append([]byte{0, 0, 0, 4}, idr...), 0xff), false},
		{"VarintBeforeHVCC", append([]byte{0x06, 0x00, 0x00, 0xb6, 0x00, 0x00, 0x00, 0x04}, idr...), false},
		{"TemporalIDZero", []byte{0, 0, 0, 2, 0x26, 0x00}, false},
		{"ForbiddenBit", []byte{0, 0, 0, 2, 0xa6, 0x01}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckAccessUnit(H265, tt.p, 4)
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrMalformedAU)) {
				t.Fatalf("got %v, want ok %v", err, tt.ok)
			}
		})
	}
}
