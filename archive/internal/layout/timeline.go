package layout

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
)

// syncTrailer ends every sync-flushed DEFLATE frame; the format removes it
// from each timeline frame and a reader appends it back.
var syncTrailer = []byte{0, 0, 0xff, 0xff}

// MaxTimelineGroup bounds what one timeline group may inflate to: a
// timeline of records is small, a larger output is a decompression bomb.
const MaxTimelineGroup = 64 << 20

// Record is a v2 timeline record: one span of its own track.
type Record struct {
	Sequence uint64
	PTS      uint64 // archive timescale
	Duration uint64
	Start    Position
	End      Position
	// Keyframe says whether the span's first frame is a join point
	// (absent means true).
	Keyframe bool
	// Extra holds members this package does not know, kept verbatim.
	Extra map[string]json.RawMessage
}

type jsonPos struct {
	Group *uint64 `json:"group"`
	Frame *uint64 `json:"frame,omitempty"`
}

func appendPos(b []byte, p Position) []byte {
	b = fmt.Appendf(b, `{"group":%d`, p.Group)
	if p.Frame != 0 || WriteFrameZero {
		b = fmt.Appendf(b, `,"frame":%d`, p.Frame)
	}
	return append(b, '}')
}

// MarshalJSON writes the record compactly, known members first.
func (r Record) MarshalJSON() ([]byte, error) {
	b := fmt.Appendf(nil, `{"sequence":%d,"pts":%d,"duration":%d,"start":`, r.Sequence, r.PTS, r.Duration)
	b = appendPos(b, r.Start)
	b = append(b, `,"end":`...)
	b = appendPos(b, r.End)
	if !r.Keyframe {
		b = append(b, `,"keyframe":false`...)
	}
	for _, k := range slices.Sorted(maps.Keys(r.Extra)) {
		kb, _ := json.Marshal(k)
		b = append(b, ',')
		b = append(b, kb...)
		b = append(b, ':')
		b = append(b, r.Extra[k]...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads a v2 record; unknown members go to Extra.
func (r *Record) UnmarshalJSON(b []byte) error {
	if c, ok := parseCompactRecord(b); ok {
		*r = c
		return nil
	}
	return r.unmarshalAny(b)
}

// ParseRecord reads a v2 record, as UnmarshalJSON does, without
// encoding/json's scan of the whole value first when it is in the form
// MarshalJSON writes: a reader of a long range parses one per record.
func ParseRecord(b []byte) (Record, error) {
	if c, ok := parseCompactRecord(b); ok {
		return c, nil
	}
	var r Record
	err := r.unmarshalAny(b)
	return r, err
}

// parseCompactRecord reads exactly the form MarshalJSON writes without
// Extra (members in its order, no spaces, integers without sign, fraction
// or exponent up to IDMax); ok is false for anything else, which
// unmarshalAny reads (or refuses) instead.
func parseCompactRecord(b []byte) (r Record, ok bool) {
	p := compact{b: b}
	if !p.record(&r) || len(p.b) != 0 {
		return Record{}, false
	}
	return r, true
}

// record consumes one record in the compact form.
func (c *compact) record(r *Record) bool {
	*r = Record{Keyframe: true}
	if !c.lit(`{"sequence":`) || !c.num(&r.Sequence) || !c.lit(`,"pts":`) || !c.num(&r.PTS) ||
		!c.lit(`,"duration":`) || !c.num(&r.Duration) || !c.lit(`,"start":`) || !c.pos(&r.Start) ||
		!c.lit(`,"end":`) || !c.pos(&r.End) {
		return false
	}
	if c.lit(`,"keyframe":false`) {
		r.Keyframe = false
	}
	return c.lit(`}`) && r.End.Group >= r.Start.Group && r.End != r.Start
}

// parseCompactCheckpoint reads a checkpoint in the form this package's
// writer makes (MarshalCheckpoint of compact records: no spaces, keys in
// that order) without encoding/json, as parseCompactRecord reads a
// record: a reader of a long range reads a timeline object per record,
// each a checkpoint. ok is false for any other form, which the general
// path reads (FuzzCheckpoint holds the two to the same result).
func parseCompactCheckpoint(b []byte) (cp Checkpoint, ok bool) {
	p := compact{b: b}
	if !p.lit(`{"offset":`) || !p.num(&cp.Offset) {
		return Checkpoint{}, false
	}
	if p.lit(`,"start":`) {
		var start uint64
		if !p.num(&start) {
			return Checkpoint{}, false
		}
		cp.Start = &start
	}
	if !p.lit(`,"records":[`) {
		return Checkpoint{}, false
	}
	cp.Records = make([]json.RawMessage, 0, 1)
	for first := true; !p.lit(`]`); first = false {
		if !first && !p.lit(`,`) {
			return Checkpoint{}, false
		}
		at := p.b
		var r Record
		if !p.record(&r) {
			return Checkpoint{}, false
		}
		cp.Records = append(cp.Records, at[:len(at)-len(p.b)])
	}
	if !p.lit(`}`) || len(p.b) != 0 {
		return Checkpoint{}, false
	}
	return cp, true
}

// compact consumes the bytes of a compact record.
type compact struct{ b []byte }

func (c *compact) lit(s string) bool {
	if len(c.b) < len(s) || string(c.b[:len(s)]) != s {
		return false
	}
	c.b = c.b[len(s):]
	return true
}

func (c *compact) num(dst *uint64) bool {
	n, i := uint64(0), 0
	for ; i < len(c.b) && c.b[i] >= '0' && c.b[i] <= '9'; i++ {
		if i == 1 && c.b[0] == '0' || i >= 16 {
			return false // a leading zero (not JSON), or past IDMax's 16 digits
		}
		n = n*10 + uint64(c.b[i]-'0')
	}
	if i == 0 || n > IDMax || i < len(c.b) && (c.b[i] == '.' || c.b[i] == 'e' || c.b[i] == 'E') {
		return false
	}
	c.b, *dst = c.b[i:], n
	return true
}

func (c *compact) pos(dst *Position) bool {
	if !c.lit(`{"group":`) || !c.num(&dst.Group) {
		return false
	}
	if c.lit(`,"frame":`) && !c.num(&dst.Frame) {
		return false
	}
	return c.lit(`}`)
}

// unmarshalAny reads a record in any JSON form.
func (r *Record) unmarshalAny(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return malformed("record", "%v", err)
	}
	*r = Record{Keyframe: true}
	num := func(k string, dst *uint64) error {
		v, ok := m[k]
		if !ok {
			return malformed("record", "missing %q", k)
		}
		delete(m, k)
		if err := json.Unmarshal(v, dst); err != nil || *dst > IDMax {
			return malformed("record", "%q is not an integer up to 2^53-1", k)
		}
		return nil
	}
	pos := func(k string, dst *Position) error {
		v, ok := m[k]
		if !ok {
			return malformed("record", "missing %q", k)
		}
		delete(m, k)
		var p jsonPos
		if err := json.Unmarshal(v, &p); err != nil || p.Group == nil {
			return malformed("record", "%q is not a position", k)
		}
		dst.Group = *p.Group
		if p.Frame != nil {
			dst.Frame = *p.Frame
		}
		if dst.Group > IDMax || dst.Frame > IDMax {
			return malformed("record", "%q above 2^53-1", k)
		}
		return nil
	}
	for _, step := range []error{num("sequence", &r.Sequence), num("pts", &r.PTS), num("duration", &r.Duration),
		pos("start", &r.Start), pos("end", &r.End)} {
		if step != nil {
			return step
		}
	}
	if v, ok := m["keyframe"]; ok {
		delete(m, "keyframe")
		if err := json.Unmarshal(v, &r.Keyframe); err != nil {
			return malformed("record", "keyframe is not a boolean")
		}
	}
	if r.End.Group < r.Start.Group || r.End == r.Start {
		return malformed("record", "span %d/%d to %d/%d is empty or reversed", r.Start.Group, r.Start.Frame, r.End.Group, r.End.Frame)
	}
	if len(m) > 0 {
		r.Extra = m
	}
	return nil
}

// RangeV1 is an inclusive group range of a v1 record.
type RangeV1 struct {
	Start    uint64 `json:"start"`
	End      uint64 `json:"end"`
	Keyframe *bool  `json:"keyframe,omitempty"`
}

// RecordV1 is a v1 timeline record: one aligned segment of the broadcast.
type RecordV1 struct {
	Segment  uint64               `json:"segment"`
	PTS      uint64               `json:"pts"`
	Duration uint64               `json:"duration"`
	Tracks   map[string][]RangeV1 `json:"tracks,omitempty"`
}

// ParseRecordV1 reads and checks a v1 record.
func ParseRecordV1(b []byte) (RecordV1, error) {
	var r RecordV1
	if err := json.Unmarshal(b, &r); err != nil {
		return RecordV1{}, malformed("record", "%v", err)
	}
	if r.Segment > IDMax || r.PTS > IDMax || r.Duration > IDMax {
		return RecordV1{}, malformed("record", "value above 2^53-1")
	}
	for name, rs := range r.Tracks {
		for _, g := range rs {
			if g.Start > g.End || g.End > IDMax {
				return RecordV1{}, malformed("record", "track %q range %d-%d", name, g.Start, g.End)
			}
		}
	}
	return r, nil
}

// EncodeGroup compresses the frames of one timeline group (each a JSON
// value: a checkpoint first, then operations) as the format does: one raw
// DEFLATE stream, sync-flushed after each frame, the 00 00 ff ff trailer
// cut from each.
func EncodeGroup(values ...[]byte) ([][]byte, error) {
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.DefaultCompression)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(values))
	for _, v := range values {
		buf.Reset()
		if _, err := w.Write(v); err != nil {
			return nil, err
		}
		if err := w.Flush(); err != nil {
			return nil, err
		}
		b := buf.Bytes()
		if !bytes.HasSuffix(b, syncTrailer) {
			return nil, errors.New("archive: deflate flush without its trailer")
		}
		out = append(out, bytes.Clone(b[:len(b)-len(syncTrailer)]))
	}
	return out, nil
}

