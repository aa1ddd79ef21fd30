package record

import (
	"time"

	"github.com/moq-export/moq-export/export"
)

// FileEvent is a file opened or finished.
type FileEvent struct {
	Finished bool     // false: just opened (Size, Frames and Media are 0)
	File     FileInfo // what was written
	Err      error    // finishing it failed (the file may be incomplete)
	// Recording is the recording the file belongs to.
	Recording *Recording
}

// FileInfo describes one output a Recorder wrote.
type FileInfo struct {
	Path      string  `json:"path"`          // "-" for a Stream; the URL for an object
	URL       string  `json:"url,omitempty"` // the object's URL (s3://bucket/key)
	Broadcast string  `json:"broadcast"`
	Segment   int     `json:"segment"`
	Format    string  `json:"format"`
	Size      int64   `json:"size"`          // bytes written
	Frames    int64   `json:"frames"`        // frames written to it
	Media     float64 `json:"media_seconds"` // from its first frame to the end of its last, in ms
	// Start is the file's start in UTC, what {time} names: the wall-clock
	// time of its first frame by the catalog's clock when the broadcast
	// has one, else the wall clock when the file was opened.
	Start time.Time `json:"start"`
}

// Stats sums the counters of a Recorder's recordings, running and ended.
type Stats struct {
	Recordings int           // recordings running now
	Recorded   int           // recordings started so far
	Media      time.Duration // media time written (the longest recording)
	Tracks     int           // tracks recorded now, or by the ended recordings
	Frames     int64
	Bytes      int64 // payload bytes
	Late       int64
	Dropped    int64
	Lost       time.Duration // the most media time one track lost to gaps (outages)
	// Skipped counts the renditions not recorded because the format
	// cannot carry them (subtitles in FLV or TS; a codec it lacks),
	// each also logged; the selection's choices are not counted.
	Skipped int
	// Restarted counts the recordings RecordAll started again, into new
	// files, after a failed write (a full disk) ended them.
	Restarted int
	// Behind is how far the written position trails live: the newest
	// frame time received on any track of the broadcast less the newest
	// written of that track (export.Export.Behind), for a Recorder the
	// most of its running recordings; 0 once a recording ended. A kill
	// loses it on top of the last second: after a long outage, while
	// the missed groups are fetched and written in order, up to the
	// outage.
	Behind time.Duration
	// RecordingsBehind counts the running recordings that trail live by
	// more than 2 s, each logged as it falls behind and as it catches up.
	RecordingsBehind int
	Upload           UploadStats // an Uploader Output's (an object store): zero otherwise
}

// TrackInfo accounts for the frames of one recorded track: received =
// written + dropped late + dropped by the muxer (+ what was still buffered
// when a recording was cut short); Lost is the media time its gaps
// skipped (see export.TrackStats).
type TrackInfo struct {
	Broadcast      string `json:"broadcast"`
	Track          string `json:"track"`
	Kind           string `json:"kind"`
	Received       int64  `json:"received"`
	Written        int64  `json:"written"`
	DroppedLate    int64  `json:"dropped_late"`
	DroppedByMuxer int64  `json:"dropped_by_muxer"`
	// DroppedMalformed counts frames whose payload was not what the
	// track's codec says (export.TrackStats.DroppedMalformed).
	DroppedMalformed int64   `json:"dropped_malformed"`
	Gaps             int64   `json:"gaps"`
	Lost             float64 `json:"lost_seconds"`
	// DroppedNoKeyframe counts frames dropped before they were received:
	// no keyframe led to them (export.TrackStats.DroppedNoKeyframe).
	DroppedNoKeyframe int64 `json:"dropped_no_keyframe"`
}

func trackInfo(broadcast string, ts export.TrackStats) TrackInfo {
	return TrackInfo{Broadcast: broadcast, Track: ts.Name, Kind: ts.Kind.String(), Received: ts.Received, Written: ts.Written,
		DroppedLate: ts.DroppedLate, DroppedByMuxer: ts.DroppedByMuxer, DroppedMalformed: ts.DroppedMalformed, Gaps: ts.Gaps, Lost: ts.LostToGaps.Seconds(),
		DroppedNoKeyframe: ts.DroppedNoKeyframe}
}

// Stats sums the counters of every recording, running or ended.
func (r *Recorder) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.done
	if len(r.active) > 0 {
		// While recording: the tracks being recorded now; after: the
		// tracks the ended recordings had.
		s.Tracks = 0
	}
	s.Recordings = len(r.active)
	for ex := range r.active {
		st := ex.Stats()
		b := ex.Behind()
		s.Behind = max(s.Behind, b)
		if b > behindAfter {
			s.RecordingsBehind++
		}
		s.Tracks += st.Tracks
		s.Frames += st.Frames
		s.Bytes += st.Bytes
		s.Late += st.Late
		s.Dropped += st.Dropped
		s.Skipped += st.NotExported
		s.Media = max(s.Media, st.MediaTime)
		for _, ts := range ex.TrackStats() {
			s.Lost = max(s.Lost, ts.LostToGaps)
		}
	}
	if u, ok := r.opts.Output.(Uploader); ok {
		s.Upload = u.UploadStats()
	}
	s.Restarted = int(r.restarts.Load())
	return s
}

// Tracks returns the accounting of every track recorded so far: those of
// the ended recordings, then those running.
func (r *Recorder) Tracks() []TrackInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]TrackInfo{}, r.tracks...)
	for ex, name := range r.active {
		for _, ts := range ex.TrackStats() {
			out = append(out, trackInfo(name, ts))
		}
	}
	return out
}

// Files returns the files finished so far, in the order they finished.
func (r *Recorder) Files() []FileInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]FileInfo{}, r.files...)
}
