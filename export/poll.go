package export

import (
	"fmt"
	"slices"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
)

// start subscribes to the catalog track.
func (e *Export) start() error {
	if e.started {
		return nil
	}
	w, err := catalog.Watch(e.bc, catalog.WatchOptions{Track: e.opts.CatalogTrack, Ready: e.ready, Logger: e.log})
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	e.started, e.cat = true, w
	return nil
}

// gateDue reports whether the start gate's deadline passed.
func (e *Export) gateDue() bool {
	return e.gate != nil && !e.opts.Now().Before(e.gate.deadline)
}

func (e *Export) jitterDue() bool {
	d, ok := e.jit.Deadline()
	return ok && !e.opts.Now().Before(d)
}

func (e *Export) poll() error {
	e.havePollNow = false // the jitter buffer's clock is read afresh
	if err := e.start(); err != nil {
		return err
	}
	e.scratch = e.ready.Take(e.scratch[:0])
	read := false
	for _, c := range e.scratch {
		ts, ok := e.byCons[c]
		if !ok { // the catalog's (or a track forgotten since: costs nothing)
			if err := e.readCatalog(); err != nil {
				return err
			}
			continue
		}
		if ts.gated {
			e.gateCheck(ts)
			continue
		}
		if ts.filling {
			continue
		}
		read = true
		if err := e.readTrack(ts); err != nil {
			return err
		}
	}
	clear(e.scratch)
	if read {
		// A catalog update the publisher wrote before the frames just
		// read, while they were being read (after this poll took its
		// list), is applied before they leave: a rendition it adds is
		// then in the muxer before the keyframe at which it joins (FLV
		// and MP4 start the next file there), not a GOP later.
		if err := e.readCatalog(); err != nil {
			return err
		}
	}
	if len(e.fills) > 0 {
		if err := e.endLateFills(); err != nil {
			return err
		}
	}
	if g := e.gate; g != nil && !g.backfilling && (g.waiting == 0 || e.gateDue()) {
		e.startBackfills()
	}
	if g := e.gate; g != nil && g.backfilling && (g.pending.Load() == 0 || e.gateDue()) {
		if err := e.openGate(); err != nil {
			return err
		}
	}
	if len(e.leaving) > 0 {
		// Before the frames go out: a track that ended with no frame
		// leaves the muxer before the header (see removeDrained).
		if err := e.removeDrained(); err != nil {
			return err
		}
	}
	for !e.finished {
		it, ok := e.jit.Pop()
		if !ok {
			break
		}
		if err := e.write(it); err != nil {
			return err
		}
	}
	if len(e.leaving) > 0 {
		if err := e.removeDrained(); err != nil {
			return err
		}
	}
	e.syncStats()
	if e.catEnded && e.live == 0 {
		e.finished = true
	}
	return nil
}

// removeDrained removes from the muxer, and forgets, the tracks that ended
// once the jitter buffer holds none of their frames. A track that left the
// catalog goes at once; one that ended by itself stays while the muxer has
// written nothing (it may still hold the track's first frames, as the MKV
// header and the TS keyframe waits do, and removing would drop them) and
// when the whole broadcast ended (Close finalizes it with the others).
// One that ended with no frame at all goes at once: it holds nothing, and
// a track in the file's header that carries nothing leaves the file
// undecodable (and MPEG-TS would drop the audio waiting for its video).
func (e *Export) removeDrained() error {
	ending := e.catEnded && e.live == 0
	started := !ending && e.m.Stats().Frames > 0
	keep := e.leaving[:0]
	for _, ts := range e.leaving {
		empty := ts.acct.stats.Received == 0 && ts.held == nil
		if e.jit.Holds(ts.track.ID) || !ts.removed && !started && !empty {
			keep = append(keep, ts)
			continue
		}
		if err := e.m.RemoveTrack(ts.track.ID); err != nil {
			return fmt.Errorf("export: removing track %q: %w", ts.track.Name, err)
		}
		if empty && ts.track.Kind != mux.Text {
			e.log.Warn("track not recorded: it ended with no frame", "track", ts.track.Name, "kind", ts.track.Kind.String())
		}
		e.forget(ts)
	}
	clear(e.leaving[len(keep):])
	e.leaving = keep
	return nil
}

// forget drops the engine's state of a track removed from the muxer.
func (e *Export) forget(ts *trackState) {
	delete(e.byCons, ts.consumer)
	e.byID[ts.track.ID] = nil
	if e.tracks[ts.track.Name] == ts {
		delete(e.tracks, ts.track.Name)
	}
	e.statsMu.Lock()
	if e.reading[ts.track.Name] == ts {
		delete(e.reading, ts.track.Name)
	}
	e.statsMu.Unlock()
	e.all = slices.DeleteFunc(e.all, func(o *trackState) bool { return o == ts })
}

// syncStats publishes the counters for Stats, sampling the muxer's. It
// costs the same whatever the number of tracks: the per-track counters are
// summed as tracks are read.
func (e *Export) syncStats() {
	js := e.jit.Stats()
	ms := e.m.Stats()
	e.statsMu.Lock()
	e.stats.Frames, e.stats.Bytes = ms.Frames, ms.Bytes
	e.stats.Late, e.stats.Dropped = js.Late, js.Dropped+ms.Dropped
	e.stats.Tracks, e.stats.Skipped = e.live, int64(e.skipped)
	e.stats.DataTracks = e.dataTracks
	e.syncTrackStats()
	e.statsMu.Unlock()
}

