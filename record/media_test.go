package record

import (
	"math/rand/v2"
	"testing"

	"github.com/moq-export/moq-export/mux"
)

// TestAnOutputsDurationIsItsLatestTrackEndAfterEveryFrame: the duration a
// file reports while it is written (kept per frame, whatever the number
// of tracks) is, after every frame, the latest end of any track's last
// frame, each track's frame duration being the smallest step forward seen
// (or its nominal one before a second frame), counted from the file's
// first frame, through B-frame steps back and durations that shrink.
func TestAnOutputsDurationIsItsLatestTrackEndAfterEveryFrame(t *testing.T) {
	for _, tracks := range []int{1, 2, 4} {
		r := rand.New(rand.NewPCG(uint64(tracks), 7))
		o := &output{}
		for id := range tracks {
			o.spans = append(o.spans, trackSpan{id: id, nominal: int64(id) * 10_000})
		}
		at := make([]int64, tracks)
		for i := range 2000 {
			id := r.IntN(tracks)
			// Mostly forward, some steps back (B-frames), some jumps.
			at[id] += int64(r.IntN(50_000)) - 10_000
			if r.IntN(100) == 0 {
				at[id] += 1_000_000
			}
			f := mux.Frame{TrackID: id, Timestamp: at[id]}
			if !o.have || f.Timestamp < o.first {
				o.first = f.Timestamp
			}
			if !o.have || f.Timestamp > o.last {
				o.last = f.Timestamp
			}
			o.have = true
			o.noteSpan(f)
			end := o.last
			for _, s := range o.spans {
				if !s.have {
					continue
				}
				d := s.minGap
				if d == 0 {
					d = s.nominal
				}
				end = max(end, s.last+d)
			}
			want := float64((end-o.first+500)/1000) / 1e3
			if got := o.media(); got != want {
				t.Fatalf("%d tracks, frame %d: %.3f s, want %.3f s", tracks, i, got, want)
			}
		}
	}
}
