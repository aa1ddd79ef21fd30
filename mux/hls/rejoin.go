package hls

import (
	"math"
	"time"

	"github.com/moq-export/moq-export/mux"
)

// A recorder restarted onto a package it was recording (a crash, a
// deploy, a recording stopped and started again) joins the same live
// broadcast at its newest keyframe, which the package may hold already:
// written again after the package's end, up to a group of pictures
// played twice, at the wrong time. The package state keeps the
// broadcast's time and clock of the package's timeline (sourceState), so
// a continued run that joined the same broadcast again is put on that
// timeline, at the broadcast's own times, and drops what the package
// holds. A publisher restarted in between starts its times again, on
// another clock: that run goes after the package's end as before.

// How far the broadcast's clock, as a continued run's first frame shows
// it, may be from the package's (sourceState.Wall) for the run to be on
// the package's timeline: a frame cannot come before its time, less the
// delays' spread (sameEarly); the first frame of a live join is its
// group's keyframe, up to a group of pictures old when it comes, plus
// the join's delays (sameLate).
const (
	sameEarly = int64(time.Second / time.Microsecond)
	sameLate  = int64(2 * time.Second / time.Microsecond)
)

// wallOffset is the wall clock of a frame of broadcast time ts, less ts
// (µs): the clock Options.Clock gives it, else now (its arrival).
func (w *Writer) wallOffset(ts int64) int64 {
	var wall time.Time
	if w.opts.Clock != nil {
		wall = w.opts.Clock(ts)
	} else {
		wall = w.opts.Now()
	}
	return wall.UnixMicro() - ts
}

// wallEvery is how often noteSource reads the wall clock: every keyframe
// of the leading rendition and every wallEvery-th of its frames (a few
// times a second), not every frame, which costs a clock read a frame.
const wallEvery = 8

// noteSource keeps what the state says of the broadcast (sourceState)
// from a frame of the leading rendition: the least wall offset (read at
// its keyframes and every wallEvery-th frame), its newest keyframe and the
// longest interval between two of them.
func (w *Writer) noteSource(f mux.Frame, key bool) {
	w.srcTick++
	if key || w.srcTick%wallEvery == 0 {
		if o := w.wallOffset(f.Timestamp); o < w.src.Wall {
			w.src.Wall = o
		}
	}
	if f.Discontinuity {
		w.srcKeyed = false // no interval across a break
	}
	if !key {
		return
	}
	if w.srcKeyed {
		w.src.KeyGap = max(w.src.KeyGap, f.Timestamp-w.src.Key)
	}
	w.src.Key, w.srcKeyed = f.Timestamp, true
}

// sameTimeline reports whether a continued run whose first frame is f
// joined the broadcast the package was recorded from, on the same
// timeline:
//   - the package says where its timeline is on the broadcast's
//     (a state an older version wrote does not: no);
//   - the broadcast's clock agrees with the wall clock as it did: f's
//     wall offset is at most sameEarly below the least the package saw,
//     and at most its longest group of pictures plus sameLate above it
//     (a restarted publisher's times start again: they are as far off
//     as the time between the two publishers' starts);
//   - f is not further inside the package than a live join's first
//     frame can be (the longest group of pictures plus sameLate);
//   - and when f falls before the package's end (the run would drop
//     frames) and the leader is video, f is where a live join at the
//     keyframe the package holds last starts (atKey): a live join of the
//     same broadcast before its next keyframe starts there.
func (w *Writer) sameTimeline(f mux.Frame) bool {
	s := w.st.Source
	if w.firstRun || s == nil {
		return false
	}
	gop := s.KeyGap
	if gop <= 0 {
		for _, rs := range w.st.Renditions {
			for _, seg := range rs.Segments {
				gop = max(gop, seg.Dur)
			}
		}
	}
	d := w.wallOffset(f.Timestamp) - s.Wall
	if d < -sameEarly || d > gop+sameLate {
		w.log.Info("hls: the broadcast's clock is not the package's: its timeline starts again", "playlist", w.opts.Playlist,
			"clock_step", time.Duration(d)*time.Microsecond)
		return false
	}
	lead := w.leader()
	if lead == nil {
		return false
	}
	rel := f.Timestamp - s.Offset
	if rel < w.resumeEnd-gop-sameLate {
		w.log.Info("hls: the first frame falls far inside the package: its timeline starts again", "playlist", w.opts.Playlist)
		return false
	}
	if rel < w.resumeEnd-lead.frameDur()/2 && lead.t.Kind == mux.Video && !w.atKey(f, s.Key) {
		w.log.Info("hls: the first frame falls inside the package but not at its last keyframe: its timeline starts again", "playlist", w.opts.Playlist)
		return false
	}
	return true
}

