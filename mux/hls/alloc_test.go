package hls_test

import (
	"runtime"
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
// 185 for ten minutes'. Each window holds 64 boundaries, two writes of the
// state (every 32): the buffers the state is rendered into grow with it
// (by a quarter when full), so a window of a few boundaries measures
// whether it holds one of those steps more than what a boundary costs.
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
	allocated := func(from, to int) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for _, fr := range frames[from*pass : to*pass] {
			must(t, w.WriteFrame(fr))
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	allocated(0, 10)
	early := allocated(10, 74)
	allocated(74, 210)
	late := allocated(210, 274)
	must(t, w.Close())
	t.Logf("64 boundaries allocated %d bytes from the 10th, %d from the 210th", early, late)
	if late > early*2 {
		t.Fatalf("64 boundaries allocated %d bytes from the 210th segment, %d from the 10th: a boundary costs more the longer the recording", late, early)
	}
}
