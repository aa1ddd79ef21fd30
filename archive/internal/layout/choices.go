package layout

import "time"

// The open points of the format (hang-recording.md §12 and the places the
// draft leaves to the writer), decided once, here.

const (
	// MediaTimescale is the .info timescale this writer records every
	// media, catalog and data track at: microseconds, the unit the hang
	// containers carry. Frame timestamps in segment objects are the
	// frames' media time in it. (The reference copies TRACK_INFO's; a
	// subscription that unpacked no TRACK_INFO has none to copy.)
	MediaTimescale = 1_000_000

	// PublisherPriority is the .info priority written for every track: the
	// TRACK_INFO Publisher Priority is not kept by the subscriber, and 0
	// is moq-lite's default.
	PublisherPriority = 0

	// ArchiveTimescale is the unit of record pts, duration and
	// durationMax (the catalog section's default: milliseconds). A
	// timeline track's .info carries it too, and each timeline frame's
	// timestamp is the pts of the record it adds (the reference's choice
	// is not shown in its sources).
	ArchiveTimescale = 1000

	// WriteFrameZero: positions are written without "frame" when it is 0
	// (readers accept both).
	WriteFrameZero = false
)

// Cutting (D-v2 timeline-cutting, as the reference CLI does): media
// records end at the first group boundary at least CutMin past their
// start, and a still-open group is split between frames at CutMax; sparse
// tracks (catalog, data) cut at every group end.
const (
	CutMin = 2 * time.Second
	CutMax = 10 * time.Second
)

// TimelineV1 is the broadcast timeline a version-1 recording is read
// through when its catalog names none (the draft's recommended name).
const TimelineV1 = "timeline.z"

// RetentionGrace is how long expired objects stay after the timeline
// stopped pointing at them, so readers holding an older timeline finish
// their GETs (the reference's default).
const RetentionGrace = 30 * time.Second

// CatalogForMedia is how a reader maps catalog versions to media, which
// v2 leaves undefined: the catalog in effect at media time t is the newest
// catalog record whose pts is at or before t, else the oldest one.
func CatalogForMedia(catalogPTS []int64, t int64) int {
	best := 0
	for i, p := range catalogPTS {
		if p <= t {
			best = i
		}
	}
	return best
}
