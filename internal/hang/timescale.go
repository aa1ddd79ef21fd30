package hang

import "math"

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
