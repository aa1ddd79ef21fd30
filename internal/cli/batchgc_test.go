package cli

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestAnArchiveExportSetsTheCollectorsPercentUnlessGOGCIsSet: the
// command's batch setting applies when GOGC is not in the environment, and
// a GOGC the user set stays.
func TestAnArchiveExportSetsTheCollectorsPercentUnlessGOGCIsSet(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	batchGC()
	if got := debug.SetGCPercent(100); got != batchGCPercent {
		t.Errorf("GOGC unset: the collector's percent is %d, want %d", got, batchGCPercent)
	}

	t.Setenv("GOGC", "100")
	batchGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100 set by the user: the collector's percent is %d, want it left at 100", got)
	}
}
