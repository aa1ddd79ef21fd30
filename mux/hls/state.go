package hls

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"
)

// stateVersion is the version of the state file's layout.
const stateVersion = 1

// state is what the package directory says of itself: enough to rewrite
// every playlist and the MPD after a restart. It is written (atomically)
// after each segment and before the playlists that name it, so it never
// names a segment that is not there.
type state struct {
	Version    int               `json:"version"`
	Renditions []*renditionState `json:"renditions"`
	Chapters   []chapterState    `json:"chapters,omitempty"`
	// Source ties the package's timeline to the broadcast's, as the run
	// that wrote its newest segments saw it; nil in a package an older
	// version wrote (it is then continued after a discontinuity, as
	// then).
	Source *sourceState `json:"source,omitempty"`
}

// sourceState is what a continued recording needs to know whether it
// joined the broadcast on the package's timeline (a recorder restarted
// onto the same live broadcast) or on a new one (a restarted publisher,
// whose times start again), and where its frames then belong
// (Writer.sameTimeline).
type sourceState struct {
	// Offset is the broadcast's time of package time 0, µs: a frame of
	// broadcast time ts is at package time ts-Offset.
	Offset int64 `json:"offset"`
	// Wall is the least difference seen between a leading frame's wall
	// clock (its arrival, or Options.Clock's) and its broadcast time, µs:
	// the broadcast's clock on the wall clock, plus the shortest delay.
	Wall int64 `json:"wall"`
	// Key is the broadcast time of the leading rendition's newest
	// keyframe, µs: a recorder that joins the same broadcast again before
	// its next keyframe starts there.
	Key int64 `json:"key"`
	// KeyGap is the longest interval between two of the leading
	// rendition's keyframes seen, µs (0: fewer than two).
	KeyGap int64 `json:"key_gap,omitempty"`
}

type renditionState struct {
	ID        string         `json:"id"`              // file name prefix: v0, a1, ...
	Name      string         `json:"name"`            // the catalog's track name
	Kind      string         `json:"kind"`            // video, audio or text
	Lang      string         `json:"lang,omitempty"`  // BCP 47, from the catalog
	Label     string         `json:"label,omitempty"` // a name for a picker, from the catalog
	Codecs    string         `json:"codecs"`
	Width     int            `json:"width,omitempty"`
	Height    int            `json:"height,omitempty"`
	Framerate float64        `json:"framerate,omitempty"`
	Rate      int            `json:"sample_rate,omitempty"`
	Channels  int            `json:"channels,omitempty"`
	Timescale uint32         `json:"timescale"`
	Delay     int64          `json:"delay_ticks,omitempty"` // the edit list's media time (B-frame delay)
	Inits     []string       `json:"inits"`                 // init segment names, by generation
	Segments  []segmentState `json:"segments"`
	// Media, when set, is the one file that holds the rendition (a
	// RangeStore's layout): every init segment (InitRanges, by
	// generation) and segment (segmentState.Off, Bytes) is a byte range
	// of it, and Inits and every segment's URI name it.
	Media      string      `json:"media,omitempty"`
	InitRanges []byteRange `json:"init_ranges,omitempty"`

	out rendered // what the Writer rendered of it (not stored)
}

// segmentState is one complete media segment.
type segmentState struct {
	Num   int       `json:"n"`
	URI   string    `json:"uri"`
	Init  int       `json:"init"`  // index into Inits (text: none)
	Start int64     `json:"start"` // µs on the package's timeline
	Dur   int64     `json:"dur"`   // µs
	Bytes int64     `json:"bytes"`
	Disc  bool      `json:"disc,omitempty"` // the timeline breaks before it
	Off   int64     `json:"off,omitempty"`  // where it starts in renditionState.Media
	Date  time.Time `json:"date"`           // wall clock of Start
}

