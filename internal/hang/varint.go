package hang

import (
	"errors"
	"math"
)

// The QUIC variable-length integer (RFC 9000 §16) that legacy and loc
// payloads use: two bits of length, then 6, 14, 30 or 62 bits of value.

var errVarint = errors.New("truncated varint")

// maxVarint is the largest value a varint holds.
const maxVarint = 1<<62 - 1

func parseVarint(b []byte) (uint64, int, error) {
	if len(b) == 0 {
		return 0, 0, errVarint
	}
	n := 1 << (b[0] >> 6)
	if len(b) < n {
		return 0, 0, errVarint
	}
	v := uint64(b[0] & 0x3f)
	for _, c := range b[1:n] {
		v = v<<8 | uint64(c)
	}
	return v, n, nil
}

func varintLen(v uint64) int {
	switch {
	case v < 1<<6:
		return 1
	case v < 1<<14:
		return 2
	case v < 1<<30:
		return 4
	default:
		return 8
	}
}

// appendVarint appends v, clamped to maxVarint.
func appendVarint(b []byte, v uint64) []byte {
	v = min(v, maxVarint)
	switch varintLen(v) {
	case 1:
		return append(b, byte(v))
	case 2:
		return append(b, byte(v>>8)|0x40, byte(v))
	case 4:
		return append(b, byte(v>>24)|0x80, byte(v>>16), byte(v>>8), byte(v))
	}
	return append(b, byte(v>>56)|0xc0, byte(v>>48), byte(v>>40), byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// Rescale converts v units of 1/scale seconds to microseconds without
// overflow; ok is false when the result does not fit an int64 or scale is 0.
func Rescale(v, scale uint64) (int64, bool) {
	if scale == 0 {
		return 0, false
	}
	if scale == 1_000_000 {
		if v > math.MaxInt64 {
			return 0, false
		}
		return int64(v), true
	}
	whole := v / scale
	if whole > math.MaxInt64/1_000_000 {
		return 0, false
	}
	rem := v % scale
	// rem < scale, so rem*1e6 fits unless scale is above ~1.8e13.
	var frac uint64
	if rem <= math.MaxUint64/1_000_000 {
		frac = rem * 1_000_000 / scale
	} else {
		frac = uint64(float64(rem) * 1e6 / float64(scale))
	}
	// whole*1e6 fits, but the fraction can still push the sum past MaxInt64.
	if whole*1_000_000 > math.MaxInt64-frac {
		return 0, false
	}
	return int64(whole*1_000_000 + frac), true
}

// RescaleSigned is Rescale for signed values.
func RescaleSigned(v int64, scale uint64) (int64, bool) {
	if v >= 0 {
		return Rescale(uint64(v), scale)
	}
	r, ok := Rescale(uint64(-v), scale)
	return -r, ok
}

// ToTimescale converts microseconds to ticks of timescale (rounding
// down; 0 means microseconds).
func ToTimescale(us int64, timescale uint64) int64 {
	if timescale == 1_000_000 || timescale == 0 {
		return us
	}
	return us/1_000_000*int64(timescale) + us%1_000_000*int64(timescale)/1_000_000
}
