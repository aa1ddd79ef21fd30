package cli

import (
	"os"
	"runtime/debug"
)

// batchGCPercent is the collector's GOGC while the command exports an
// archive (not following it): a batch that ends when the reading does.
//
// Such an export allocates about as much as it reads (every segment
// object is read into memory the engine and the muxer share, then let
// go: ~150 MB for an hour of one 250 kb/s rendition), almost none of it
// live at once. At the default GOGC of 100 the collector runs every few
// megabytes, dozens of times per hour of media; at 400 it runs a quarter
// as often, for 10% less CPU on that hour's export into MP4, and the
// process peaks at about 75 MB instead of 52 MB (docs/performance.md).
// A process-wide setting, so the command's, never the library's.
const batchGCPercent = 400

// batchGC sets batchGCPercent unless GOGC is set in the environment, which
// the runtime has applied already and which stays the user's choice.
func batchGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(batchGCPercent)
	}
}
