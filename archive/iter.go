package archive

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strings"

	"github.com/moq-export/moq-export/archive/internal/layout"
)

// frameIter yields one track's stored frames in order, record by record
// (v2) or object by object (v1).
type frameIter struct {
	r     *Recording
	track string
	scale uint64
	buf   []storedFrame
	// segDir is the key prefix of the track's segment objects (made once:
	// a key per record is then one allocation).
	segDir string

	// v2, and v1 through its broadcast timeline (ti.v1)
	ti  *trackIndex
	seq uint64

	// v1: the group objects left, in order
	keys   []string
	v1Next int

	// onGap is told of a record whose object is missing or broken.
	onGap func(rec layout.Record, err error)

	// readAhead fetches the next records' objects while the current one
	// is consumed (the feeder's iterators: reading the store overlaps
	// the export's writing); ahead are those fetches, of consecutive
	// records from it.seq on.
	readAhead bool
	ahead     []*aheadFetch
	// fetches hands fetches to the iterator's fetchers (startFetch),
	// which end when fetchesEnd closes.
	fetches    chan *aheadFetch
	fetchesEnd <-chan struct{}
	// until: no read-ahead past a record that ends at or after it (µs;
	// the range's end; math.MaxInt64: none, the whole track).
	until int64

	// directBelow: records before it (v2: the last the timeline held when
	// the iterator was made, plus one) are read without their timeline
	// object when their segment continues the record before (prev, the
	// end of the last record filled; havePrev). The timeline is read for
	// the first record, and for one whose segment is missing, malformed
	// or does not continue (a hole): an hour's export then reads 1,352
	// segment objects and a few dozen timeline objects, not twice as
	// many objects.
	directBelow uint64
	prev        layout.Position
	havePrev    bool
}

// aheadFetch is a fetch running ahead: res is set before done closes.
type aheadFetch struct {
	seq  uint64
	done chan struct{}
	res  *fetched
	ctx  context.Context // what a fetcher runs it with
}

// fetched is one record's object, read and parsed.
type fetched struct {
	seq  uint64
	rec  layout.Record
	has  bool // the timeline holds record seq
	seg  layout.Segment
	none bool  // v1: the segment holds nothing of the track
	bad  error // the object is missing or malformed: a gap
	err  error // reading failed
	// direct: read without its timeline record (rec is unset): load
	// checks that it continues the record before, or reads the record.
	direct bool
	// end is the record's end (µs), or for a direct one its last
	// frame's time.
	end int64
}

// frames returns an iterator over track from the record in effect at
// media time at (µs; the first record when at <= 0 or none is earlier).
func (r *Recording) frames(ctx context.Context, track string, at int64, _ bool) (*frameIter, error) {
	in, err := r.info(ctx, track)
	if err != nil {
		return nil, fmt.Errorf("track %q: %w", track, err)
	}
	it := &frameIter{r: r, track: track, scale: in.Timescale, segDir: layout.SegmentsDir(r.prefix, track)}
	if in.Version == 1 {
		// Through the broadcast timeline when there is one (the catalog
		// is read before it, by listing: its objects are few).
		if track != r.catTrack {
			if it.ti, err = r.timelineV1(ctx); err != nil {
				return nil, err
			}
		}
		if it.ti == nil {
			// Without a timeline nothing maps media time to groups: the
			// track's objects are listed (keys only), and the one to
			// start from is found by a bisection (a GET per probe).
			keys, err := r.a.list(ctx, layout.GroupsDir(r.prefix, track))
			if err != nil {
				return nil, err
			}
			it.keys = keys
			if at > 0 {
				it.v1Next, err = it.bisectV1(ctx, at)
			}
			return it, err
		}
	} else if it.ti, err = r.index(ctx, track); err != nil {
		return nil, err
	}
	first, last, ok, err := it.ti.bounds(ctx)
	if err != nil || !ok {
		return it, err // an empty track yields nothing
	}
	if !it.ti.v1 {
		it.directBelow = last + 1
	}
	it.seq = first
	if at > 0 {
		if it.seq, err = it.ti.locate(ctx, first, last, r.toPTS(at)); err != nil {
			return nil, err
		}
	}
	return it, nil
}

