package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/mux"
)

// FileSummary describes one output the run wrote.
type FileSummary struct {
	Path      string  `json:"path"` // "-" for stdout
	Broadcast string  `json:"broadcast"`
	Segment   int     `json:"segment"`
	Format    string  `json:"format"`
	Size      int64   `json:"size"`          // bytes in the file
	Frames    int64   `json:"frames"`        // frames written to it
	Media     float64 `json:"media_seconds"` // from its first to its last frame
}

// TrackSummary accounts for the frames of one recorded track: received =
// written + late + dropped by the muxer (+ what was still buffered when a
// recording was cut short); lost is the media time its gaps skipped.
type TrackSummary struct {
	Broadcast      string  `json:"broadcast"`
	Track          string  `json:"track"`
	Kind           string  `json:"kind"`
	Received       int64   `json:"received"`
	Written        int64   `json:"written"`
	DroppedLate    int64   `json:"dropped_late"`
	DroppedByMuxer int64   `json:"dropped_by_muxer"`
	Gaps           int64   `json:"gaps"`
	Lost           float64 `json:"lost_seconds"`
}

func trackSummary(broadcast string, ts export.TrackStats) TrackSummary {
	return TrackSummary{Broadcast: broadcast, Track: ts.Name, Kind: ts.Kind.String(), Received: ts.Received, Written: ts.Written,
		DroppedLate: ts.DroppedLate, DroppedByMuxer: ts.DroppedByMuxer, Gaps: ts.Gaps, Lost: ts.LostToGaps.Seconds()}
}

// Summary is what a run did, shown when it ends: on stderr for people, as
// JSON with --json (stderr) or --summary FILE.
type Summary struct {
	Files      []FileSummary  `json:"files"`
	PerTrack   []TrackSummary `json:"per_track"`
	Media      float64        `json:"media_seconds"` // the longest recording
	Tracks     int            `json:"tracks"`
	Frames     int64          `json:"frames"`
	Bytes      int64          `json:"bytes"` // media payload bytes
	Late       int64          `json:"late"`
	Dropped    int64          `json:"dropped"`
	Reconnects int64          `json:"reconnects"`
	Error      string         `json:"error,omitempty"`
}

// summary gathers the counters of every recording and the files written.
func (a *app) summary(err error) Summary {
	s := a.snapshot()
	a.mu.Lock()
	files := append([]FileSummary{}, a.files...)
	tracks := append([]TrackSummary{}, a.tracks...)
	a.mu.Unlock()
	out := Summary{Files: files, PerTrack: tracks, Media: s.Media.Seconds(), Tracks: s.Tracks, Frames: s.Frames, Bytes: s.Bytes,
		Late: s.Late, Dropped: s.Dropped, Reconnects: s.Reconnects}
	if err != nil {
		out.Error = err.Error()
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
		notice(a.log, fmt.Sprintf("track %s of %s (%s): received %d, written %d, dropped late %d, dropped by the muxer %d, lost %.1fs in %d %s",
			t.Track, t.Broadcast, t.Kind, t.Received, t.Written, t.DroppedLate, t.DroppedByMuxer, t.Lost, t.Gaps, plural(int(t.Gaps), "gap", "gaps")))
	}
	notice(a.log, fmt.Sprintf("recorded %s in %d %s: %d %s, %d frames, late %d, dropped %d, reconnects %d",
		formatClock(time.Duration(s.Media*float64(time.Second))), len(s.Files), plural(len(s.Files), "file", "files"),
		s.Tracks, plural(s.Tracks, "track", "tracks"), s.Frames, s.Late, s.Dropped, s.Reconnects))
	return nil
}

// counted counts what a muxer was given for the file summary.
type counted struct {
	frames      int64
	first, last int64
	have        bool
}

func (c *counted) frame(f mux.Frame) {
	c.frames++
	if !c.have || f.Timestamp < c.first {
		c.first = f.Timestamp
	}
	if !c.have || f.Timestamp > c.last {
		c.last = f.Timestamp
	}
	c.have = true
}

func (c *counted) media() float64 {
	if !c.have {
		return 0
	}
	return float64(c.last-c.first) / 1e6
}

// countWriter counts the bytes written through it (stdout's size).
type countWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
