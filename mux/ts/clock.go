package ts

import "time"

// Time on the MPEG-TS side is counted in ticks of the 90 kHz system clock
// (PTS, DTS and the PCR base). Internally every value is an unwrapped int64;
// only the bits written to the stream are reduced to 33 bits.
const (
	clockRate = 90000
	// wrap33 is where PTS, DTS and PCR base wrap around (2^33 ticks, about
	// 26.5 hours).
	wrap33 = int64(1) << 33

	// pcrInterval is the target distance between PCRs. ISO 13818-1 allows
	// 100 ms, DVB asks for 40 ms; 30 ms leaves room for scheduling slack.
	pcrInterval = 30 * clockRate / 1000
	// pcrMaxGap is the largest PCR distance we accept before back-filling
	// PCR-only packets.
	pcrMaxGap = 40 * clockRate / 1000
	// pcrBackfill bounds the PCR-only packets written for one media gap.
	pcrBackfill = 40
	// pcrLead is how far the PCR runs behind the smallest DTS that may
	// still follow, the decoder's buffering time.
	pcrLead = 100 * clockRate / 1000
	// tableInterval is the longest media time between two PAT/PMT pairs
	// when no keyframe forces them earlier.
	tableInterval = 500 * clockRate / 1000
)

// ticksFromMicros converts microseconds to 90 kHz ticks, rounding to the
// nearest tick, without overflowing for any int64 input.
func ticksFromMicros(us int64) int64 {
	q, r := us/100, us%100
	t := q * 9
	// r in (-100, 100): r*9 in (-900, 900); round half away from zero.
	if r >= 0 {
		t += (r*9 + 50) / 100
	} else {
		t += (r*9 - 50) / 100
	}
	return t
}

// ticksFromDuration converts a duration to 90 kHz ticks.
func ticksFromDuration(d time.Duration) int64 {
	return ticksFromMicros(d.Microseconds())
}

// wrap reduces t to the 33 bits a PTS, DTS or PCR base carries.
func wrap(t int64) int64 {
	return t & (wrap33 - 1)
}
