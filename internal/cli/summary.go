package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/moq-export/moq-export/record"
)

// Summary is what a run did, shown when it ends: on stderr for people, as
// JSON with --json (stderr) or --summary FILE.
type Summary struct {
	Files      []record.FileInfo  `json:"files"`
	PerTrack   []record.TrackInfo `json:"per_track"`
	Media      float64            `json:"media_seconds"` // the longest recording
	Tracks     int                `json:"tracks"`
	Frames     int64              `json:"frames"`
	Bytes      int64              `json:"bytes"` // media payload bytes
	Late       int64              `json:"late"`
	Dropped    int64              `json:"dropped"`
	Reconnects int64              `json:"reconnects"`
	// Upload is the object store's accounting (-o s3://...).
	Upload *record.UploadStats `json:"upload,omitempty"`
	Error  string              `json:"error,omitempty"`
}

// summary gathers the counters of every recording and the files written.
func (a *app) summary(err error) Summary {
	s := a.snapshot()
	files := []record.FileInfo{}
	tracks := []record.TrackInfo{}
	if a.rec != nil {
		files = a.rec.Files()
		tracks = a.rec.Tracks()
	}
	out := Summary{Files: files, PerTrack: tracks, Media: s.Media.Seconds(), Tracks: s.Tracks, Frames: s.Frames, Bytes: s.Bytes,
		Late: s.Late, Dropped: s.Dropped, Reconnects: s.Reconnects}
	if s.Upload.BytesWritten > 0 {
		u := s.Upload
		out.Upload = &u
	}
	if err != nil {
		out.Error = describe(err)
	}
	return out
}

// report shows the summary of the run that ended with err: a notice per
// file and one for the whole (unless -q), and the JSON of --json and
// --summary.
func (a *app) report(err error) error {
	s := a.summary(err)
	if a.cfg.SummaryFile != "" {
		b, jerr := json.MarshalIndent(s, "", "  ")
		if jerr == nil {
			jerr = os.WriteFile(a.cfg.SummaryFile, append(b, '\n'), 0o644)
		}
		if jerr != nil {
			a.log.Error("writing --summary "+a.cfg.SummaryFile, "err", jerr)
		}
	}
	if a.cfg.JSON {
		b, _ := json.Marshal(s)
		a.con.Write(append(b, '\n'))
		return nil
	}
	if len(s.Files) == 0 {
		return nil
	}
	for _, f := range s.Files {
		if f.Path == "-" {
			continue // stdout: the total says it
		}
		notice(a.log, fmt.Sprintf("wrote %s: %s, %d frames, %s", f.Path, formatClock(time.Duration(f.Media*float64(time.Second))), f.Frames, formatBytes(f.Size)))
	}
	for _, t := range s.PerTrack {
		if t.DroppedLate == 0 && t.DroppedByMuxer == 0 && t.Gaps == 0 {
			continue // nothing lost: the total says it (--json has every track)
		}
		notice(a.log, fmt.Sprintf("track %s of %s (%s): received %d, written %d, dropped late %d, dropped by the muxer %d, lost %.1fs in %d %s",
			t.Track, t.Broadcast, t.Kind, t.Received, t.Written, t.DroppedLate, t.DroppedByMuxer, t.Lost, t.Gaps, plural(int(t.Gaps), "gap", "gaps")))
	}
	notice(a.log, fmt.Sprintf("recorded %s in %d %s: %d %s, %d frames, late %d, dropped %d, reconnects %d",
		formatClock(time.Duration(s.Media*float64(time.Second))), len(s.Files), plural(len(s.Files), "file", "files"),
		s.Tracks, plural(s.Tracks, "track", "tracks"), s.Frames, s.Late, s.Dropped, s.Reconnects))
	return nil
}
