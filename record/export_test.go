package record

// SetFreeCheckEvery makes outputs look at the free space every n bytes
// (tests); the returned func restores the default.
func SetFreeCheckEvery(n int64) func() {
	old := freeCheckEvery
	freeCheckEvery = n
	return func() { freeCheckEvery = old }
}
