package cli

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestAnArchiveExportSetsTheCollectorsPercentAndFloorUnlessGOGCIsSet: the
// command's batch settings (the collector's percent and the heap floor)
// apply when GOGC is not in the environment, and a GOGC the user set stays,
// without a floor.
func TestAnArchiveExportSetsTheCollectorsPercentAndFloorUnlessGOGCIsSet(t *testing.T) {
	before := debug.SetGCPercent(50)
	t.Cleanup(func() { debug.SetGCPercent(before); batchFloor = nil })

	t.Setenv("GOGC", "50")
	batchFloor = nil
	batchGC()
	if got := debug.SetGCPercent(50); got != 50 {
		t.Errorf("GOGC=50 set by the user: the collector's percent is %d, want it left at 50", got)
	}
	if batchFloor != nil {
		t.Errorf("GOGC set by the user: a heap floor of %d bytes was set, want none", len(batchFloor))
	}

	os.Unsetenv("GOGC")
	batchGC()
	if got := debug.SetGCPercent(50); got != batchGCPercent {
		t.Errorf("GOGC unset: the collector's percent is %d, want %d", got, batchGCPercent)
	}
	if len(batchFloor) != batchFloorBytes {
		t.Errorf("GOGC unset: a heap floor of %d bytes, want %d", len(batchFloor), batchFloorBytes)
	}
}
