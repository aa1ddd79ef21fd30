package cli

import (
	"os"
	"runtime/debug"
)

// batchGCPercent and batchFloor are the collector's settings while the
// command exports an archive (not following it): a batch that ends when
// the reading does.
//
// Such an export allocates about as much as it reads (every segment object
// is read into memory the engine and the muxer share, then let go: ~150 MB
// for an hour of one 250 kb/s rendition), almost none of it live at once
// (~5 MB for that hour). The collector paces itself on the live heap: at
// GOGC 100 it would run every few megabytes, dozens of times per hour of
// media, and at 400 (the setting before) still about six times, each a
// pause of both cores, a mark phase with write barriers on, and memory
// handed back to the system and faulted in again.
//
// batchFloor is a heap floor instead: batchFloorBytes allocated once and
// never touched (address space, not memory: the pages are never written)
// and kept until the process exits. The collector counts it as live, so at
// GOGC 100 it runs once the heap reaches twice the floor plus what is
// really live: two or three times per hour of media, and the hour's export
// by the command peaks at ~100 MB of memory. The floor weighs less as the
// live heap grows (a day's export keeps its sample tables): the heap stays
// at twice the live data plus the floor, where GOGC 400 let it grow to
// five times the live data. In the hour's benchmark it takes about a fifth
// of the export's CPU off against GOGC 400, as GOGC 1000 does, but without
// GOGC 1000's eleven times the live data on a long export. A process-wide
// setting, so the command's, never the library's; a GOGC set in the
// environment turns both off.
const (
	batchGCPercent  = 100
	batchFloorBytes = 64 << 20
)

// batchFloor holds the heap floor (see batchGCPercent) once batchGC set it.
var batchFloor []byte

// batchGC sets batchGCPercent and the heap floor unless GOGC is set in
// the environment, which the runtime has applied already and which stays
// the user's choice.
func batchGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(batchGCPercent)
		if batchFloor == nil {
			batchFloor = make([]byte, batchFloorBytes)
		}
	}
}
