package hls_test

import (
	"runtime"
	"slices"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux/hls"
)

// countingStore keeps nothing (what the Writer itself allocates) and
// counts the files written: a pass that wrote one held a boundary.
type countingStore struct{ writes int }

func (s *countingStore) WriteFile(string, []byte) error { s.writes++; return nil }
func (*countingStore) ReadFile(string) ([]byte, error)  { return nil, errNotExist }

// TestABoundaryAllocatesNoMoreAtTheTwoHundredthSegmentThanAtTheTenth: the
// media playlists, the MPD and the state grow with the recording and are
// written at every boundary; rendered into a new buffer each time, they
// made an hour's package allocate (and collect) 740 bytes a frame against
// 185 for ten minutes'. So the median of 64 boundaries from the 210th
// allocates at most twice the median of 64 from the 10th. A boundary is a
// pass of the sample that wrote a file (every pass but the last few).
//
// The median, not a sum: a window also holds steps that say nothing of a
// boundary's cost (the buffers the state and the documents are rendered
// into grow by a quarter when full, the state is written every 32
// boundaries, the MP4 muxer's sample table for the finished file doubles
// now and then): 6 to 13 of a window's 64 passes, up to 240 kB each,
// against about 200 bytes for a boundary. Where they fall moves from run
// to run (the MPD's publish time is the wall clock, printed without its
// trailing zeros, and maps are iterated in random order), so a window's
// sum less its three largest passes counted a fourth step in about one run
// of ten (a 64 kB growth: "143688 bytes from the 210th, 70504 from the
// 10th"). A regression that renders the documents anew costs more in
// every boundary, so it moves the median.
// Not parallel: it reads the process's allocation counter.
func TestABoundaryAllocatesNoMoreAtTheTwoHundredthSegmentThanAtTheTenth(t *testing.T) {
	v, a := looped("h264", 0, 274), looped("aac", 1, 274)
	store := &countingStore{}
	w := hls.NewWriter(hls.Options{Store: store})
	tracks := mediatest.Tracks(v, a)
	for _, tr := range tracks {
		must(t, w.AddTrack(tr))
	}
	frames := mediatest.Interleave(v, a)
	pass := len(frames) / 274
	// boundary returns what the median boundary of passes [from, to)
	// allocated, and how many boundaries there were.
	boundary := func(from, to int) (uint64, int) {
		var per []uint64
		for p := from; p < to; p++ {
			var before, after runtime.MemStats
			writes := store.writes
			runtime.ReadMemStats(&before)
			for _, fr := range frames[p*pass : (p+1)*pass] {
				must(t, w.WriteFrame(fr))
			}
			runtime.ReadMemStats(&after)
			if store.writes > writes {
				per = append(per, after.TotalAlloc-before.TotalAlloc)
			}
		}
		if len(per) == 0 {
			t.Fatalf("passes %d to %d wrote no file", from, to)
		}
		slices.Sort(per)
		return per[len(per)/2], len(per)
	}
	boundary(0, 10)
	early, n1 := boundary(10, 74)
	boundary(74, 210)
	late, n2 := boundary(210, 274)
	must(t, w.Close())
	t.Logf("the median boundary allocated %d bytes from the 10th (of %d), %d from the 210th (of %d)", early, n1, late, n2)
	if n1 < 48 || n2 < 48 {
		t.Fatalf("%d and %d of 64 passes held a boundary: the sample no longer cuts a segment a pass", n1, n2)
	}
	if late > early*2 {
		t.Fatalf("the median boundary allocated %d bytes from the 210th segment, %d from the 10th: a boundary costs more the longer the recording", late, early)
	}
}