// next returns the next frame; ok false at the end of what is stored now.
func (it *frameIter) next(ctx context.Context) (storedFrame, bool, error) {
	for len(it.buf) == 0 {
		more, err := it.load(ctx)
		if err != nil || !more {
			return storedFrame{}, false, err
		}
	}
	f := it.buf[0]
	it.buf = it.buf[1:]
	return f, true, nil
}

// peek returns the next frame without taking it.
func (it *frameIter) peek(ctx context.Context) (storedFrame, bool, error) {
	for len(it.buf) == 0 {
		more, err := it.load(ctx)
		if err != nil || !more {
			return storedFrame{}, false, err
		}
	}
	return it.buf[0], true, nil
}

// load reads the next object into buf; false when there is none (yet).
func (it *frameIter) load(ctx context.Context) (bool, error) {
	if it.ti == nil {
		return it.loadV1(ctx)
	}
	var f *fetched
	if len(it.ahead) > 0 && it.ahead[0].seq == it.seq {
		a := it.ahead[0]
		select {
		case <-a.done:
		case <-ctx.Done():
			return false, ctx.Err()
		}
		f = a.res
		it.ahead[0] = nil
		it.ahead = it.ahead[1:]
	} else {
		it.ahead = nil
		f = it.fetch(ctx, it.seq)
	}
	if f.direct && !(it.havePrev && layout.Continues(f.seg, it.prev)) {
		it.verify(ctx, f)
	}
	if f.err != nil || !f.has {
		it.ahead = nil
		return false, f.err
	}
	it.seq++
	it.havePrev = false
	if it.readAhead {
		it.fetchAhead(ctx, f)
	}
	switch {
	case f.none:
	case f.bad != nil:
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		// A missing or malformed object is a missing record: the
		// recording goes on after it.
		if it.onGap != nil && !it.ti.v1 {
			it.onGap(f.rec, f.bad)
		}
	default:
		it.fill(f.seg)
		if !it.ti.v1 {
			it.prev, it.havePrev = layout.Last(f.seg), true
		}
	}
	return true, nil
}

// verify reads the timeline record of f, read directly, and checks its
// segment against it, as fetch does without directBelow.
func (it *frameIter) verify(ctx context.Context, f *fetched) {
	f.direct = false
	f.rec, f.has, f.err = it.ti.record(ctx, f.seq)
	if f.err != nil || !f.has {
		return
	}
	f.end = it.r.micros(f.rec.PTS + f.rec.Duration)
	f.bad = layout.CheckSpan(f.seg, f.rec.Start, f.rec.End)
}

// readAheadDepth is how many records a whole-track read fetches ahead:
// each fetch is a GET or two and a parse, done on another core while the
// export writes. A range with an end (until below math.MaxInt64, which
// the feeder gives a read without To) reads one ahead, as far as the range
// goes.
const readAheadDepth = 4

// fetchAhead starts the fetches of the records after f, the record just
// taken: up to readAheadDepth of them, or (a range) the next one while f
// ends before the range does.
func (it *frameIter) fetchAhead(ctx context.Context, f *fetched) {
	depth := readAheadDepth
	if it.until > 0 && it.until < math.MaxInt64 {
		if f.end >= it.until {
			return
		}
		depth = 1
	}
	for len(it.ahead) < depth {
		next := &aheadFetch{seq: it.seq + uint64(len(it.ahead)), done: make(chan struct{})}
		it.ahead = append(it.ahead, next)
		it.startFetch(ctx, next)
	}
}