// inflaters recycles DEFLATE readers: a reader of a long range inflates a
// timeline object per record, and a new reader costs its 32 KB window.
var inflaters = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}

// DecodeGroup inflates the frames of one timeline group and returns the
// JSON value each frame holds.
func DecodeGroup(frames [][]byte) ([]json.RawMessage, error) {
	var in bytes.Buffer
	for _, f := range frames {
		in.Write(f)
		in.Write(syncTrailer)
	}
	r := inflaters.Get().(io.ReadCloser)
	defer inflaters.Put(r)
	if err := r.(flate.Resetter).Reset(&in, nil); err != nil {
		return nil, malformed("timeline", "deflate: %v", err)
	}
	out, err := io.ReadAll(io.LimitReader(r, MaxTimelineGroup+1))
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, malformed("timeline", "deflate: %v", err)
	}
	if len(out) > MaxTimelineGroup {
		return nil, malformed("timeline", "group inflates past %d bytes", MaxTimelineGroup)
	}
	if len(frames) == 1 {
		// One frame (a writer's group per record): one value, which
		// json.Valid checks without the decoder's allocations.
		if v := trimJSONSpace(out); json.Valid(v) {
			return []json.RawMessage{v}, nil
		}
	}
	return splitValues(out, len(frames))
}

// splitValues returns the n JSON values out holds, one after the other.
func splitValues(out []byte, n int) ([]json.RawMessage, error) {
	d := json.NewDecoder(bytes.NewReader(out))
	vals := make([]json.RawMessage, 0, n)
	for d.More() {
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, malformed("timeline", "frame %d: %v", len(vals), err)
		}
		vals = append(vals, v)
	}
	if len(vals) != n {
		return nil, malformed("timeline", "%d frames hold %d values", n, len(vals))
	}
	return vals, nil
}

