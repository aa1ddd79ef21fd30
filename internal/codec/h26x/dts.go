package h26x

import (
	"bytes"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h265"
)

// DefaultDTSReserve is the DTS reserve NewDTS uses when given zero: how far
// the fallback estimate puts a frame's decode time before its presentation
// time. 100 ms covers the reorder depth of common B-frame GOPs up to 30 fps.
const DefaultDTSReserve = 100 * time.Millisecond

// DTS estimates decode timestamps for the frames of one H.264/H.265 track,
// given in decode order with their presentation timestamps in microseconds
// (mux.Frame.Timestamp). An H.264 stream whose SPS states its reorder depth
// (max_num_reorder_frames, which x264 and most encoders write) gets it from
// the presentation timestamps alone, as ffmpeg does (see window). Any
// other asks mediacommon's DTSExtractor, which reads the picture order count
// from the slice headers; when that cannot answer (no SPS yet, no keyframe
// yet, unsupported SPS, broken stream) it falls back to PTS minus the
// reserve. Either way the result is kept strictly increasing
// and not above the PTS where possible (see Next). With B-frames the first
// DTS may lie before the first PTS, below zero on a timeline that starts at
// zero: containers without negative timestamps (FLV) shift the track. It is
// not safe for concurrent use.
type DTS struct {
	codec   Codec
	reserve int64 // microseconds
	e264    *h264.DTSExtractor
	e265    *h265.DTSExtractor
	prev    int64
	started bool
	au      [][]byte
	// maxPTS is the latest PTS since the extractor started, lastPTS the
	// previous frame's, and step the smallest PTS step between consecutive
	// frames so far (a frame's duration): what finds a gap (see Next).
	maxPTS, lastPTS, step int64
	// win is the reorder window of an H.264 stream whose SPS states its
	// depth (see window).
	win reorderWindow
	// Fallbacks counts the frames whose DTS came from the fallback rule.
	Fallbacks int
}

// reorderWindow gives an H.264 stream whose SPS states its reorder depth R
// (VUI max_num_reorder_frames, or pic_order_cnt_type 2: none) the decode
// times ffmpeg gives it, from the presentation timestamps alone: the DTS of
// the n-th frame in decode order is the (n-R)-th smallest PTS (counting
// from 0). At most R frames before a frame in decode order come after it
// in presentation order, so at least n+1-R of the first n+1 PTS are not
// above its own: the DTS is not above the PTS. The window holds the R+1
// smallest PTS not yet given out. Neither the slice headers nor the
// picture order count are read, so nothing is parsed or allocated per
// frame (mediacommon's extractor reads each slice header into a new
// buffer).
//
// The start is the extractor's: the first frame (a keyframe) gets its PTS,
// and the frames until the window is full get the previous DTS plus 1 ms
// (the smallest PTS, the keyframe's, was given out already).
type reorderWindow struct {
	sps     []byte // the SPS depth was read from
	depth   int    // R; -1: the SPS states none (the extractor answers)
	started bool   // a keyframe has opened the window
	seen    int    // frames since the window opened
	pend    []int64
}

// maxReorderDepth bounds a stated depth: a DPB holds at most 16 frames.
const maxReorderDepth = 16

// depthOf returns the reorder depth the current SPS states, or -1. A
// changed SPS starts the window again (as it resets the extractor).
func (w *reorderWindow) depthOf(ps ParamSets) int {
	if len(ps.SPS) == 0 {
		return -1
	}
	sps := ps.SPS[len(ps.SPS)-1]
	if w.sps != nil && bytes.Equal(sps, w.sps) {
		return w.depth
	}
	w.sps, w.depth, w.started = sps, -1, false
	var s h264.SPS
	if s.Unmarshal(sps) != nil || !s.FrameMbsOnlyFlag || s.PicOrderCntType == 1 {
		return -1
	}
	switch {
	case s.PicOrderCntType == 2:
		w.depth = 0
	case s.VUI != nil && s.VUI.BitstreamRestriction != nil && s.VUI.BitstreamRestriction.MaxNumReorderFrames <= maxReorderDepth:
		w.depth = int(s.VUI.BitstreamRestriction.MaxNumReorderFrames)
	}
	return w.depth
}

// next returns the DTS of the next frame (see reorderWindow), given the
// previous DTS prev; false before the first keyframe.
func (w *reorderWindow) next(nalus [][]byte, pts, prev int64) (int64, bool) {
	if !w.started {
		if !IsKeyframe(H264, nalus) {
			return 0, false
		}
		w.started, w.seen, w.pend = true, 0, w.pend[:0]
	}
	w.seen++
	i := len(w.pend)
	w.pend = append(w.pend, pts)
	for ; i > 0 && w.pend[i-1] > pts; i-- {
		w.pend[i] = w.pend[i-1]
	}
	w.pend[i] = pts
	if w.seen == 1 {
		return pts, true
	}
	dts := int64(-1 << 62)
	if len(w.pend) > w.depth {
		dts = w.pend[0]
		w.pend = append(w.pend[:0], w.pend[1:]...)
	}
	if w.seen <= w.depth+1 {
		dts = max(dts, prev+1000)
	}
	return dts, true
}