func (e *Export) readTrack(ts *trackState) error {
	if e.evs == nil {
		e.evs = make([]model.Event, 0, eventRun)
	}
	for read := 0; read < maxReadTurn; {
		// A run of frames of one group per lock of the track
		// (model.Consumer.NextFrames); anything else comes alone.
		evs := ts.consumer.NextFrames(e.evs[:0:min(cap(e.evs), maxReadTurn-read)])
		e.noteSkips(ts)
		if len(evs) == 0 {
			return nil
		}
		read += len(evs)
		for i := range evs {
			stop, err := e.takeEvent(ts, &evs[i])
			if stop || err != nil {
				clear(evs)
				return err
			}
		}
		clear(evs)
	}
	// A producer that fills the track faster than it is read (a publisher
	// far ahead, --demo-fast) would keep this loop going past the end of
	// the recording: the output, the duration and ctx are looked at
	// between turns.
	ts.consumer.Again()
	return nil
}

// takeEvent writes one event of ts's consumer; stop says the track is not
// read further in this poll (an end, or a discontinuity that waits to be
// aligned). Only an event that ends a run of NextFrames stops.
func (e *Export) takeEvent(ts *trackState, ev *model.Event) (stop bool, err error) {
	switch ev.Kind {
	case model.EventFrame:
		if ts.removed {
			return false, nil
		}
		if ev.Frame.Marker {
			// hang's markers are no media: one that opens its
			// group came as a discontinuity already; one after
			// video frames ends the frame before it (after audio,
			// it trims the decoded samples, which the containers
			// here cannot say; after a text cue, it clears it,
			// which the cue's own end already says: ignored).
			if !ev.Keyframe && ts.track.Kind == mux.Video {
				e.jit.PushEnd(ts.track.ID, ev.Frame.Timestamp)
			}
			if ts.plain {
				// It clears a UTF-8 cue: that cue ends here.
				if err := e.releasePlain(ts, ev.Frame.Timestamp); err != nil {
					return true, fmt.Errorf("export: %w", err)
				}
			}
			return false, nil
		}
		if ts.awaitKey {
			e.videoRestartKey(ts, ev.Frame)
		}
		f := mux.Frame{TrackID: ts.track.ID, Timestamp: ev.Frame.Timestamp, Keyframe: ev.Keyframe, Payload: ev.Frame.Payload}
		var err error
		switch {
		case ts.plain:
			err = e.pushPlainCue(ts, f)
		case ts.track.Kind == mux.Text:
			err = e.pushCues(ts, f)
		default:
			err = e.pushFrame(ts, f)
		}
		if err != nil {
			return true, fmt.Errorf("export: %w", err)
		}
	case model.EventDiscontinuity:
		if err := e.releasePlain(ts, 0); err != nil {
			return true, fmt.Errorf("export: %w", err)
		}
		ts.acct.gap()
		e.jit.PushDiscontinuity(ts.track.ID)
		if e.discontinuity(ts, ev.Restart) {
			return true, nil // read on once aligned (endLateFills)
		}
	case model.EventEnd:
		if ev.Err != nil {
			e.log.Warn("track ended with an error", "track", ts.track.Name, "err", ev.Err)
		}
		e.endTrack(ts)
		return true, nil
	}
	return false, nil
}

// noteSkips counts the groups ts's consumer gave up on since the last
// look (a group that did not come, or stalled, within the latency while
// newer ones had data; or one dropped unread past model.MaxLag): after
// the track's first frame, each is a gap in the track, measured by the
// next frame, and logged. Uncounted, such a skip was a silent loss: a
// whole GOP of video missing from a file whose summary said "late 0,
// dropped 0".
func (e *Export) noteSkips(ts *trackState) {
	n := ts.consumer.Skipped()
	if n == ts.skipped {
		return
	}
	skipped := n - ts.skipped
	e.skipped += skipped
	ts.skipped = n
	if !ts.acct.haveNewest {
		return // before its first frame: where it starts, no hole
	}
	e.log.Warn("groups skipped: they did not come while newer ones did; a gap in the recording",
		"track", ts.track.Name, "groups", skipped)
	ts.acct.gap()
}

// maxReadTurn bounds the events one poll reads of one track.
const maxReadTurn = 1024

// eventRun bounds the frames readTrack takes of a track per lock of it:
// a GOP of 30 fps video with a keyframe every second or two in a few.
const eventRun = 32

func (e *Export) endTrack(ts *trackState) {
	if ts.ended {
		return
	}
	ts.ended = true
	if ts.gated && !ts.hasFirst {
		ts.hasFirst = true
		e.gate.waiting--
	}
	e.live--
	_ = e.releasePlain(ts, 0) // a jitter error is the muxer's, seen at its next write
	e.jit.EndTrack(ts.track.ID)
	ts.consumer.Close()
	e.leaving = append(e.leaving, ts)
}