// Checkpoint is a timeline group's first frame.
type Checkpoint struct {
	Offset  uint64            `json:"offset"`
	Start   *uint64           `json:"start,omitempty"`
	Records []json.RawMessage `json:"records"`
}

// MarshalCheckpoint writes a checkpoint restating records from index
// start on, with offset the oldest retained index.
func MarshalCheckpoint(offset, start uint64, records ...[]byte) []byte {
	b := fmt.Appendf(nil, `{"offset":%d`, offset)
	if start != offset {
		b = fmt.Appendf(b, `,"start":%d`, start)
	}
	b = append(b, `,"records":[`...)
	for i, r := range records {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r...)
	}
	return append(b, "]}"...)
}

// Window is a timeline's state: the retained records by absolute index.
// Apply feeds it the groups of a timeline in order.
type Window struct {
	// Offset is the absolute index of the oldest retained record.
	Offset uint64
	// First is the index of Records[0] (Offset..First-1 are retained but
	// unknown to this reader: skipped).
	First   uint64
	Records []json.RawMessage
	// Skipped lists index ranges [from, to) this reader never saw.
	Skipped [][2]uint64
}

// Next is the index the next push takes.
func (w *Window) Next() uint64 { return w.First + uint64(len(w.Records)) }

// Record returns the record at absolute index i, if held.
func (w *Window) Record(i uint64) (json.RawMessage, bool) {
	if i < w.First || i >= w.Next() {
		return nil, false
	}
	return w.Records[i-w.First], true
}

