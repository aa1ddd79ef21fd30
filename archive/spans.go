package archive

import (
	"context"
	"encoding/json"
	"time"
)

// Span is a stretch of media time a track holds without a gap.
type Span struct {
	Start, End time.Duration
}

// MarshalJSON writes the span as {"start":"1m2s","end":"1h0m0s"}.
func (s Span) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Start string `json:"start"`
		End   string `json:"end"`
	}{s.Start.String(), s.End.String()})
}

// gapMin is the hole between records (or frames) that counts as a gap.
const gapMin = time.Second

// Spans returns the stretches of media time track holds, a gap between
// each: every record of it read (its timeline objects, for v2; every
// object, for v1), so it costs what the track's length does.
func (r *Recording) Spans(ctx context.Context, track string) ([]Span, error) {
	var spans []Span
	add := func(start, end time.Duration) {
		if n := len(spans); n > 0 && start-spans[n-1].End < gapMin && start >= spans[n-1].Start {
			spans[n-1].End = max(spans[n-1].End, end)
			return
		}
		spans = append(spans, Span{start, end})
	}
	in, err := r.info(ctx, track)
	if err != nil {
		return nil, err
	}
	if in.Version == 2 {
		ti, err := r.index(ctx, track)
		if err != nil {
			return nil, err
		}
		first, last, ok, err := ti.bounds(ctx)
		if err != nil || !ok {
			return nil, err
		}
		unit := time.Second / time.Duration(r.archiveScale)
		for seq := first; seq <= last; seq++ {
			rec, has, err := ti.record(ctx, seq)
			if err != nil {
				return nil, err
			}
			if has {
				add(time.Duration(rec.PTS)*unit, time.Duration(rec.PTS+rec.Duration)*unit)
			}
		}
		return spans, nil
	}
	it, err := r.frames(ctx, track, 0, false)
	if err != nil {
		return nil, err
	}
	for {
		f, ok, err := it.next(ctx)
		if err != nil || !ok {
			return spans, err
		}
		t := time.Duration(f.ts) * time.Microsecond
		add(t, t)
	}
}
