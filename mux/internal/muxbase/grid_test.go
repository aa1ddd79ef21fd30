package muxbase

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// ffmpegTick is where ffmpeg puts a frame written at ms when it decodes
// onto the 1/fps grid counted from start: rescaled and rounded to nearest,
// half away from zero.
func ffmpegTick(ms, start int64, fps float64) int64 {
	return int64(math.Round(float64(ms-start) * fps / 1000))
}

// gop30 is the presentation times (µs) of two 30 fps GOPs in decode order,
// from pts 0: with B-frames (I P B B ...) or without.
func gop30(bframes bool) []int64 {
	var out []int64
	for n := int64(0); n < 60; n++ {
		out = append(out, n*1_000_000/30)
	}
	if !bframes {
		return out
	}
	dec := []int64{out[0]}
	for i := 1; i+2 < len(out); i += 3 {
		dec = append(dec, out[i+2], out[i], out[i+1])
	}
	return dec
}

// TestFrameGridGivesEveryFrameItsOwnTickWhereverTheFileStarts places 30
// fps frames, with and without B-frames, at the catalog's rate or at the
// rate they show, with the file starting anywhere within a frame before
// the first one (the audio's lead), and with a second reader's start 7 ms
// earlier (ffmpeg 5.1 and Matroska Opus's CodecDelay): in presentation
// order every frame must land on a later tick than the one before on each
// reader's grid, and within a millisecond of its time.
func TestFrameGridGivesEveryFrameItsOwnTickWhereverTheFileStarts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bframes bool
		fps     float64 // 0: estimated
		round   bool    // the muxer's own ms is rounded (MKV), else floored (FLV)
		second  int64   // ms before the first start a second reader counts from; 0: none
	}{
		{"catalog rate, floored", true, 30, false, 0},
		{"catalog rate, rounded", true, 30, true, 0},
		{"catalog rate, rounded, two readers", true, 30, true, 7},
		{"estimated rate without B-frames, floored", false, 0, false, 0},
		{"estimated rate without B-frames, rounded", false, 0, true, 0},
		{"estimated rate with B-frames, floored", true, 0, false, 0},
		{"estimated rate with B-frames, rounded", true, 0, true, 0},
		{"estimated rate with B-frames, rounded, two readers", true, 0, true, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for lead := int64(0); lead < 34_000; lead += 37 {
				// The frame times' offset: its sub-millisecond part
				// decides which way a frame rounds.
				origin := 5_000_000 + lead*13%1000
				var g FrameGrid
				startUs := origin - lead
				start := startUs / 1000
				starts := []int64{start}
				if tc.second > 0 {
					starts = append(starts, start-tc.second)
				}
				type placed struct{ pts, ms int64 }
				var got []placed
				for _, p := range gop30(tc.bframes) {
					pts := origin + p
					ms := pts / 1000
					if tc.round {
						ms = (pts + 500) / 1000
					}
					g.Note(pts)
					got = append(got, placed{pts, g.Place(pts, ms, tc.fps, starts...)})
				}
				slices.SortFunc(got, func(a, b placed) int { return int(a.pts - b.pts) })
				for i, p := range got {
					if d := p.ms*1000 - p.pts; d <= -1000 || d >= 1000 {
						t.Fatalf("lead %d µs: frame at %d µs written at %d ms", lead, p.pts, p.ms)
					}
					if i == 0 {
						continue
					}
					for _, s := range starts {
						if a, b := ffmpegTick(got[i-1].ms, s, 30), ffmpegTick(p.ms, s, 30); b <= a {
							t.Fatalf("lead %d µs, start %d ms: frames at %d and %d µs written at %d and %d ms, both on tick %d",
								lead, s, got[i-1].pts, p.pts, got[i-1].ms, p.ms, b)
						}
					}
				}
			}
		})
	}
}

// TestFrameGridFloorsAFrameWithoutARate: with no rate given and one frame
// seen, or a rate no grid is kept for (over 1000 fps), Place floors: a
// frame placed early cannot reach the tick of the one after it.
func TestFrameGridFloorsAFrameWithoutARate(t *testing.T) {
	for _, tc := range []struct {
		fps     float64
		pts, ms int64
		want    int64
	}{
		{0, 16_600, 17, 16},
		{0, 16_000, 16, 16},
		{5000, 16_600, 17, 16},
		{0, -1_500, -1, -2},
	} {
		t.Run(fmt.Sprint(tc.fps, "/", tc.pts), func(t *testing.T) {
			var g FrameGrid
			g.Note(tc.pts)
			if got := g.Place(tc.pts, tc.ms, tc.fps, 0); got != tc.want {
				t.Fatalf("Place(%d µs, %d ms) = %d, want %d", tc.pts, tc.ms, got, tc.want)
			}
		})
	}
}

// TestTheGridsRateIsTheCatalogsElseTheSPSsElseTheFrames: GridRate, the
// one choice of FLV's and Matroska's grids, takes the catalog's
// framerate over the SPS's, and leaves it to the frames (0) when neither
// says.
func TestTheGridsRateIsTheCatalogsElseTheSPSsElseTheFrames(t *testing.T) {
	for _, tc := range []struct {
		name         string
		catalog, sps float64
		want         float64
	}{
		{"the catalog's over the SPS's", 25, 30, 25},
		{"the catalog's without an SPS rate", 29.97, 0, 29.97},
		{"the SPS's without the catalog's", 0, 50, 50},
		{"neither: the frames'", 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := GridRate(tc.catalog, tc.sps); got != tc.want {
				t.Fatalf("GridRate(%v, %v) = %v, want %v", tc.catalog, tc.sps, got, tc.want)
			}
		})
	}
}

// TestFrameGapIsTheSmallestGapAmongTheLatestFrames: in decode order with
// B-frames (I P B B: no two neighbours one frame apart at first) the
// estimate is one frame once a B-frame came; equal times add nothing;
// Reset (a new timeline) forgets it, so the new timeline's frames set it.
func TestFrameGapIsTheSmallestGapAmongTheLatestFrames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		times []int64
		want  int64
	}{
		{"no frame", nil, 0},
		{"one frame", []int64{5}, 0},
		{"two frames at one time", []int64{5, 5}, 0},
		{"an I- and a P-frame: their distance", gop30(true)[:2], 100_000},
		{"the first B-frame shows the frame", gop30(true)[:3], 33_333},
		{"two GOPs with B-frames", gop30(true), 33_333},
		{"two GOPs without", gop30(false), 33_333},
		{"the smallest gap 15 frames apart is seen", []int64{0, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000, 11000, 12000, 13000, 14000, 500}, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g FrameGrid
			for _, p := range tc.times {
				g.Note(p)
			}
			if got := g.Gap(); got != tc.want {
				t.Fatalf("gap %d µs, want %d", got, tc.want)
			}
			g.Reset()
			if got := g.Gap(); got != 0 {
				t.Fatalf("gap %d µs after Reset, want none", got)
			}
			g.Note(0)
			g.Note(66_667)
			if got := g.Gap(); got != 66_667 {
				t.Fatalf("gap %d µs on the new timeline, want its own 66667", got)
			}
		})
	}
}
