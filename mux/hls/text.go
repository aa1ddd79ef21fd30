package hls

import (
	"fmt"
	"time"

	"github.com/moq-export/moq-export/internal/format/webvtt"
	"github.com/moq-export/moq-export/mux"
)

// A text rendition (WebVTT subtitles) is a subtitle media playlist of
// WebVTT segments (s0.m3u8, s0-00001.vtt, ...), cut at the leading
// rendition's boundaries so segment n covers the same time as the media's:
// a segment holds the cues that start in it and those that last into it
// from an earlier one (repeated, as HLS asks), and every boundary gets one,
// empty or not, so the playlist covers the whole timeline as HLS asks.
// Cue times are on the package timeline; X-TIMESTAMP-MAP maps its 0 to
// the media timestamp where the leading video's presentation starts (see
// mpegts).

// textCue is one cue of the segment being built, on the package timeline.
type textCue struct {
	webvtt.Cue
}

// isText reports whether r is a subtitle rendition.
func (r *rendition) isText() bool { return r.t.Kind == mux.Text }

// writeText adds one cue of a text rendition to its segment.
func (w *Writer) writeText(r *rendition, f mux.Frame) error {
	rel := f.Timestamp - w.origin
	c := webvtt.ParseBlock(f.Payload)
	c.Start, c.End = rel, rel+max(f.Duration, 0)
	r.cues = append(r.cues, textCue{c})
	r.textFrames++
	r.textBytes += int64(len(f.Payload))
	return nil
}

// cutText ends the segment of every text rendition at the leader's new
// boundary at (package µs), disc when the timeline breaks there.
func (w *Writer) cutText(at int64, disc bool) error {
	for _, r := range w.rends {
		if !r.isText() || r.removed {
			continue
		}
		if err := w.finishText(r, at, disc); err != nil {
			return err
		}
	}
	return nil
}

// finishText stores the text rendition's segment from its start to end,
// the cues that start before end, and its playlist; the next segment
// starts at end, after a break of the timeline when disc.
func (w *Writer) finishText(r *rendition, end int64, disc bool) error {
	start := r.textStart
	if end <= start {
		return nil
	}
	// hls.js maps a cue's time through X-TIMESTAMP-MAP as it maps the
	// media's decode times (each rendition's first decode time at its
	// first presentation time, the package's time 0 for the leader): cue
	// times are package times, so MPEGTS 0 is LOCAL 0.
	b := []byte("WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:0,LOCAL:00:00:00.000\n\n")
	keep := r.cues[:0]
	for _, c := range r.cues {
		if c.Start >= end {
			keep = append(keep, c)
			continue
		}
		b = c.AppendCue(b, 0)
		if c.End > end && !disc {
			// A cue that lasts past the boundary is repeated in the next
			// segment, unchanged (RFC 8216 3.5): a player that joins or
			// seeks there shows it; players that read both keep one.
			keep = append(keep, c)
		}
	}
	clear(r.cues[len(keep):])
	r.cues = keep
	seg := segmentState{
		Num: r.nextNum(), Start: start, Dur: end - start, Bytes: int64(len(b)), Disc: r.textDisc,
		Date: w.runWall.Add(time.Duration(start-w.runStart) * time.Microsecond).UTC(),
	}
	seg.URI = fmt.Sprintf("%s-%05d.vtt", r.rs.ID, seg.Num)
	if err := w.writeNew(seg.URI, b); err != nil {
		return w.fail(fmt.Errorf("hls: writing %s: %w", seg.URI, err))
	}
	r.rs.Segments = append(r.rs.Segments, seg)
	r.textStart, r.textDisc = end, disc
	w.segments++
	return w.publish(r, false)
}

// mediaEnd is where the media of this run ends on the package timeline:
// the end of the newest media segment.
func (w *Writer) mediaEnd() int64 {
	end := int64(0)
	for _, r := range w.rends {
		if r.isText() {
			continue
		}
		if n := len(r.rs.Segments); n > 0 {
			end = max(end, r.rs.Segments[n-1].end())
		}
	}
	return end
}
