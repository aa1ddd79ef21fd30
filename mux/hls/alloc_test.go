package hls_test

import (
	"runtime"
	"slices"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux/hls"
)

// nullStore keeps nothing: what the Writer itself allocates.
type nullStore struct{}

func (nullStore) WriteFile(string, []byte) error  { return nil }
func (nullStore) ReadFile(string) ([]byte, error) { return nil, errNotExist }

// TestABoundaryAllocatesNoMoreAtTheTwoHundredthSegmentThanAtTheTenth: the
// media playlists, the MPD and the state grow with the recording and are
// written at every boundary; rendered into a new buffer each time, they
// made an hour's package allocate (and collect) 740 bytes a frame against
// 185 for ten minutes'. So 64 passes of the sample (a segment's boundary in
// every few) from the 210th allocate at most twice what 64 from the 10th
// do, each window without its three largest passes: the steps. The buffers
// the state is rendered into grow with it (by a quarter when full), the
// state is written every 32 boundaries and the MP4 muxer's sample table
// for the finished file doubles now and then; a window's whole sum
// measured whether it held one of those steps more than the other (once
// the frames' own allocations were gone, 3x), not what a boundary costs.
// Not parallel: it reads the process's allocation counter.
func TestABoundaryAllocatesNoMoreAtTheTwoHundredthSegmentThanAtTheTenth(t *testing.T) {
	v, a := looped("h264", 0, 274), looped("aac", 1, 274)
	w := hls.NewWriter(hls.Options{Store: nullStore{}})
	tracks := mediatest.Tracks(v, a)
	for _, tr := range tracks {
		must(t, w.AddTrack(tr))
	}
	frames := mediatest.Interleave(v, a)
	pass := len(frames) / 274
	// allocated returns what passes [from, to) allocated, less the three
	// passes that allocated most.
	allocated := func(from, to int) uint64 {
		var per []uint64
		for p := from; p < to; p++ {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for _, fr := range frames[p*pass : (p+1)*pass] {
				must(t, w.WriteFrame(fr))
			}
			runtime.ReadMemStats(&after)
			per = append(per, after.TotalAlloc-before.TotalAlloc)
		}
		slices.Sort(per)
		var sum uint64
		for _, n := range per[:len(per)-3] {
			sum += n
		}
		return sum
	}
	allocated(0, 10)
	early := allocated(10, 74)
	allocated(74, 210)
	late := allocated(210, 274)
	must(t, w.Close())
	t.Logf("64 passes allocated %d bytes from the 10th, %d from the 210th (each less its three largest)", early, late)
	if late > early*2 {
		t.Fatalf("64 passes allocated %d bytes from the 210th segment, %d from the 10th: a boundary costs more the longer the recording", late, early)
	}
}
