package archive

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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

	// v2
	ti  *trackIndex
	seq uint64

	// v1: the group objects left, in order
	keys   []string
	v1Next int

	// onGap is told of a record whose object is missing or broken.
	onGap func(rec layout.Record, err error)
}

// frames returns an iterator over track from the record in effect at
// media time at (µs; the first record when at <= 0 or none is earlier).
func (r *Recording) frames(ctx context.Context, track string, at int64, _ bool) (*frameIter, error) {
	in, err := r.info(ctx, track)
	if err != nil {
		return nil, fmt.Errorf("track %q: %w", track, err)
	}
	it := &frameIter{r: r, track: track, scale: in.Timescale}
	if in.Version == 1 {
		keys, err := r.a.list(ctx, layout.GroupsDir(r.prefix, track))
		if err != nil {
			return nil, err
		}
		it.keys = keys
		return it, nil
	}
	if it.ti, err = r.index(ctx, track); err != nil {
		return nil, err
	}
	first, last, ok, err := it.ti.bounds(ctx)
	if err != nil || !ok {
		return it, err // an empty track yields nothing
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
	rec, has, err := it.ti.record(ctx, it.seq)
	if err != nil || !has {
		return false, err
	}
	it.seq++
	b, err := it.r.a.get(ctx, layout.SegmentKey(it.r.prefix, it.track, rec.Sequence))
	var seg layout.Segment
	if err == nil {
		if seg, err = layout.ParseSegment(b); err == nil {
			err = layout.CheckSpan(seg, rec.Start, rec.End)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		// A missing or malformed object is a missing record: the
		// recording goes on after it.
		if it.onGap != nil {
			it.onGap(rec, err)
		}
		return true, nil
	}
	it.fill(seg)
	return true, nil
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

// refresh forgets that records past the end were missing, so a follower
// sees records a writer added since.
func (it *frameIter) refresh() {
	if it.ti != nil {
		it.ti.forgetMissing()
	}
}

// seekKey returns an iterator positioned at the newest group start (a
// keyframe) at or before media time at, and that keyframe's time.
func (r *Recording) seekKey(ctx context.Context, track string, at int64) (*frameIter, int64, error) {
	it, err := r.frames(ctx, track, at, true)
	if err != nil {
		return nil, 0, err
	}
	if it.ti == nil { // v1: a scan from the start
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
		probe := &frameIter{r: r, track: track, scale: it.scale, ti: it.ti, seq: seq}
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
