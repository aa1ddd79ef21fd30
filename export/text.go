package export

import (
	"errors"
	"strings"
	"time"

	"github.com/moq-export/moq-export/catalog"

	"github.com/moq-export/moq-export/internal/format/webvtt"
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

// plainTextLast is how long a UTF-8 cue shows when nothing ends it: the
// track ended or its timeline broke, or the recording stopped, before the
// next cue came.
const plainTextLast = 2 * time.Second

// plainText reports whether r is a "utf8" text rendition: plain text, each
// cue shown until the next one (or an empty payload, hang's marker) clears
// it.
func plainText(r catalog.Rendition) bool {
	return r.Text != nil && strings.EqualFold(r.Text.Format, catalog.TextUTF8)
}

// pushPlainCue takes one frame of a UTF-8 text track: the cue before it now
// ends, at this frame's time, and goes to the jitter buffer; this one, its
// text as a WebVTT cue's (escaped, in the block layout), waits for the cue
// or marker that ends it. Waiting makes the cue late by the time to the
// next one, which the jitter buffer passes on for text (counted late).
func (e *Export) pushPlainCue(ts *trackState, f mux.Frame) error {
	if err := e.releasePlain(ts, f.Timestamp); err != nil {
		return err
	}
	text := webvtt.FromPlain(string(f.Payload))
	if text == "" {
		return nil // blank: it clears, as an empty payload does
	}
	ts.held = &mux.Frame{TrackID: f.TrackID, Timestamp: f.Timestamp, Keyframe: true, Payload: webvtt.Cue{Text: text}.AppendBlock(nil)}
	return nil
}

// releasePlain hands the held UTF-8 cue of ts, if any, to the jitter
// buffer, ending at end (µs; 0 or not after its start: plainTextLast
// after it).
func (e *Export) releasePlain(ts *trackState, end int64) error {
	h := ts.held
	if h == nil {
		return nil
	}
	ts.held = nil
	if end <= h.Timestamp {
		end = h.Timestamp + plainTextLast.Microseconds()
	}
	h.Duration = end - h.Timestamp
	ts.acct.received(h.Timestamp)
	before := e.jit.Stats().Dropped
	err := e.jit.Push(*h)
	ts.acct.stats.DroppedLate += e.jit.Stats().Dropped - before
	return err
}