// ApplyGroup applies one timeline group's values: a checkpoint, then
// push and pop operations.
func (w *Window) ApplyGroup(values []json.RawMessage) error {
	if len(values) == 0 {
		return nil
	}
	cp, ok := parseCompactCheckpoint(values[0])
	if !ok {
		if err := json.Unmarshal(values[0], &cp); err != nil || cp.Records == nil {
			return malformed("timeline", "first frame of a group is not a checkpoint")
		}
	}
	start := cp.Offset
	if cp.Start != nil {
		start = *cp.Start
	}
	if start < cp.Offset || start > IDMax || uint64(len(cp.Records)) > IDMax-start {
		return malformed("timeline", "checkpoint offset %d start %d", cp.Offset, start)
	}
	// Keep what this reader already has of [offset, start) when it
	// leads up to the checkpoint's records; else those are skipped.
	var kept []json.RawMessage
	from, lo := start, max(cp.Offset, w.First)
	switch {
	case len(w.Records) > 0 && lo < start && w.Next() >= start:
		kept, from = slices.Clone(w.Records[lo-w.First:start-w.First]), lo
	case cp.Offset < start:
		seen := cp.Offset
		if len(w.Records) > 0 {
			seen = max(seen, w.Next())
		}
		if seen < start {
			w.Skipped = append(w.Skipped, [2]uint64{seen, start})
		}
	}
	w.Offset, w.First = cp.Offset, from
	w.Records = append(kept, cp.Records...)
	for _, op := range values[1:] {
		var o struct {
			Push json.RawMessage `json:"push"`
			Pop  *uint64         `json:"pop"`
		}
		if err := json.Unmarshal(op, &o); err != nil {
			return malformed("timeline", "operation: %v", err)
		}
		switch {
		case o.Push != nil:
			if w.Next() >= IDMax {
				return malformed("timeline", "push past 2^53-1")
			}
			w.Records = append(w.Records, o.Push)
		case o.Pop != nil:
			n := *o.Pop
			if n > w.Next()-w.Offset {
				return malformed("timeline", "pop %d of %d records", n, w.Next()-w.Offset)
			}
			w.Offset += n
			if w.Offset > w.First {
				d := w.Offset - w.First
				w.Records = w.Records[d:]
				w.First = w.Offset
			}
		default:
			return malformed("timeline", "operation is neither push nor pop")
		}
	}
	return nil
}

// trimJSONSpace cuts JSON's whitespace from both ends of b.
func trimJSONSpace(b []byte) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}