// startFetch runs fetch a beside the iterator: on one of its fetchers,
// readAheadDepth goroutines that live as long as ctx (the feeder's, which
// ends with its read) and take the fetches queued for them in order, else
// (the queue full, a context that never ends, or another one) on a
// goroutine of its own. A fetch left queued when ctx ends is not run: load
// waits for it with that same ctx, and returns its error. A goroutine per fetch cost an
// hour's export 1,352 goroutine starts, each growing its stack and waking
// a thread to run it: about a tenth of the export's CPU.
func (it *frameIter) startFetch(ctx context.Context, a *aheadFetch) {
	if done := ctx.Done(); done != nil {
		if it.fetches == nil {
			it.fetches, it.fetchesEnd = make(chan *aheadFetch, readAheadDepth), done
			for range readAheadDepth {
				go it.fetcher(ctx)
			}
		}
		if done == it.fetchesEnd {
			a.ctx = ctx
			select {
			case it.fetches <- a:
				return
			default:
			}
		}
	}
	go it.runFetch(ctx, a)
}

// fetcher runs the fetches handed to it (each with its own context,
// which ends with ctx) until ctx ends.
func (it *frameIter) fetcher(ctx context.Context) {
	for {
		select {
		case a := <-it.fetches:
			it.runFetch(a.ctx, a)
		case <-ctx.Done():
			return
		}
	}
}

func (it *frameIter) runFetch(ctx context.Context, a *aheadFetch) {
	a.res = it.fetch(ctx, a.seq)
	close(a.done)
}

// fetch reads record seq's object (v2; v1 through the timeline). It
// reads only the index (safe for concurrent use) and the store, so it
// runs ahead of the iterator.
func (it *frameIter) fetch(ctx context.Context, seq uint64) *fetched {
	out := &fetched{seq: seq}
	if seq < it.directBelow {
		b, err := it.r.a.get(ctx, layout.KeyIn(it.segDir, seq))
		if err == nil {
			if out.seg, err = layout.ParseSegment(b); err == nil {
				out.has, out.direct, out.end = true, true, it.lastMicros(out.seg)
				return out
			}
		}
		// Missing or malformed: its record says whether it is a gap.
		if out.rec, out.has, out.err = it.ti.record(ctx, seq); out.err == nil && out.has {
			out.end = it.r.micros(out.rec.PTS + out.rec.Duration)
			out.bad = err
		}
		return out
	}
	out.rec, out.has, out.err = it.ti.record(ctx, seq)
	if out.err != nil || !out.has {
		return out
	}
	rec := out.rec
	out.end = it.r.micros(rec.PTS + rec.Duration)
	key := layout.KeyIn(it.segDir, rec.Sequence)
	if it.ti.v1 {
		// The track's object of the segment, named by the group range
		// the segment lists for it (none: the track has nothing in it).
		rs := it.ti.rangesV1(rec.Sequence, it.track)
		if len(rs) == 0 {
			out.none = true
			return out
		}
		key = layout.GroupsKey(it.r.prefix, it.track, rs[len(rs)-1].End, rs[0].Start)
	}
	b, err := it.r.a.get(ctx, key)
	if err == nil {
		if out.seg, err = layout.ParseSegment(b); err == nil && !it.ti.v1 {
			err = layout.CheckSpan(out.seg, rec.Start, rec.End)
		}
	}
	out.bad = err
	return out
}

// lastMicros is the time of seg's last frame (µs).
func (it *frameIter) lastMicros(seg layout.Segment) int64 {
	for gi := len(seg.Groups) - 1; gi >= 0; gi-- {
		if fs := seg.Groups[gi].Frames; len(fs) > 0 {
			return micros(fs[len(fs)-1].Timestamp, it.scale)
		}
	}
	return 0
}

func (it *frameIter) fill(seg layout.Segment) {
	for gi, g := range seg.Groups {
		idx := uint64(0)
		if gi == 0 {
			idx = seg.FrameStart
		}
		for _, f := range g.Frames {
			it.buf = append(it.buf, storedFrame{group: g.Sequence, index: idx, ts: micros(f.Timestamp, it.scale), payload: f.Payload})
			idx++
		}
	}
}