// NewDTS returns a DTS estimator for codec c. reserve is the fallback's
// PTS-DTS distance, normally the track's catalog jitter (mux.Track.Jitter),
// which bounds the reorder delay; zero or less means DefaultDTSReserve.
func NewDTS(c Codec, reserve time.Duration) *DTS {
	if reserve <= 0 {
		reserve = DefaultDTSReserve
	}
	d := &DTS{codec: c, reserve: reserve.Microseconds()}
	d.Reset()
	return d
}

// Reset forgets the stream: the next frame is estimated as if it were the
// first. Call it after a discontinuity.
func (d *DTS) Reset() {
	d.started = false
	d.prev = 0
	d.maxPTS, d.lastPTS, d.step = 0, 0, 0
	d.restartExtractor()
}

// restartExtractor gives the extractor a fresh state: the next frame is
// its first.
func (d *DTS) restartExtractor() {
	d.win.started = false
	switch d.codec {
	case H264:
		d.e264 = &h264.DTSExtractor{}
		d.e264.Initialize()
	case H265:
		d.e265 = &h265.DTSExtractor{}
		d.e265.Initialize()
	}
}

// Next returns the decode timestamp, in microseconds, of the next frame in
// decode order: nalus are its NAL units (as Normalizer.Frame returns them,
// without parameter sets), ps the parameter sets in force (as
// Normalizer.ParamSets returns them) and pts its presentation timestamp in
// microseconds. The extractor keeps the SPS/PPS it was last given, so ps
// must not be modified afterwards (Normalizer replaces, never edits, its
// sets). The result is strictly greater than the previous one since
// the last Reset, and not greater than pts unless pts is not above the
// previous DTS, in which case it is the previous DTS plus one microsecond
// (the caller should then raise the PTS or drop the frame).
//
// Frames missing before a keyframe (groups lost, late frames dropped, a
// GOP cut short) without a Reset are a gap in the PTS: the keyframe comes
// later than one frame after the latest PTS so far, by more than the
// reserve (which bounds the reorder delay, so no keyframe of an unbroken
// stream does). The picture order count says nothing of the gap, and the
// extractor would spread it over the frames after it: the keyframe's DTS
// most of the gap before its PTS, then decode times that crawl back to
// their PTS in steps no frame rate explains, from which ffmpeg guesses a
// 240 fps stream and then repeats output timestamps. So the extractor
// starts again at that keyframe, as after a Reset (the keyframe's DTS is
// its PTS, later than every DTS so far): what a recording's first GOP
// gets, and every player reads.
func (d *DTS) Next(ps ParamSets, nalus [][]byte, pts int64) int64 {
	if d.started && d.step > 0 && pts-(d.maxPTS+d.step) > d.reserve && IsKeyframe(d.codec, nalus) {
		d.restartExtractor()
	}
	var dts int64
	var ok bool
	if d.codec == H264 && d.win.depthOf(ps) >= 0 {
		dts, ok = d.win.next(nalus, pts, d.prev)
	} else {
		dts, ok = d.extract(ps, nalus, pts)
	}
	if !ok || dts > pts {
		d.Fallbacks++
		dts = pts - d.reserve
	}
	if d.started && dts <= d.prev {
		dts = d.prev + 1
	}
	if d.started {
		if st := pts - d.lastPTS; st > 0 && (d.step == 0 || st < d.step) {
			d.step = st
		}
		d.maxPTS = max(d.maxPTS, pts)
	} else {
		d.maxPTS = pts
	}
	d.started = true
	d.prev, d.lastPTS = dts, pts
	return dts
}

func (d *DTS) extract(ps ParamSets, nalus [][]byte, pts int64) (int64, bool) {
	if len(nalus) == 0 {
		return 0, false
	}
	// The extractors read the parameter sets from the access unit itself.
	d.au = append(d.au[:0], ps.VPS...)
	d.au = append(d.au, ps.SPS...)
	d.au = append(d.au, ps.PPS...)
	for _, u := range nalus {
		if len(u) > 0 {
			d.au = append(d.au, u)
		}
	}
	defer clear(d.au)
	// The extractors work on the MPEG 90 kHz clock (their start-up steps
	// are fixed tick counts); convert, and map the PTS-DTS distance back so
	// that DTS = PTS stays exact.
	pts90 := to90k(pts)
	var dts90 int64
	var err error
	switch {
	case d.e264 != nil:
		dts90, err = d.e264.Extract(d.au, pts90)
	case d.e265 != nil:
		dts90, err = d.e265.Extract(d.au, pts90)
	default:
		return 0, false
	}
	if err != nil {
		return 0, false
	}
	return pts - from90k(pts90-dts90), true
}

// to90k converts microseconds to 90 kHz ticks, rounding to nearest.
func to90k(us int64) int64 { return divRound(us*9, 100) }

// from90k converts 90 kHz ticks to microseconds, rounding to nearest.
func from90k(t int64) int64 { return divRound(t*100, 9) }

func divRound(a, b int64) int64 {
	if a < 0 {
		return -((-a + b/2) / b)
	}
	return (a + b/2) / b
}
