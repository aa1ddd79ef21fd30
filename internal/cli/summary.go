package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"time"

	"github.com/moq-export/moq-export/record"
)

// Summary is what a run did, shown when it ends: on stderr for people, as
// JSON with --json (stderr) or --summary FILE.
type Summary struct {
	// Start is when the recording's media began, in UTC: its first file's
	// start (record.FileInfo.Start, by the catalog's clock when the
	// broadcast has one); absent without a file.
	Start     *time.Time        `json:"start,omitempty"`
	Files     []record.FileInfo `json:"files"`
	PerTrack  []TrackSummary    `json:"per_track"`
	Media     float64           `json:"media_seconds"` // the longest recording, ms precision
	Tracks    int               `json:"tracks"`
	Frames    int64             `json:"frames"`
	Bytes     int64             `json:"bytes"`      // media payload bytes
	FileBytes int64             `json:"file_bytes"` // the size of the files written
	Late      int64             `json:"late"`
	Dropped   int64             `json:"dropped"`
	// AfterEnd counts the frames received after a recording's end
	// (--duration, a limit, Ctrl-C) that were not written.
	AfterEnd   int64 `json:"after_end"`
	Reconnects int64 `json:"reconnects"`
	// Restarted counts the recordings --record-all started again, in new
	// files, after a failed write (a full disk) had ended them.
	Restarted int `json:"restarted,omitempty"`
	// Upload is the object store's accounting (-o s3://...).
	Upload *record.UploadStats `json:"upload,omitempty"`
	Error  string              `json:"error,omitempty"`
}

// TrackSummary is a track's accounting in the summary: every frame
// received is written, dropped late, dropped by the muxer, or received
// after the recording's end.
type TrackSummary struct {
	record.TrackInfo
	AfterEnd int64 `json:"after_end"`
}

// afterEnd counts what a track received and did not write or drop: the
// frames still buffered when its recording ended.
func afterEnd(t record.TrackInfo) int64 {
	return max(0, t.Received-t.Written-t.DroppedLate-t.DroppedByMuxer)
}

// summary gathers the counters of every recording and the files written.
func (a *app) summary(err error) Summary {
	s := a.snapshot()
	files := []record.FileInfo{}
	tracks := []TrackSummary{}
	if a.rec != nil {
		files = a.rec.Files()
		for _, t := range a.rec.Tracks() {
			tracks = append(tracks, TrackSummary{TrackInfo: t, AfterEnd: afterEnd(t)})
		}
	}
	// A recording lasts as long as its files together (each to the end of
	// its last frame, as players show it); the counters of the running
	// export end at the last frame's start.
	media := s.Media.Seconds()
	perBroadcast := map[string]float64{}
	var fileBytes int64
	var start *time.Time
	for _, f := range files {
		if !f.Start.IsZero() && (start == nil || f.Start.Before(*start)) {
			start = &f.Start
		}
		perBroadcast[f.Broadcast] += f.Media
		media = max(media, perBroadcast[f.Broadcast])
		fileBytes += f.Size
	}
	out := Summary{Start: start, Files: files, PerTrack: tracks, Media: math.Round(media*1000) / 1000, Tracks: s.Tracks, Frames: s.Frames, Bytes: s.Bytes,
		FileBytes: fileBytes, Late: s.Late, Dropped: s.Dropped, Reconnects: s.Reconnects}
	for _, t := range tracks {
		out.AfterEnd += t.AfterEnd
	}
	if a.rec != nil {
		out.Restarted = a.rec.Stats().Restarted
	}
	if s.Upload.BytesWritten > 0 {
		u := s.Upload
		out.Upload = &u
	}
	if err != nil {
		out.Error = describe(err)
	}
	return out
}

