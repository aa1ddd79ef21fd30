package h26x

import (
	"fmt"
)

// Normalizer turns the frames of one H.264/H.265 track, in either payload
// form, into bare NAL units and keeps the track's current parameter sets and
// decoder configuration record. It is not safe for concurrent use.
type Normalizer struct {
	codec      Codec
	lengthSize int // 0: Annex B input
	desc       []byte
	ps         ParamSets // current; owned (copied), never aliases a payload
	config     []byte    // current avcC/hvcC, nil until the parameter sets are complete
	changed    bool
	units      [][]byte // Frame's result, reused
	scratch    [][]byte // split buffer, reused
	inband     ParamSets
}

// NewNormalizer returns a Normalizer for a track of codec c. description is
// the catalog's avcC/hvcC: when it is non-empty, frames are AVCC with its
// length size and Config starts as description; when it is empty, frames are
// Annex B and Config is nil until in-band parameter sets arrive. A malformed
// description gives an error wrapping ErrBadConfig.
func NewNormalizer(c Codec, description []byte) (*Normalizer, error) {
	if c != H264 && c != H265 {
		return nil, fmt.Errorf("%w: %v", ErrUnknownCodec, c)
	}
	n := &Normalizer{codec: c}
	if len(description) == 0 {
		return n, nil
	}
	ps, lengthSize, err := ParseDecoderConfig(c, description)
	if err != nil {
		return nil, err
	}
	n.lengthSize = lengthSize
	n.desc = append([]byte(nil), description...)
	n.ps = ps.Clone()
	n.config = n.desc
	return n, nil
}

// Codec returns the codec the Normalizer was made for.
func (n *Normalizer) Codec() Codec { return n.codec }

// AnnexBInput reports whether frames are expected in Annex B form (the track
// has no description).
func (n *Normalizer) AnnexBInput() bool { return n.lengthSize == 0 }

// Frame splits payload, one access unit in the track's input form, and
// returns its NAL units without parameter sets and access unit delimiters.
// Parameter sets in the frame update the current ones: for each of VPS, SPS
// and PPS that the frame carries, the frame's units replace the stored ones.
// A frame holding only parameter sets returns no units. The result aliases
// payload and an internal buffer and is valid until the next call to Frame.
// A malformed payload gives an error wrapping ErrTruncated or
// ErrNoStartCode, no units, and leaves the state unchanged. In-band
// parameter sets from which no record can be built give an error wrapping
// ErrBadParamSet together with the frame's units; the sets are still taken
// and Config returns nil until usable ones arrive.
func (n *Normalizer) Frame(payload []byte) ([][]byte, error) {
	var err error
	if n.lengthSize == 0 {
		n.scratch, err = splitAnnexB(n.scratch[:0], payload)
	} else {
		n.scratch, err = splitAVCC(n.scratch[:0], payload, n.lengthSize)
	}
	if err != nil {
		return nil, err
	}
	n.units = n.units[:0]
	in := &n.inband
	in.VPS, in.SPS, in.PPS = in.VPS[:0], in.SPS[:0], in.PPS[:0]
	for _, u := range n.scratch {
		switch {
		case IsParameterSet(n.codec, u):
			switch NALUType(n.codec, u) {
			case 7, 33:
				in.SPS = append(in.SPS, u)
			case 8, 34:
				in.PPS = append(in.PPS, u)
			case 32:
				in.VPS = append(in.VPS, u)
			}
		case IsAUD(n.codec, u):
		default:
			n.units = append(n.units, u)
		}
	}
	clear(n.scratch)
	if len(in.VPS)+len(in.SPS)+len(in.PPS) > 0 {
		if err := n.update(); err != nil {
			return n.units, err
		}
	}
	return n.units, nil
}

// update merges the in-band sets into the current ones and rebuilds the
// record when they changed.
func (n *Normalizer) update() error {
	next := n.ps
	in := n.inband
	if len(in.VPS) > 0 {
		next.VPS = in.VPS
	}
	if len(in.SPS) > 0 {
		next.SPS = in.SPS
	}
	if len(in.PPS) > 0 {
		next.PPS = in.PPS
	}
	if next.Equal(n.ps) {
		return nil
	}
	n.ps = next.Clone()
	old := n.config
	n.config = nil
	if !n.ps.Complete(n.codec) {
		n.changed = n.changed || old != nil
		return nil
	}
	if n.desc != nil {
		if dps, _, err := ParseDecoderConfig(n.codec, n.desc); err == nil && dps.Equal(n.ps) {
			n.config = n.desc
			n.changed = true
			return nil
		}
	}
	cfg, err := BuildDecoderConfig(n.codec, n.ps)
	n.changed = true
	if err != nil {
		return fmt.Errorf("in-band parameter sets: %w", err)
	}
	n.config = cfg
	return nil
}

// Config returns the current decoder configuration record (avcC for H.264,
// hvcC for H.265): the description itself while the in-band parameter sets
// have not changed it, a record built from the current sets otherwise, and
// nil while no complete set (SPS and PPS, and VPS for H.265) is known. The
// caller must not modify it.
func (n *Normalizer) Config() []byte { return n.config }

// ParamSets returns the current parameter sets. The caller must not modify
// them.
func (n *Normalizer) ParamSets() ParamSets { return n.ps }

// ConfigChanged reports whether Config changed (including from nil to the
// first record) since the previous call to ConfigChanged, and clears the
// flag. A description given to NewNormalizer is the starting Config and does
// not count as a change. FLV sends a new sequence header when it is true;
// MKV, which cannot change CodecPrivate mid-stream, logs it.
func (n *Normalizer) ConfigChanged() bool {
	c := n.changed
	n.changed = false
	return c
}