// keyLead bounds how long before the keyframe a live join starts at its
// first frame of another rendition may be: the audio frame that the
// keyframe's time falls in (the engine starts a live join's audio there).
const keyLead = int64(200 * time.Millisecond / time.Microsecond)

// atKey reports whether f, a run's first frame, is where a live join at
// the keyframe of time key starts: that keyframe (the leader's), or
// another rendition's frame at most keyLead before it.
func (w *Writer) atKey(f mux.Frame, key int64) bool {
	if r, ok := w.rendition(f.TrackID); ok && r == w.leader() {
		return f.Timestamp == key
	}
	return f.Timestamp <= key && key-f.Timestamp <= keyLead
}

// rejoin puts the run on the package's timeline (sameTimeline): the
// broadcast's times less the package's offset, so frames keep their
// spacing across the break (the frame grid, which ffmpeg guesses a frame
// rate from), and EXT-X-PROGRAM-DATE-TIME goes on as the package's did.
// Every rendition drops its frames before the end of what it holds, and
// before the leader's first keyframe after its own end (skip): a video
// run can only begin at a keyframe, so when the package ends inside a
// group of pictures, the rest of that group (up to a group of pictures)
// is not in the package, rather than the group written twice.
func (w *Writer) rejoin() {
	s := w.st.Source
	w.rejoined = true
	w.origin, w.joinAt = s.Offset, math.MinInt64
	w.src.KeyGap = s.KeyGap
	var last segmentState
	for _, r := range w.rends {
		r.joining, r.resumeAt = true, math.MinInt64
		if n := len(r.rs.Segments); n > 0 {
			r.resumeAt = r.rs.Segments[n-1].end() - r.frameDur()/2
		}
	}
	for _, rs := range w.st.Renditions {
		if n := len(rs.Segments); n > 0 && rs.Segments[n-1].end() >= last.end() {
			last = rs.Segments[n-1]
		}
	}
	w.runWall = last.Date.Add(time.Duration(w.runStart-last.Start) * time.Microsecond)
	if w.opts.Clock != nil {
		w.runWall = w.opts.Clock(w.runStart + w.origin)
	}
}

// skip reports whether a frame of r at rel (package µs) is dropped while
// r joins a package's timeline again: it is before what r's earlier
// media ended with, or a follower's before the leader's first kept frame
// (a follower waits for the leader, as at a live join, so the run begins
// together), or not a keyframe. The first frame kept ends r's join.
func (w *Writer) skip(r *rendition, rel int64, key, lead bool) bool {
	if !lead {
		if l := w.leader(); l != nil && l.joining {
			return true
		}
	}
	from := r.resumeAt
	if !lead {
		from = max(from, w.joinAt)
	}
	if !key || rel < from {
		return true
	}
	r.joining = false
	r.lastPTS = rel
	if lead {
		w.joinAt, w.boundary = rel, rel
		for _, o := range w.rends {
			if o.isText() {
				o.textStart = rel // the subtitles' segments begin with the media's
			}
		}
		w.log.Info("hls: the continued run joins the package's timeline", "playlist", w.opts.Playlist,
			"at", time.Duration(rel)*time.Microsecond, "dropped", w.dropped)
	}
	return false
}

// joined reports whether the run has begun writing media: always, unless
// it rejoined a package's timeline and its leader still drops what the
// package holds (then the subtitles have no segment to write either).
func (w *Writer) joined() bool { return !w.rejoined || w.joinAt != math.MinInt64 }