// fileFinished reports a file the moment it is finished (closed and
// playable), not at the end of the run: a service that records for days
// logs each file as it completes. Under --log-format json the record has
// the fields path, duration (seconds), bytes (the file's size), frames,
// broadcast, format and segment. Standard output and files that are not
// regular files (/dev/null) are not reported.
func (a *app) fileFinished(e record.FileEvent) {
	if !e.Finished {
		return
	}
	f := e.File
	if f.Path == "-" {
		return
	}
	if st, err := os.Stat(f.Path); err == nil && !st.Mode().IsRegular() {
		return // a device, not a file (an object's path is no local one)
	}
	attrs := []any{"path", f.Path, "duration", f.Media, "bytes", f.Size, "frames", f.Frames, "broadcast", f.Broadcast, "format", f.Format, "segment", f.Segment}
	if e.Err != nil {
		a.event(slog.LevelWarn, fmt.Sprintf("finishing %s failed: %s (it may be incomplete)", f.Path, describe(e.Err)), append(attrs, "err", describe(e.Err))...)
		return
	}
	a.event(LevelNotice, fmt.Sprintf("wrote %s: %s, %s, %s", f.Path, formatClock(seconds(f.Media)), count(f.Frames, "frame", "frames"), formatBytes(f.Size)), attrs...)
}

// event logs msg with attrs as fields under --log-format json; the line
// for people says it all in msg.
func (a *app) event(level slog.Level, msg string, attrs ...any) {
	if a.cfg.LogFormat != logJSON {
		attrs = nil
	}
	a.log.Log(context.Background(), level, msg, attrs...)
}

// seconds converts a float of seconds to a Duration.
func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

// count says "1 frame", "2 frames".
func count(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// report shows the summary of the run that ended with err: a notice per
// track that lost frames and one for the whole (unless -q), and the JSON
// of --json and --summary. Files were reported as they finished.
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
	for _, t := range s.PerTrack {
		if t.Written > 0 && t.DroppedLate == 0 && t.DroppedByMuxer == 0 && t.Gaps == 0 && t.DroppedNoKeyframe == 0 {
			continue // nothing lost: the total says it (--json has every track)
		}
		state := ""
		if t.Written == 0 {
			state = " not recorded" // no frame of it in the files
		}
		noKey := ""
		if t.DroppedNoKeyframe > 0 {
			noKey = fmt.Sprintf(", %s without a keyframe before them not received", count(t.DroppedNoKeyframe, "frame", "frames"))
		}
		a.event(LevelNotice, fmt.Sprintf("track %s of %s (%s)%s: received %d, written %d, dropped late %d, dropped by the muxer %d, after the end %d, lost %.1fs in %s%s",
			t.Track, t.Broadcast, t.Kind, state, t.Received, t.Written, t.DroppedLate, t.DroppedByMuxer, t.AfterEnd, t.Lost, count(t.Gaps, "gap", "gaps"), noKey),
			"broadcast", t.Broadcast, "track", t.Track, "kind", t.Kind, "received", t.Received, "written", t.Written, "dropped_late", t.DroppedLate,
			"dropped_by_muxer", t.DroppedByMuxer, "after_end", t.AfterEnd, "gaps", t.Gaps, "lost_seconds", t.Lost, "dropped_no_keyframe", t.DroppedNoKeyframe)
	}
	msg := fmt.Sprintf("recorded %s in %s: %s, %s (%s of media", formatClock(seconds(s.Media)), count(int64(len(s.Files)), "file", "files"),
		count(int64(s.Tracks), "track", "tracks"), count(s.Frames, "frame", "frames"), formatBytes(s.Bytes))
	if s.FileBytes > 0 {
		msg += ", " + formatBytes(s.FileBytes) + " of files"
	}
	msg += fmt.Sprintf("), late %d, dropped %d", s.Late, s.Dropped)
	if s.AfterEnd > 0 {
		msg += fmt.Sprintf(", %s after the end not written", count(s.AfterEnd, "frame", "frames"))
	}
	msg += fmt.Sprintf(", reconnects %d", s.Reconnects)
	if s.Restarted > 0 {
		msg += fmt.Sprintf(", %s after a failed write", count(int64(s.Restarted), "recording restarted", "recordings restarted"))
	}
	a.event(LevelNotice, msg, "duration", s.Media, "files", len(s.Files), "tracks", s.Tracks, "frames", s.Frames, "bytes", s.Bytes,
		"file_bytes", s.FileBytes, "late", s.Late, "dropped", s.Dropped, "after_end", s.AfterEnd, "reconnects", s.Reconnects)
	return nil
}
