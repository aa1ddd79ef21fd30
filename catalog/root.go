package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"
)

// Epoch is the moq epoch, 2020-01-01T00:00:00Z, from which a Clock counts
// wall time.
var Epoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// maxSafe is the largest JSON-safe integer, 2^53-1.
const maxSafe = 1<<53 - 1

// ErrClock means a root clock section that hang refuses: a zero timescale,
// or a wall time outside the JSON-safe integers.
var ErrClock = errors.New("catalog: invalid clock")

// Clock is the catalog's root "clock": the broadcast's one mapping from
// media time to wall time, fixed for the broadcast. Wall is the wall-clock
// time of PTS 0 in Timescale units (default 1,000,000: microseconds)
// since Epoch.
type Clock struct {
	Wall      int64  `json:"wall"`
	Timescale uint64 `json:"timescale,omitempty"`
}

func (c Clock) check() error {
	if c.Wall < -maxSafe || c.Wall > maxSafe {
		return fmt.Errorf("%w: wall %d is not a JSON-safe integer", ErrClock, c.Wall)
	}
	return nil
}

// scale is the clock's timescale, the default when absent.
func (c Clock) scale() uint64 {
	if c.Timescale == 0 {
		return 1_000_000
	}
	return c.Timescale
}

// At returns the wall-clock time of media timestamp pts (microseconds,
// as model timestamps are).
func (c Clock) At(pts int64) time.Time {
	wallUs := float64(c.Wall) * 1e6 / float64(c.scale())
	return Epoch.Add(time.Duration(math.Round(wallUs+float64(pts)) * float64(time.Microsecond)))
}

// Archive is the catalog's root "archive": the timeline track of each
// indexed track and where a durable recording of them lives (hang's
// Recording format; v1 names one timeline in Track).
type Archive struct {
	Timelines   map[string]string `json:"timelines,omitempty"`
	Track       string            `json:"track,omitempty"`
	Timescale   *uint64           `json:"timescale,omitempty"`
	DurationMax *uint64           `json:"durationMax,omitempty"`
	Replay      *string           `json:"replay,omitempty"`
	Store       *string           `json:"store,omitempty"`
	Version     *int              `json:"version,omitempty"`
}

// DataSection is a root "json" or "binary" section: application data
// tracks (a chat log, telemetry, a thumbnail), by track name. They are
// not renditions and carry no media.
type DataSection struct {
	Tracks map[string]DataTrack `json:"tracks,omitempty"`
}

// DataTrack is one data track's entry.
type DataTrack struct {
	// Mode is "snapshot" (each group supersedes the previous) or
	// "stream" (one group, a log).
	Mode        string   `json:"mode"`
	Compression *string  `json:"compression,omitempty"`
	Schema      *string  `json:"schema,omitempty"` // json tracks
	Mime        *string  `json:"mime,omitempty"`   // binary tracks
	Broadcast   *string  `json:"broadcast,omitempty"`
	Bitrate     *uint64  `json:"bitrate,omitempty"`
	Jitter      *float64 `json:"jitter,omitempty"`
	Delay       *float64 `json:"delay,omitempty"`
}

// parseRoot reads the root sections besides the media ones: clock,
// archive, json and binary. A clock hang refuses is left out, ClockErr
// saying why; an archive or data section that does not parse is left out
// (they carry no media, so the catalog stays usable).
func (c *Catalog) parseRoot(root map[string]json.RawMessage) {
	if raw, ok := root["clock"]; ok && !isNull(raw) {
		var clk Clock
		var ts struct {
			Timescale *uint64 `json:"timescale"`
		}
		switch err := json.Unmarshal(raw, &clk); {
		case err != nil:
			c.clockErr = fmt.Errorf("%w: %w", ErrClock, err)
		case json.Unmarshal(raw, &ts) == nil && ts.Timescale != nil && *ts.Timescale == 0:
			c.clockErr = fmt.Errorf("%w: a zero timescale", ErrClock)
		default:
			if c.clockErr = clk.check(); c.clockErr == nil {
				c.Clock = &clk
			}
		}
	}
	if raw, ok := root["archive"]; ok && !isNull(raw) {
		var a Archive
		if json.Unmarshal(raw, &a) == nil {
			c.Archive = &a
		}
	}
	for key, dst := range map[string]**DataSection{"json": &c.JSON, "binary": &c.Binary} {
		if raw, ok := root[key]; ok && !isNull(raw) {
			var d DataSection
			if json.Unmarshal(raw, &d) == nil && len(d.Tracks) > 0 {
				*dst = &d
			}
		}
	}
}

// ClockErr says why the catalog's clock was refused (nil when it had none
// or it was valid).
func (c *Catalog) ClockErr() error { return c.clockErr }

// DataTracks returns the names of the json and binary data tracks, sorted:
// tracks the catalog lists that are no media.
func (c *Catalog) DataTracks() []string {
	var out []string
	for _, d := range []*DataSection{c.JSON, c.Binary} {
		if d == nil {
			continue
		}
		for name := range d.Tracks {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
