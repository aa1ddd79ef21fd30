package objstore

// SetManifestWriteHook makes every spool manifest write call f first, until
// the returned restore is called.
func SetManifestWriteHook(f func()) (restore func()) {
	testHookManifestWrite.Store(&f)
	return func() { testHookManifestWrite.Store(nil) }
}
