package flv

import (
	"bytes"
	"fmt"

	"github.com/moq-export/moq-export/internal/codec/h26x"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/internal/muxbase"
)

// track is one bound track and its per-track state.
type track struct {
	mux.Track
	fam  string
	info codecInfo

	config     []byte // sequence header body; nil while unknown or for MP3
	sendConfig bool   // write config before the next frame
	needKey    bool   // video: drop frames until a keyframe
	disc       bool   // a discontinuity is pending

	// H.264/H.265 only: the payload normalizer (both input forms), the
	// decode-time estimator, and the AVCC output buffer.
	norm *h26x.Normalizer
	dts  *h26x.DTS
	avcc []byte
	// relength is set when the description's NAL length size is not 4: the
	// record is then rebuilt to match the 4-byte lengths written.
	relength bool

	prevPTS int64 // µs, output timeline, previous frame
	maxPTS  int64 // µs, largest presentation time written
	hasPTS  bool
	dur     int64 // µs, frame duration estimate
	grid    muxbase.FrameGrid
	// spsRate is the frame rate the SPS declares (0: none), the grid's
	// rate when the catalog gives none.
	spsRate float64
}

func newTrack(t mux.Track, fam string, info codecInfo) (*track, error) {
	cfg, err := staticConfig(fam, t)
	if err != nil {
		return nil, err
	}
	tr := &track{Track: t, fam: fam, info: info, config: cfg, sendConfig: true}
	tr.needKey = info.kind == mux.Video
	if info.kind == mux.Video && t.Framerate > 0 {
		tr.dur = int64(1e6 / t.Framerate)
	}
	if info.h26x {
		c, _ := h26x.CodecOf(fam)
		if tr.norm, err = h26x.NewNormalizer(c, t.Description); err != nil {
			return nil, fmt.Errorf("%w: %w", errBadDescription, err)
		}
		if t.Description != nil {
			if _, n, err := h26x.ParseDecoderConfig(c, t.Description); err == nil && n != 4 {
				tr.relength = true
			}
		}
		tr.config = tr.currentConfig()
		tr.spsRate = h26x.FrameRate(c, tr.norm.ParamSets())
		tr.dts = h26x.NewDTS(c, t.Jitter)
	}
	return tr, nil
}

// tagType returns the FLV tag type of the track's frames.
func (t *track) tagType() byte {
	if t.info.kind == mux.Video {
		return tagVideo
	}
	return tagAudio
}

// audioByte returns the classic SoundFormat byte. The rate, size and type
// bits are nominal for AAC (the ASC rules) and informative for MP3.
func (t *track) audioByte() byte {
	b := t.info.classic<<4 | 3<<2 | 1<<1 // 44 kHz, 16 bit
	if t.Channels != 1 {
		b |= 1 // stereo
	}
	return b
}

// prepare returns the payload to write for f and its decode time (µs),
// given its presentation time pts on the output timeline. It returns a nil
// payload when the frame must wait (no keyframe yet, no parameter sets yet,
// a frame of parameter sets only). H.264/H.265 payloads in either form
// become 4-byte length-prefixed NAL units without parameter sets; new
// parameter sets become a new sequence header.
func (t *track) prepare(f *mux.Frame, pts int64) ([]byte, int64, error) {
	if t.norm == nil {
		if t.needKey {
			if !f.Keyframe {
				return nil, 0, nil
			}
			t.needKey = false
		}
		return f.Payload, pts, nil
	}
	nalus, err := t.norm.Frame(f.Payload)
	if t.norm.ConfigChanged() {
		t.config = t.currentConfig()
		t.sendConfig = t.config != nil
		t.spsRate = h26x.FrameRate(t.norm.Codec(), t.norm.ParamSets())
	}
	if err != nil {
		return nil, 0, err
	}
	if t.config == nil || len(nalus) == 0 {
		return nil, 0, nil
	}
	if t.needKey {
		if !f.Keyframe {
			return nil, 0, nil
		}
		t.needKey = false
	}
	dts := t.dts.Next(t.norm.ParamSets(), nalus, pts)
	t.avcc = h26x.AppendAVCC(t.avcc[:0], nalus)
	return t.avcc, dts, nil
}

// currentConfig returns the normalizer's avcC/hvcC, rebuilt with 4-byte
// NAL lengths when the description had another length size.
func (t *track) currentConfig() []byte {
	cfg := t.norm.Config()
	if cfg != nil && t.relength && bytes.Equal(cfg, t.Description) {
		if b, err := h26x.BuildDecoderConfig(t.norm.Codec(), t.norm.ParamSets()); err == nil {
			return b
		}
		return nil
	}
	return cfg
}

// note records a written frame's presentation time (µs, output timeline)
// and refines the frame duration estimate from it.
func (t *track) note(pts int64) {
	if t.hasPTS {
		if d := pts - t.prevPTS; d > 0 && (t.dur == 0 || d < t.dur) {
			t.dur = d
		}
	}
	if !t.hasPTS || pts > t.maxPTS {
		t.maxPTS = pts
	}
	t.prevPTS, t.hasPTS = pts, true
}

// restart prepares the track for a new timeline after a discontinuity.
func (t *track) restart() {
	if t.dts != nil {
		t.dts.Reset()
	}
	t.needKey = t.info.kind == mux.Video
	t.sendConfig = true
	t.grid.Reset() // the new timeline need not be on the old grid
}
