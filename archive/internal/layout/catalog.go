package layout

import (
	"encoding/json"
	"time"
)

// Catalog tracks a recording may hold, in the order a reader tries them.
var CatalogTracks = []string{"catalog.json", "catalog.json.z", "catalog"}

// ArchiveSection is what a catalog says about a broadcast's timelines
// (v2 "archive.timelines", v1 "archive.track", or the early root
// "timeline").
type ArchiveSection struct {
	// Timelines maps an indexed track to its timeline track (v2).
	Timelines map[string]string
	// Track is the one broadcast timeline (v1).
	Track       string
	Timescale   uint64
	DurationMax uint64
	Version     int
}

// ParseArchiveSection reads the archive section of a catalog's JSON; ok
// is false when it has none.
func ParseArchiveSection(cat []byte) (ArchiveSection, bool) {
	var root struct {
		Archive *struct {
			Timelines   map[string]string `json:"timelines"`
			Track       string            `json:"track"`
			Timescale   uint64            `json:"timescale"`
			DurationMax uint64            `json:"durationMax"`
			Version     int               `json:"version"`
		} `json:"archive"`
		Timeline *struct {
			Track     string `json:"track"`
			Timescale uint64 `json:"timescale"`
		} `json:"timeline"`
	}
	if json.Unmarshal(cat, &root) != nil {
		return ArchiveSection{}, false
	}
	switch {
	case root.Archive != nil:
		a := root.Archive
		s := ArchiveSection{Timelines: a.Timelines, Track: a.Track, Timescale: a.Timescale, DurationMax: a.DurationMax, Version: a.Version}
		if s.Timescale == 0 {
			s.Timescale = ArchiveTimescale
		}
		return s, len(s.Timelines) > 0 || s.Track != ""
	case root.Timeline != nil && root.Timeline.Track != "":
		ts := root.Timeline.Timescale
		if ts == 0 {
			ts = ArchiveTimescale
		}
		return ArchiveSection{Track: root.Timeline.Track, Timescale: ts, Version: 1}, true
	}
	return ArchiveSection{}, false
}

// MoQEpoch is the origin of catalog clock wall times.
var MoQEpoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// Clock maps media time to wall-clock time (the catalog's root "clock").
type Clock struct {
	Wall      uint64 // wall time of pts 0, in Timescale units since MoQEpoch
	Timescale uint64 // default 1 000 000
}

// ParseClock reads a catalog's clock; ok is false when it has none or it
// is invalid (0 timescale, wall above 2^53-1).
func ParseClock(cat []byte) (Clock, bool) {
	var root struct {
		Clock *struct {
			Wall      *uint64 `json:"wall"`
			Timescale *uint64 `json:"timescale"`
		} `json:"clock"`
	}
	if json.Unmarshal(cat, &root) != nil || root.Clock == nil || root.Clock.Wall == nil {
		return Clock{}, false
	}
	c := Clock{Wall: *root.Clock.Wall, Timescale: 1_000_000}
	if root.Clock.Timescale != nil {
		c.Timescale = *root.Clock.Timescale
	}
	if c.Timescale == 0 || c.Wall > IDMax {
		return Clock{}, false
	}
	return c, true
}

// Time returns the wall-clock time of media time pts (microseconds).
func (c Clock) Time(ptsMicros int64) time.Time {
	w := time.Duration(c.Wall / c.Timescale * uint64(time.Second))
	w += time.Duration(c.Wall % c.Timescale * uint64(time.Second) / c.Timescale)
	return MoQEpoch.Add(w + time.Duration(ptsMicros)*time.Microsecond)
}

// Media returns the media time (microseconds) at wall-clock time t.
func (c Clock) Media(t time.Time) int64 {
	return (t.Sub(c.Time(0))).Microseconds()
}
