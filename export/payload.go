package export

import (
	"errors"

	"github.com/moq-export/moq-export/internal/codec/codecconf"
	"github.com/moq-export/moq-export/internal/codec/h26x"
	"github.com/moq-export/moq-export/mux"
)

// errADTS is a frame of a raw-AAC track that holds an ADTS frame.
var errADTS = errors.New("AAC frame with an ADTS header where raw AAC is expected")

// payloadCheck returns the check of a track's frame payloads against what
// its codec says (nil: none): an H.264/H.265 access unit's NAL unit
// lengths must add up (with the length size its decoder configuration
// gives), or it must be Annex B; an AAC frame must be raw, not ADTS. A
// frame that fails is never handed to the muxer, which would write a
// frame no decoder reads.
func payloadCheck(t mux.Track) func([]byte) error {
	family := mux.CodecFamily(t.Codec)
	if c, ok := h26x.CodecOf(family); ok {
		lengthSize := 4
		if len(t.Description) > 0 {
			if _, n, err := h26x.ParseDecoderConfig(c, t.Description); err == nil {
				lengthSize = n
			}
		}
		return func(p []byte) error { return h26x.CheckAccessUnit(c, p, lengthSize) }
	}
	if family == "aac" {
		return func(p []byte) error {
			if codecconf.IsADTS(p) {
				return errADTS
			}
			return nil
		}
	}
	return nil
}

// checkPayload reports whether frame f of track ts may go on: a payload
// that is not what the track's codec says is dropped and counted
// (TrackStats.DroppedMalformed), with one warning per track; on video,
// the frames after it up to the next keyframe go too (they refer to it).
func (e *Export) checkPayload(ts *trackState, f mux.Frame) bool {
	if ts.check == nil || len(f.Payload) == 0 {
		return true
	}
	err := ts.check(f.Payload)
	if err == nil && !(ts.skipToKey && !f.Keyframe) {
		ts.skipToKey = false
		return true
	}
	ts.acct.stats.DroppedMalformed++
	if err != nil {
		ts.skipToKey = ts.track.Kind == mux.Video
		if !ts.warnedMalformed {
			ts.warnedMalformed = true
			e.log.Warn("frame dropped: its payload is not what its codec says (further ones of this track are counted, not logged)",
				"track", ts.track.Name, "codec", ts.track.Codec, "err", err)
		}
	}
	return false
}