// marshal renders the state as json.Marshal does, each segment once: a
// write copies the segments earlier writes rendered (rendered.stateSegs)
// and renders only those since, so it costs about the same at the
// thousandth segment as at the first (encoding/json rendered every
// segment at every write). A test holds it to json.Marshal byte for
// byte.
func (s *state) marshal(b []byte) ([]byte, error) {
	b = append(b, `{"version":`...)
	b = strconv.AppendInt(b, int64(s.Version), 10)
	b = append(b, `,"renditions":`...)
	if s.Renditions == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, rs := range s.Renditions {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = rs.appendJSON(b); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if len(s.Chapters) > 0 {
		c, err := json.Marshal(s.Chapters)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"chapters":`...)
		b = append(b, c...)
	}
	if s.Source != nil {
		c, err := json.Marshal(s.Source)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"source":`...)
		b = append(b, c...)
	}
	return append(b, '}'), nil
}

// segmentsKey is where a rendition's JSON without its segments says so;
// it cannot be inside a JSON string, whose quotes are escaped.
var segmentsKey = []byte(`"segments":null`)

// appendJSON appends rs as json.Marshal writes it: its other fields
// rendered by encoding/json, its segments from what earlier writes
// rendered of them.
//
// Its other fields are rendered again only when they changed (shapeOf:
// a rendition's init segments are only ever added, so their counts tell).
func (rs *renditionState) appendJSON(b []byte) ([]byte, error) {
	c := &rs.out
	if sh := shapeOf(rs); c.head == nil || sh != c.headOf {
		head := *rs
		head.Segments = nil
		h, err := json.Marshal(&head)
		if err != nil {
			return nil, err
		}
		c.head, c.headOf = h, sh
	}
	h := c.head
	at := bytes.Index(h, segmentsKey)
	if at < 0 {
		return nil, errors.New("hls: state: no segments key")
	}
	b = append(b, h[:at]...)
	b = append(b, `"segments":`...)
	if rs.Segments == nil {
		b = append(b, "null"...)
	} else {
		if c.stateSegs > len(rs.Segments) {
			c.stateJSON, c.stateSegs = c.stateJSON[:0], 0
		}
		for ; c.stateSegs < len(rs.Segments); c.stateSegs++ {
			if c.stateSegs > 0 {
				c.stateJSON = append(c.stateJSON, ',')
			}
			var err error
			if c.stateJSON, err = rs.Segments[c.stateSegs].appendJSON(c.stateJSON); err != nil {
				return nil, err
			}
		}
		b = append(b, '[')
		b = append(b, c.stateJSON...)
		b = append(b, ']')
	}
	return append(b, h[at+len(segmentsKey):]...), nil
}

// appendJSON appends s as json.Marshal writes it. The fields are written
// one by one (encoding/json's reflection cost some 12,000 instructions a
// segment, more than the rest of the state's rendering); a URI with a
// character JSON escapes, or a date MarshalJSON might refuse or write
// otherwise than in UTC, goes through encoding/json.
func (s segmentState) appendJSON(b []byte) ([]byte, error) {
	if !jsonPlain(s.URI) || s.Date.Location() != time.UTC || s.Date.Year() < 0 || s.Date.Year() > 9999 {
		j, err := json.Marshal(s)
		return append(b, j...), err
	}
	b = append(b, `{"n":`...)
	b = strconv.AppendInt(b, int64(s.Num), 10)
	b = append(b, `,"uri":"`...)
	b = append(b, s.URI...)
	b = append(b, `","init":`...)
	b = strconv.AppendInt(b, int64(s.Init), 10)
	b = append(b, `,"start":`...)
	b = strconv.AppendInt(b, s.Start, 10)
	b = append(b, `,"dur":`...)
	b = strconv.AppendInt(b, s.Dur, 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, s.Bytes, 10)
	if s.Disc {
		b = append(b, `,"disc":true`...)
	}
	if s.Off != 0 {
		b = append(b, `,"off":`...)
		b = strconv.AppendInt(b, s.Off, 10)
	}
	b = append(b, `,"date":"`...)
	b = s.Date.AppendFormat(b, time.RFC3339Nano)
	return append(b, `"}`...), nil
}

