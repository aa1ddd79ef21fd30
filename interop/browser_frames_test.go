package interop

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestFramesMissingFindsTheEncodedFramesAFileLacks: the browser test's
// check that a file holds every frame the page encoded between its first
// frame and its last, wherever on the page's clock it starts.
func TestFramesMissingFindsTheEncodedFramesAFileLacks(t *testing.T) {
	// A camera at about 20 fps on its own clock, its timestamps jittering
	// by up to 6 ms (more than the check's tolerance, as a loaded
	// machine's do: a steady rate would match the file at any chunk).
	jitter := rand.New(rand.NewPCG(1, 2))
	chunks := []int64{}
	for i := range 40 {
		chunks = append(chunks, 5_000_000_000+int64(i)*50_000+jitter.Int64N(6000))
	}
	// file is the chunks from..to as a file writes them: seconds from
	// first+lead, rounded to the millisecond.
	file := func(from, to int, lead float64, drop ...int) []float64 {
		var pts []float64
		for i := from; i < to; i++ {
			if slices.Contains(drop, i) {
				continue
			}
			ms := (chunks[i] - chunks[from] + 500) / 1000
			pts = append(pts, lead+float64(ms)/1000)
		}
		return pts
	}
	for _, c := range []struct {
		name    string
		pts     []float64
		encoded [][]int64
		want    string // "" for nil, else a part of the error
		first   int    // the chunk the file starts at, when nil
		last    int
	}{
		{"every frame from the first", file(0, 40, 0), [][]int64{chunks}, "", 0, 39},
		{"a file that starts late on the publisher's clock", file(12, 40, 0), [][]int64{chunks}, "", 12, 39},
		{"a file whose video starts after its audio", file(12, 30, 0.043), [][]int64{chunks}, "", 12, 29},
		{"the preview's encoder beside the publisher's", file(4, 30, 0), [][]int64{{1, 2, 3}, chunks}, "", 4, 29},
		{"a frame dropped in the middle", file(12, 40, 0, 20), [][]int64{chunks}, "1 chunks are not in the file (at [", 0, 0},
		{"three frames dropped", file(0, 40, 0, 5, 6, 30), [][]int64{chunks}, "3 chunks are not in the file", 0, 0},
		{"a frame the encoder did not output", append(file(0, 10, 0), 0.475), [][]int64{chunks}, "10 of the file's 11 frames", 0, 0},
		{"no chunk", file(0, 10, 0), nil, "output no chunk", 0, 0},
		{"no frame", nil, [][]int64{chunks}, "no frame", 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, first, last, err := framesMissing(c.pts, c.encoded)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("framesMissing: %v, want nil", err)
			case c.want == "" && (first != c.first || last != c.last):
				t.Errorf("framesMissing: the file is chunks %d to %d, want %d to %d", first, last, c.first, c.last)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("framesMissing: %v, want an error with %q", err, c.want)
			}
		})
	}
}
