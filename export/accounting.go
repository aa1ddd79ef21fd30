package export

import (
	"time"

	"github.com/moq-export/moq-export/mux"
)

// TrackStats accounts for the frames of one track: every frame received is
// written, dropped late, dropped by the muxer, or still buffered; what never
// arrived shows as gaps, and what arrived with no keyframe before it as
// DroppedNoKeyframe.
type TrackStats struct {
	ID   int
	Name string
	Kind mux.Kind
	// Received counts the frames read from the broadcast.
	Received int64
	// Written counts the frames the muxer took and wrote.
	Written int64
	// DroppedLate counts frames the jitter buffer dropped because they
	// came after later ones had left (and, on video, what depended on
	// them up to the next keyframe).
	DroppedLate int64
	// DroppedMalformed counts frames whose payload is not what the
	// track's codec says (H.264/H.265 NAL unit lengths that do not add
	// up, an ADTS header on raw AAC), never handed to the muxer, and on
	// video the frames after one up to the next keyframe.
	DroppedMalformed int64
	// DroppedByMuxer counts frames the muxer did not write (mux.Stats
	// Dropped: frames before a track's configuration arrived, empty
	// payloads, ...).
	DroppedByMuxer int64
	// Gaps counts the breaks of the track's timeline (a reconnect that
	// could not fetch what was missed, a publisher restart, an empty
	// group), and LostToGaps the media time they skipped: how far the
	// first frame after each break lies past the newest one before it.
	Gaps       int64
	LostToGaps time.Duration
	// DroppedNoKeyframe counts frames the track's reader dropped before
	// they were received (not in Received): no keyframe led to them (a
	// group that opens with a delta frame, read first or after a gap or
	// a group cut short; model.Consumer.Dropped). A decoder could not
	// have shown them.
	DroppedNoKeyframe int64
}

// TrackStats returns the accounting of every track the export took,
// in the order they were added (ended tracks included). It is safe to call
// from any goroutine while the export runs.
func (e *Export) TrackStats() []TrackStats {
	e.statsMu.Lock()
	defer e.statsMu.Unlock()
	return append([]TrackStats(nil), e.trackStats...)
}

// accounting is the per-track bookkeeping of the reading goroutine.
type accounting struct {
	stats      TrackStats
	newest     int64 // newest timestamp received
	haveNewest bool
	gapOpen    bool // a discontinuity came; the next frame measures it
}

// received counts a frame read from the track (at timestamp ts).
func (a *accounting) received(ts int64) {
	a.stats.Received++
	if a.gapOpen {
		a.gapOpen = false
		if a.haveNewest && ts > a.newest {
			a.stats.LostToGaps += time.Duration(ts-a.newest) * time.Microsecond
		}
	}
	if !a.haveNewest || ts > a.newest {
		a.newest, a.haveNewest = ts, true
	}
}

// gap counts a discontinuity of the track.
func (a *accounting) gap() {
	a.stats.Gaps++
	a.gapOpen = true
}

// pushFrame pushes f into the jitter buffer, counting what it drops.
func (e *Export) pushFrame(ts *trackState, f mux.Frame) error {
	ts.acct.received(f.Timestamp)
	if !e.checkPayload(ts, f) {
		return nil
	}
	before := e.jit.Stats().Dropped
	err := e.jit.Push(f)
	ts.acct.stats.DroppedLate += e.jit.Stats().Dropped - before
	return err
}

// writeFrame hands f to the muxer, counting what it writes and drops; it
// reports whether the muxer wrote f.
func (e *Export) writeFrame(f mux.Frame) (bool, error) {
	before := e.m.Stats().Dropped
	err := e.m.WriteFrame(f)
	written := err == nil && e.m.Stats().Dropped == before
	if ts := e.track(f.TrackID); ts != nil && err == nil {
		if d := e.m.Stats().Dropped - before; d > 0 {
			ts.acct.stats.DroppedByMuxer += d
		} else {
			ts.acct.stats.Written++
		}
	}
	return written, err
}

// syncTrackStats publishes the per-track counters. Called with statsMu held.
func (e *Export) syncTrackStats() {
	e.trackStats = e.trackStats[:0]
	for _, ts := range e.all {
		s := ts.acct.stats
		s.ID, s.Name, s.Kind = ts.track.ID, ts.track.Name, ts.track.Kind
		s.DroppedNoKeyframe = int64(ts.consumer.Dropped())
		e.trackStats = append(e.trackStats, s)
	}
}

// warnUnrecorded warns, when the export ends having written frames, of each
// media track of which it wrote none: a subscription refused, a rendition
// whose frames never came or came too late for the file's header. The
// muxers leave such a track out of the file, which stays playable; its
// TrackStats show Written 0.
func (e *Export) warnUnrecorded() {
	if e.m.Stats().Frames == 0 {
		return
	}
	for _, ts := range e.all {
		s := ts.acct.stats
		if ts.track.Kind == mux.Text || s.Written > 0 {
			continue
		}
		e.log.Warn("track not recorded: none of its frames was written", "track", ts.track.Name, "kind", ts.track.Kind.String(), "received", s.Received)
	}
}
