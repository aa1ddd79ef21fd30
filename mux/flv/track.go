package flv

import (
	"github.com/moq-export/moq-export/mux"
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

	annexB annexBConverter // H.264/H.265 without description; nil otherwise
	dts    dtsEstimator    // H.264/H.265 decode-time estimate; nil otherwise

	prevPTS int64 // µs, output timeline, previous frame
	maxPTS  int64 // µs, largest presentation time written
	hasPTS  bool
	dur     int64 // µs, frame duration estimate
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
		if t.Description == nil {
			tr.annexB, err = newAnnexBConverter(fam)
			if err != nil {
				return nil, err
			}
		}
		tr.dts = newDTSEstimator(t)
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

// prepare returns the payload to write for f, or nil when the frame must
// wait (no keyframe yet, no parameter sets yet). It converts Annex B to
// length-prefixed NAL units and picks up new parameter sets.
func (t *track) prepare(f *mux.Frame) ([]byte, error) {
	payload := f.Payload
	if t.annexB != nil {
		p, cfg, changed, err := t.annexB.Convert(payload)
		if err != nil {
			return nil, err
		}
		if changed {
			t.config, t.sendConfig = cfg, true
		}
		if t.config == nil {
			return nil, nil // parameter sets not seen yet
		}
		payload = p
	}
	if t.needKey {
		if !f.Keyframe {
			return nil, nil
		}
		t.needKey = false
	}
	return payload, nil
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
}
