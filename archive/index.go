package archive

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/moq-export/moq-export/archive/internal/layout"
)

// Archive reads the recordings a Store holds, of either format version.
// It is safe for concurrent use.
type Archive struct {
	st   Store
	root string
	// gets counts the objects read (Stats).
	gets, lists atomic.Int64
}

// Open returns the reader of the recordings under root in st ("" for the
// whole store).
func Open(st Store, root string) *Archive {
	return &Archive{st: st, root: strings.Trim(root, "/")}
}

// ReadStats says what reading cost.
type ReadStats struct {
	Gets, Lists int64 // objects read, listings made
}

// Stats returns the objects read and listings made so far.
func (a *Archive) Stats() ReadStats { return ReadStats{a.gets.Load(), a.lists.Load()} }

func (a *Archive) get(ctx context.Context, key string) ([]byte, error) {
	a.gets.Add(1)
	return a.st.Get(ctx, key)
}

func (a *Archive) list(ctx context.Context, prefix string) ([]string, error) {
	a.lists.Add(1)
	return a.st.List(ctx, prefix)
}

// ErrNoBroadcast is wrapped when the archive holds no such broadcast.
var ErrNoBroadcast = errors.New("archive: no such broadcast")

// Broadcasts lists the broadcasts the archive holds, by name. It lists
// the whole store (it is for --list, not for reading).
func (a *Archive) Broadcasts(ctx context.Context) ([]string, error) {
	prefix := ""
	if a.root != "" {
		prefix = a.root + "/"
	}
	keys, err := a.list(ctx, prefix)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, k := range keys {
		rest, ok := strings.CutSuffix(strings.TrimPrefix(k, prefix), "/"+layout.InfoName)
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, '/')
		if i < 0 {
			continue
		}
		bp := rest[:i]
		if seen[bp] {
			continue
		}
		seen[bp] = true
		name, ok := decodeBroadcast(bp)
		if ok {
			out = append(out, name)
		}
	}
	return out, nil
}

func decodeBroadcast(p string) (string, bool) {
	parts := strings.Split(p, "/")
	for i, el := range parts {
		n, err := layout.DecodeName(el)
		if err != nil {
			return "", false
		}
		parts[i] = n
	}
	return strings.Join(parts, "/"), true
}

// trackIndex finds the records of one v2 track through its timeline
// object keys: a GET per probe, no listing of the media objects.
type trackIndex struct {
	a      *Archive
	prefix string
	name   string
	scale  uint64 // the track's .info timescale

	// v1: name is the broadcast's one timeline (not TimelineOf a track),
	// whose records are segments listing each track's group ranges.
	v1 bool

	mu          sync.Mutex
	recs        map[uint64]layout.Record
	ranges      map[uint64]map[string][]layout.RangeV1 // v1: each segment's tracks
	missing     map[uint64]bool
	first, last uint64
	bounded     bool
	empty       bool
}

func newTrackIndex(a *Archive, prefix, name string, scale uint64) *trackIndex {
	return &trackIndex{a: a, prefix: prefix, name: name, scale: scale, recs: map[uint64]layout.Record{}, missing: map[uint64]bool{}}
}

// newTimelineV1 indexes a v1 recording through its broadcast timeline
// track tl.
func newTimelineV1(a *Archive, prefix, tl string) *trackIndex {
	ti := newTrackIndex(a, prefix, tl, 0)
	ti.v1, ti.ranges = true, map[uint64]map[string][]layout.RangeV1{}
	return ti
}

// timelineKey is the key of the timeline object of record seq.
func (ti *trackIndex) timelineKey(seq uint64) string {
	if ti.v1 {
		return layout.SegmentKey(ti.prefix, ti.name, seq)
	}
	return layout.SegmentKey(ti.prefix, layout.TimelineOf(ti.name), seq)
}

// timelineDir is the prefix of the timeline objects.
func (ti *trackIndex) timelineDir() string {
	if ti.v1 {
		return layout.SegmentsDir(ti.prefix, ti.name)
	}
	return layout.SegmentsDir(ti.prefix, layout.TimelineOf(ti.name))
}

// readTimelineObject reads one timeline object: its groups applied, in
// order, to a fresh window.
func readTimelineObject(ctx context.Context, st getter, key string) (map[uint64]layout.Record, layout.Window, error) {
	w, err := readWindow(ctx, st, key)
	if err != nil {
		return nil, w, err
	}
	recs := map[uint64]layout.Record{}
	for i := w.First; i < w.Next(); i++ {
		raw, _ := w.Record(i)
		r, err := layout.ParseRecord(raw)
		if err != nil {
			return nil, w, fmt.Errorf("%s: %w", key, err)
		}
		if r.Sequence != i {
			return nil, w, fmt.Errorf("%s: %w", key, &layout.MalformedError{Object: "timeline", Reason: fmt.Sprintf("record %d at index %d", r.Sequence, i)})
		}
		recs[i] = r
	}
	return recs, w, nil
}

// getter is the read side of a Store.
type getter interface {
	Get(context.Context, string) ([]byte, error)
}

// readWindow reads one timeline object: its groups applied, in order, to
// a fresh window.
func readWindow(ctx context.Context, st getter, key string) (layout.Window, error) {
	var w layout.Window
	b, err := st.Get(ctx, key)
	if err != nil {
		return w, err
	}
	seg, err := layout.ParseSegment(b)
	if err != nil {
		return w, fmt.Errorf("%s: %w", key, err)
	}
	for _, g := range seg.Groups {
		frames := make([][]byte, len(g.Frames))
		for i, f := range g.Frames {
			frames[i] = f.Payload
		}
		vals, err := layout.DecodeGroup(frames)
		if err != nil {
			return w, fmt.Errorf("%s: %w", key, err)
		}
		if err := w.ApplyGroup(vals); err != nil {
			return w, fmt.Errorf("%s: %w", key, err)
		}
	}
	return w, nil
}