// jsonPlain reports whether encoding/json writes s as it is between
// quotes: printable ASCII without the characters it escapes.
func jsonPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// byteRange is a range of a rendition's media file.
type byteRange struct {
	Off int64 `json:"off"`
	Len int64 `json:"len"`
}

// fileEnd is the length of a ranged rendition's media file that its
// state names: its last init segment or segment, whichever ends later
// (they are written one after the other).
func (rs *renditionState) fileEnd() int64 {
	end := int64(0)
	if n := len(rs.InitRanges); n > 0 {
		end = rs.InitRanges[n-1].Off + rs.InitRanges[n-1].Len
	}
	if n := len(rs.Segments); n > 0 {
		end = max(end, rs.Segments[n-1].Off+rs.Segments[n-1].Bytes)
	}
	return end
}

// end is where the segment's media ends on the package's timeline.
func (s segmentState) end() int64 { return s.Start + s.Dur }

// loadState reads the state of an existing package; nil, nil when there
// is none.
func loadState(st Store, name string) (*state, error) {
	b, err := st.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("hls: reading the package state %s: %w", name, err)
	}
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("hls: the package state %s is damaged (%v): %w", name, err, ErrBadState)
	}
	if s.Version != stateVersion {
		return nil, fmt.Errorf("hls: the package state %s has version %d, not %d: %w", name, s.Version, stateVersion, ErrBadState)
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("hls: the package state %s is damaged (%v): %w", name, err, ErrBadState)
	}
	return &s, nil
}

// check refuses a state the Writer cannot continue: what it names must be
// plain names, its indexes in range, its segments in order.
func (s *state) check() error {
	ids := map[string]bool{}
	for _, rs := range s.Renditions {
		if rs == nil || !plain(rs.ID) || ids[rs.ID] || (rs.Kind != "video" && rs.Kind != "audio" && rs.Kind != "text") {
			return errors.New("a rendition without a plain, unique id and a kind")
		}
		ids[rs.ID] = true
		for _, in := range rs.Inits {
			if !plain(in) {
				return fmt.Errorf("init segment name %q", in)
			}
		}
		if rs.Media != "" {
			if !plain(rs.Media) || rs.Kind == "text" || len(rs.InitRanges) != len(rs.Inits) {
				return fmt.Errorf("%s: media file %q with %d init ranges for %d inits", rs.ID, rs.Media, len(rs.InitRanges), len(rs.Inits))
			}
			end := int64(0)
			for _, r := range rs.InitRanges {
				if r.Off < end || r.Len <= 0 {
					return fmt.Errorf("%s: init range %d+%d", rs.ID, r.Off, r.Len)
				}
				end = r.Off + r.Len
			}
			for i, seg := range rs.Segments {
				if seg.URI != rs.Media || seg.Off < 0 || seg.Bytes <= 0 || (i > 0 && seg.Off < rs.Segments[i-1].Off+rs.Segments[i-1].Bytes) {
					return fmt.Errorf("%s segment %d: range %d+%d of %q", rs.ID, i, seg.Off, seg.Bytes, seg.URI)
				}
			}
		}
		for i, seg := range rs.Segments {
			noInit := rs.Kind == "text" && seg.Init == 0 && len(rs.Inits) == 0
			if seg.Init < 0 || (seg.Init >= len(rs.Inits) && !noInit) || !plain(seg.URI) || seg.Dur <= 0 || seg.Start < 0 || seg.Num < 1 {
				return fmt.Errorf("%s segment %d", rs.ID, i)
			}
			if i > 0 && (seg.Num <= rs.Segments[i-1].Num || seg.Start < rs.Segments[i-1].Start) {
				return fmt.Errorf("%s segments out of order at %d", rs.ID, i)
			}
		}
	}
	return nil
}

// plain reports whether name is a plain file name.
func plain(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00") && len(name) <= 255
}

// ErrBadState means an existing package's state file cannot be read, so
// the package cannot be continued.
var ErrBadState = errors.New("package state unreadable")
