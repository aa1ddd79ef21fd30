package export

import (
	"errors"

	"github.com/moq-export/moq-export/internal/webvtt"
	"github.com/moq-export/moq-export/mux"
)

// errNoCue is a text frame whose payload holds no cue.
var errNoCue = errors.New("WebVTT segment without a cue")

// pushCues hands the cues of one frame of a WebVTT track to the jitter
// buffer, one mux.Frame each: the frame is a self-contained WEBVTT segment
// whose first cue starts at the frame's timestamp; the others keep their
// offset from it, and each lasts from its start to its end. A payload that
// does not parse is counted in DroppedMalformed, with one warning per
// track. The track's Received counts its cues.
func (e *Export) pushCues(ts *trackState, f mux.Frame) error {
	cues, err := webvtt.Parse(f.Payload)
	if err == nil && len(cues) == 0 {
		err = errNoCue
	}
	if err != nil {
		ts.acct.received(f.Timestamp)
		ts.acct.stats.DroppedMalformed++
		if !ts.warnedMalformed {
			ts.warnedMalformed = true
			e.log.Warn("text frame dropped: its payload is not a WebVTT segment with a cue (further ones of this track are counted, not logged)",
				"track", ts.track.Name, "err", err)
		}
		return nil
	}
	first := cues[0].Start
	for _, c := range cues {
		// Its own payload: the jitter buffer keeps it until it leaves.
		cf := mux.Frame{TrackID: f.TrackID, Timestamp: f.Timestamp + c.Start - first, Duration: c.End - c.Start, Keyframe: true, Payload: c.AppendBlock(nil)}
		ts.acct.received(cf.Timestamp)
		before := e.jit.Stats().Dropped
		err := e.jit.Push(cf)
		ts.acct.stats.DroppedLate += e.jit.Stats().Dropped - before
		if err != nil {
			return err
		}
	}
	return nil
}

// beforeMedia reports whether text frame f comes before the first media
// frame written: a cue that leaves before any video or audio (a relay's
// cached cue, older than the first keyframe) would start the file early.
// It is dropped, counted late.
func (e *Export) beforeMedia(f mux.Frame) bool {
	if e.haveFirst {
		return f.Timestamp < e.firstTS
	}
	for _, ts := range e.all {
		if ts.track.Kind != mux.Text && !ts.ended {
			return true
		}
	}
	return false
}