func (it *frameIter) loadV1(ctx context.Context) (bool, error) {
	for it.v1Next < len(it.keys) {
		k := it.keys[it.v1Next]
		it.v1Next++
		if _, _, err := layout.ParseGroupsName(k[strings.LastIndexByte(k, '/')+1:]); err != nil {
			continue
		}
		b, err := it.r.a.get(ctx, k)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return false, err
		}
		seg, err := layout.ParseSegment(b)
		if err != nil {
			if it.onGap != nil {
				it.onGap(layout.Record{}, err)
			}
			continue
		}
		it.fill(seg)
		return true, nil
	}
	return false, nil
}

// bisectV1 returns the index of the newest listed v1 object whose first
// frame is at or before media time at (µs); 0 when none is.
func (it *frameIter) bisectV1(ctx context.Context, at int64) (int, error) {
	lo, hi := 0, len(it.keys)-1
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		ts, ok, err := it.firstTS(ctx, mid)
		if err != nil {
			return 0, err
		}
		if !ok || ts > at {
			hi = mid - 1
		} else {
			lo = mid
		}
	}
	return lo, nil
}

// firstTS returns the time of the first frame of listed v1 object i.
func (it *frameIter) firstTS(ctx context.Context, i int) (int64, bool, error) {
	b, err := it.r.a.get(ctx, it.keys[i])
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	seg, err := layout.ParseSegment(b)
	if err != nil || len(seg.Groups) == 0 || len(seg.Groups[0].Frames) == 0 {
		return 0, false, nil
	}
	return micros(seg.Groups[0].Frames[0].Timestamp, it.scale), true, nil
}

// refresh forgets that records past the end were missing, so a follower
// sees records a writer added since.
func (it *frameIter) refresh() {
	if it.ti != nil {
		it.ti.forgetMissing()
	}
	it.ahead = nil // they may have found nothing yet
}

// seekKey returns an iterator positioned at the newest group start (a
// keyframe) at or before media time at, and that keyframe's time.
func (r *Recording) seekKey(ctx context.Context, track string, at int64) (*frameIter, int64, error) {
	it, err := r.frames(ctx, track, at, true)
	if err != nil {
		return nil, 0, err
	}
	if it.ti == nil { // v1 without a timeline: a scan from the start
		var best *storedFrame
		var all []storedFrame
		for {
			f, ok, err := it.next(ctx)
			if err != nil {
				return nil, 0, err
			}
			if !ok || f.ts > at && best != nil {
				if ok {
					all = append(all, f)
				}
				break
			}
			all = append(all, f)
			if f.index == 0 && (f.ts <= at || best == nil) {
				best = &all[len(all)-1]
			}
		}
		if best == nil {
			return it, at, nil
		}
		key := *best
		for i := range all {
			if all[i].group == key.group && all[i].index == 0 {
				it.buf = append(all[i:len(all):len(all)], it.buf...)
				break
			}
		}
		return it, key.ts, nil
	}
	start := it.seq
	first, _, _, _ := it.ti.bounds(ctx)
	for seq := start; ; seq-- {
		probe := &frameIter{r: r, track: track, scale: it.scale, segDir: it.segDir, ti: it.ti, seq: seq, directBelow: it.directBelow}
		if more, err := probe.load(ctx); err != nil {
			return nil, 0, err
		} else if more {
			var key *storedFrame
			for i, f := range probe.buf {
				if f.index == 0 && (f.ts <= at || key == nil && seq == first) {
					key = &probe.buf[i]
				}
			}
			if key != nil {
				k := *key
				for len(probe.buf) > 0 && !(probe.buf[0].group == k.group && probe.buf[0].index == 0) {
					probe.buf = probe.buf[1:]
				}
				probe.onGap = it.onGap
				return probe, k.ts, nil
			}
		}
		if seq == first {
			break
		}
	}
	return it, at, nil
}
