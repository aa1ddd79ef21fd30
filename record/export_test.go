package record

import "time"

// SetFreeCheckEvery makes outputs look at the free space every n bytes
// (tests); the returned func restores the default.
func SetFreeCheckEvery(n int64) func() {
	old := freeCheckEvery
	freeCheckEvery = n
	return func() { freeCheckEvery = old }
}

// SetWriteRetry sets how soon RecordAll restarts a recording a failed
// write ended, the longest wait, and the free space it waits for (tests);
// the returned func restores the defaults.
func SetWriteRetry(first, longest time.Duration, free int64) func() {
	a, b, c := writeRetryMin, writeRetryMax, writeRetryFree
	writeRetryMin, writeRetryMax, writeRetryFree = first, longest, free
	return func() { writeRetryMin, writeRetryMax, writeRetryFree = a, b, c }
}
