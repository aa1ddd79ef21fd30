package muxbase

import "math"

// FrameGrid puts a video track's frames on a millisecond timeline (FLV tag
// times, Matroska's 1 ms TimestampScale) so that a reader that rescales
// them to a 1/framerate grid counted from the file's start finds each frame
// on its own tick. ffmpeg does that when it decodes (its encoder time base
// is 1/r_frame_rate, the rescale rounds to nearest): 30 fps frames are 33.3
// ms apart, so on whole milliseconds they lie 33, 33 and 34 ms apart, each
// up to half a millisecond off its exact time. Where the file starts about
// half a frame off the video's grid (the audio starting ~17 ms before the
// video's keyframe, as a join backfilled to the keyframe does), two
// neighbours then land on one tick every third frame, and ffmpeg stops with
// "non monotonically increasing dts to muxer": 5 >= 5, 8 >= 8, ...
//
// The grid's rate is the track's frame rate when the muxer knows it (the
// catalog's framerate, else the SPS's: GridRate), otherwise the one the
// recent frames show (Note, FrameGap says how). The frame that
// first knows the rate fixes its tick on the grid (where its exact time
// falls); each later frame's tick is that plus the frames between them
// (from the exact times), and of the two milliseconds around a frame's time
// the one on that tick is taken: every frame keeps its own tick and its
// time within a millisecond. When the estimated rate changes by more than a
// percent (the first B-frame shows the real one), the current frame fixes
// the grid again. Until the rate is known a frame goes to the millisecond
// at or before its time: placed early, it cannot reach the tick of the
// frame after it, and the first frame has none before it. The second frame
// may lie several frames after the first (a P-frame after an I-frame), so
// it goes where it keeps its tick at the first few multiples of the rate
// the two show.
//
// Readers need not agree on where a file starts (ffmpeg 5.1 shows Matroska
// Opus its CodecDelay early, ffmpeg 9 does not), so Place takes every start
// a reader may count from, and a frame goes where it has its own tick on
// each grid. The zero FrameGrid is ready; Reset starts it again (a new
// timeline need not lie on the old grid).
type FrameGrid struct {
	// FrameGap is the rate estimate (Note), which a muxer may read for a
	// frame's duration too (Gap): one estimate per track.
	FrameGap
	set    bool
	pts    int64    // µs, the frame that fixed the grid
	fps    float64  // the grid's rate
	starts [2]int64 // ms, the file's starts when the grid was fixed
	ticks  [2]int64 // the fixing frame's tick counted from each
	n      int      // starts in use
}

// FrameGap estimates a track's frame duration from the times of its
// frames: the smallest positive gap between any two of the latest 16. A
// window, not the frame before, because in decode order with B-frames
// neighbours are rarely one frame apart (I, P, B, B is 0, 100, 33 and 67
// ms at 30 fps). The estimate only shrinks; a new timeline starts it
// again (FrameGrid.Reset). The zero FrameGap is ready.
type FrameGap struct {
	recent  [16]int64 // the latest frames' times (µs)
	nrecent int
	gap     int64 // the smallest positive gap between them, µs
}

// Note records the time (µs) of a frame: its presentation time, on any
// timeline that moves with the frames (only gaps are kept). Call it once
// per frame, for a video frame before FrameGrid.Place.
func (g *FrameGap) Note(pts int64) {
	for _, p := range g.recent[:min(g.nrecent, len(g.recent))] {
		if d := max(pts-p, p-pts); d > 0 && (g.gap == 0 || d < g.gap) {
			g.gap = d
		}
	}
	g.recent[g.nrecent%len(g.recent)] = pts
	g.nrecent++
}

// Gap returns the estimate (µs): 0 until two frames with different times
// were noted.
func (g *FrameGap) Gap() int64 { return g.gap }

// GridRate is the rate a video track's frames are placed at (Place's
// fps): the catalog's framerate when it gives one, else the one the
// track's SPS declares (sps, 0 when none); 0 leaves it to the rate the
// frames show.
func GridRate(framerate, sps float64) float64 {
	if framerate > 0 {
		return framerate
	}
	return sps
}

// Place returns the millisecond at which to write a video frame presented
// at pts (µs on the output timeline; a B-frame's decode time too), given
// ms, the millisecond the muxer would write on its own (pts floored or
// rounded), fps, the track's frame rate (0: estimated from the frames
// noted), and starts, the file's first timestamp (ms) as each reader sees
// it (the earliest time written, counting this frame; one or two). The
// answer is ms or the other millisecond within one of pts.
func (g *FrameGrid) Place(pts, ms int64, fps float64, starts ...int64) int64 {
	lo := floorDiv(pts, 1000)
	if fps <= 0 && g.gap > 0 {
		fps = 1e6 / float64(g.gap)
		if g.nrecent < 3 && fps <= 1000 && len(starts) > 0 {
			return hedge(pts, ms, lo, fps, starts)
		}
	}
	if fps <= 0 || fps > 1000 || len(starts) == 0 {
		return min(ms, lo)
	}
	if !g.set || math.Abs(fps-g.fps) > g.fps/100 {
		g.set, g.pts, g.fps = true, pts, fps
		g.n = copy(g.starts[:], starts)
		for i, s := range g.starts[:g.n] {
			g.ticks[i] = int64(math.Round(float64(pts-s*1000) * fps / 1e6))
		}
	}
	frames := int64(math.Round(float64(pts-g.pts) * g.fps / 1e6))
	onTicks := func(c int64) bool {
		for i, s := range g.starts[:g.n] {
			if int64(math.Round(float64(c-s)*g.fps/1000)) != g.ticks[i]+frames {
				return false
			}
		}
		return true
	}
	for _, c := range [3]int64{ms, lo, lo + 1} {
		if onTicks(c) {
			return c
		}
	}
	return ms
}

// hedge places a frame whose rate is estimated from two frames only: with
// B-frames those are an I- and a P-frame several frames apart (0 and 100 ms
// at 30 fps), so the true rate may be a multiple of the estimate. The frame
// goes to a millisecond (of lo, ms and lo+1) that keeps it on its exact tick
// at each of the first four multiples, from every start; failing that, to
// lo.
func hedge(pts, ms, lo int64, fps float64, starts []int64) int64 {
	for _, c := range [3]int64{lo, ms, lo + 1} {
		ok := true
		for k := 1.0; k <= 4 && ok; k++ {
			for _, s := range starts {
				exact := math.Round(float64(pts-s*1000) * k * fps / 1e6)
				if math.Round(float64(c-s)*k*fps/1000) != exact {
					ok = false
					break
				}
			}
		}
		if ok {
			return c
		}
	}
	return lo
}

// Reset forgets the grid and the rate estimate: the next frames fix them
// again.
func (g *FrameGrid) Reset() { *g = FrameGrid{} }

// floorDiv is a/b rounded down (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
