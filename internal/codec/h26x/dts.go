package h26x

import (
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
// (mux.Frame.Timestamp). It asks mediacommon's DTSExtractor, which reads the
// picture order count from the slice headers; when that cannot answer (no
// SPS yet, no keyframe yet, unsupported SPS, broken stream) it falls back to
// PTS minus the reserve. Either way the result is kept strictly increasing
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
	// Fallbacks counts the frames whose DTS came from the fallback rule.
	Fallbacks int
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
	dts, ok := d.extract(ps, nalus, pts)
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
