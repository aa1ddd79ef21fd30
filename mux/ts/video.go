package ts

import (
	"errors"
	"fmt"

	"github.com/moq-export/moq-export/internal/codec/h26x"
	"github.com/moq-export/moq-export/mux"
)

// errNeedParamSets means a keyframe came before the parameter sets a
// decoder needs (Annex B input whose SPS/PPS have not arrived). The frame is
// dropped and the track keeps waiting for a keyframe.
var errNeedParamSets = errors.New("keyframe without parameter sets")

// videoState turns H.264/H.265 frames in either input form into Annex B
// access units: AUD first, the current parameter sets before every
// keyframe, then the frame's other NAL units.
type videoState struct {
	codec   h26x.Codec
	norm    *h26x.Normalizer
	dts     *h26x.DTS
	aud     []byte
	nalus   [][]byte // output units, reused
	lastDTS int64    // ticks
	hasDTS  bool
}

func newVideoState(t mux.Track, family string) (*videoState, error) {
	c, ok := h26x.CodecOf(family)
	if !ok {
		return nil, &mux.UnsupportedCodecError{Container: "ts", Codec: t.Codec, Suggest: "mkv"}
	}
	n, err := h26x.NewNormalizer(c, t.Description)
	if err != nil {
		return nil, fmt.Errorf("ts: track %d: %w", t.ID, err)
	}
	return &videoState{
		codec: c,
		norm:  n,
		dts:   h26x.NewDTS(c, t.Jitter),
		aud:   h26x.AUD(c),
	}, nil
}

// reset forgets the decode timeline after a discontinuity.
func (v *videoState) reset() {
	v.dts.Reset()
	v.hasDTS = false
}

// absorb reads a frame that is not written, for its parameter sets.
func (v *videoState) absorb(payload []byte) {
	_, _ = v.norm.Frame(payload)
}

// accessUnit appends the Annex B access unit of f to dst. It returns the
// keyframe flag and PTS/DTS in ticks; an empty result (no error) means the
// frame held only parameter sets.
func (v *videoState) accessUnit(dst []byte, f mux.Frame) (out []byte, key bool, pts, dts int64, err error) {
	units, err := v.norm.Frame(f.Payload)
	if err != nil && !errors.Is(err, h26x.ErrBadParamSet) {
		// Parameter sets that make no avcC/hvcC are still usable in
		// band; anything else is a broken payload.
		return dst, false, 0, 0, fmt.Errorf("%w: %w", ErrBadFrame, err)
	}
	if len(units) == 0 {
		return dst, false, 0, 0, nil
	}
	ps := v.norm.ParamSets()
	key = f.Keyframe || h26x.IsKeyframe(v.codec, units)
	if key && !ps.Complete(v.codec) {
		return dst, false, 0, 0, errNeedParamSets
	}
	dtsUs := v.dts.Next(ps, units, f.Timestamp)
	pts, dts = ticksFromMicros(f.Timestamp), ticksFromMicros(dtsUs)
	if v.hasDTS && dts <= v.lastDTS {
		dts = v.lastDTS + 1
	}
	// A PTS at or below the previous DTS is broken input; present the
	// frame at its decode time rather than drop a possible reference.
	pts = max(pts, dts)
	v.lastDTS, v.hasDTS = dts, true

	v.nalus = append(v.nalus[:0], v.aud)
	if key {
		v.nalus = append(v.nalus, ps.VPS...)
		v.nalus = append(v.nalus, ps.SPS...)
		v.nalus = append(v.nalus, ps.PPS...)
	}
	v.nalus = append(v.nalus, units...)
	out = h26x.AppendAnnexB(dst, v.nalus)
	clear(v.nalus)
	return out, key, pts, dts, nil
}