// readTimelineV1 reads one object of a v1 broadcast timeline: each
// segment's record, and the group ranges it lists per track.
func readTimelineV1(ctx context.Context, st getter, key string) (map[uint64]layout.Record, map[uint64]map[string][]layout.RangeV1, error) {
	w, err := readWindow(ctx, st, key)
	if err != nil {
		return nil, nil, err
	}
	recs := map[uint64]layout.Record{}
	ranges := map[uint64]map[string][]layout.RangeV1{}
	for i := w.First; i < w.Next(); i++ {
		raw, _ := w.Record(i)
		r, err := layout.ParseRecordV1(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", key, err)
		}
		if r.Segment != i {
			return nil, nil, fmt.Errorf("%s: %w", key, &layout.MalformedError{Object: "timeline", Reason: fmt.Sprintf("segment %d at index %d", r.Segment, i)})
		}
		recs[i] = layout.Record{Sequence: i, PTS: r.PTS, Duration: r.Duration}
		ranges[i] = r.Tracks
	}
	return recs, ranges, nil
}

// gettable adapts the archive's counted get.
type gettable struct{ a *Archive }

func (g gettable) Get(ctx context.Context, key string) ([]byte, error) { return g.a.get(ctx, key) }

// record returns record seq, reading its timeline object once.
func (ti *trackIndex) record(ctx context.Context, seq uint64) (layout.Record, bool, error) {
	ti.mu.Lock()
	if r, ok := ti.recs[seq]; ok {
		ti.mu.Unlock()
		return r, true, nil
	}
	if ti.missing[seq] {
		ti.mu.Unlock()
		return layout.Record{}, false, nil
	}
	ti.mu.Unlock()
	var recs map[uint64]layout.Record
	var ranges map[uint64]map[string][]layout.RangeV1
	var err error
	if ti.v1 {
		recs, ranges, err = readTimelineV1(ctx, gettable{ti.a}, ti.timelineKey(seq))
	} else {
		recs, _, err = readTimelineObject(ctx, gettable{ti.a}, ti.timelineKey(seq))
	}
	ti.mu.Lock()
	defer ti.mu.Unlock()
	if errors.Is(err, fs.ErrNotExist) {
		ti.missing[seq] = true
		return layout.Record{}, false, nil
	}
	if err != nil {
		return layout.Record{}, false, err
	}
	for k, r := range recs {
		ti.recs[k] = r
	}
	for k, rs := range ranges {
		ti.ranges[k] = rs
	}
	r, ok := ti.recs[seq]
	if !ok {
		ti.missing[seq] = true
	}
	return r, ok, nil
}

// rangesV1 returns the group ranges of track in v1 segment seq (read
// with its record).
func (ti *trackIndex) rangesV1(seq uint64, track string) []layout.RangeV1 {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	return ti.ranges[seq][track]
}

// forgetMissing drops what is known of records from seq on (a follower
// looks again).
func (ti *trackIndex) forgetMissing() {
	ti.mu.Lock()
	clear(ti.missing)
	ti.mu.Unlock()
}

// bounds finds the first and last record held: record 0 when it exists
// (an archive), else one listing of the timeline's keys (a DVR, whose
// window is short); the last by doubling probes and a bisection.
func (ti *trackIndex) bounds(ctx context.Context) (first, last uint64, ok bool, err error) {
	if ti.bounded {
		return ti.first, ti.last, !ti.empty, nil
	}
	_, has, err := ti.record(ctx, 0)
	if err != nil {
		return 0, 0, false, err
	}
	if has {
		first = 0
	} else {
		keys, err := ti.a.list(ctx, ti.timelineDir())
		if err != nil {
			return 0, 0, false, err
		}
		found := false
		for _, k := range keys {
			id, perr := layout.ParseID(k[strings.LastIndexByte(k, '/')+1:])
			if perr != nil {
				continue
			}
			if _, has, err := ti.record(ctx, id); err == nil && has {
				first, found = id, true
				break
			}
		}
		if !found {
			ti.bounded, ti.empty = true, true
			return 0, 0, false, nil
		}
	}
	last, err = ti.lastFrom(ctx, first)
	if err != nil {
		return 0, 0, false, err
	}
	ti.first, ti.last, ti.bounded = first, last, true
	return first, last, true, nil
}

// lastFrom finds the newest record at or after known (which exists).
func (ti *trackIndex) lastFrom(ctx context.Context, known uint64) (uint64, error) {
	lo, step := known, uint64(1)
	var hi uint64
	for {
		probe := lo + step
		if probe > layout.IDMax {
			hi = layout.IDMax + 1
			break
		}
		_, has, err := ti.record(ctx, probe)
		if err != nil {
			return 0, err
		}
		if !has {
			hi = probe
			break
		}
		lo, step = probe, step*2
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		_, has, err := ti.record(ctx, mid)
		if err != nil {
			return 0, err
		}
		if has {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// locate returns the newest record in [first, last] whose pts is at or
// before t (archive timescale units); first when none is.
func (ti *trackIndex) locate(ctx context.Context, first, last, t uint64) (uint64, error) {
	lo, hi := first, last
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		r, has, err := ti.record(ctx, mid)
		if err != nil {
			return 0, err
		}
		if !has || r.PTS > t {
			hi = mid - 1
		} else {
			lo = mid
		}
	}
	return lo, nil
}
