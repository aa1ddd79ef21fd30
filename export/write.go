package export

import (
	"fmt"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/jitter"
	"github.com/moq-export/moq-export/mux"
)

func muxKind(k catalog.Kind) mux.Kind {
	switch k {
	case catalog.KindVideo:
		return mux.Video
	case catalog.KindText:
		return mux.Text
	}
	return mux.Audio
}

// maxHeldBack bounds how much media beyond MaxDuration a muxer may drop
// before its first written frame (audio held for a video keyframe that a
// loaded relay delivers late) until the export gives up on it.
const maxHeldBack = 10 * time.Second

// write hands one released item to the muxer. MaxDuration and the media
// time count from the first frame the muxer wrote: frames it drops (audio
// a TS or FLV file holds back until the first video keyframe) are not in
// the file, and counting from them ended a recording whose video came
// late with nothing written.
//
// A muxer that writes nothing for long (a TS file whose video never comes
// drops 10 s of audio first) is still bounded: the export ends once
// maxHeldBack more than MaxDuration has been handed to it.
func (e *Export) write(it jitter.Item) error {
	f := it.Frame
	if it.End {
		// hang's end marker of the frame written last on its track.
		if fe, ok := e.m.(mux.FrameEnder); ok {
			if err := fe.EndFrame(f.TrackID, f.Timestamp); err != nil {
				return fmt.Errorf("export: %w", err)
			}
		}
		return nil
	}
	if ts := e.track(f.TrackID); ts != nil && ts.track.Kind == mux.Text && e.beforeMedia(f) {
		ts.acct.stats.DroppedLate++
		return nil
	}
	if !e.haveHanded {
		e.haveHanded, e.firstHanded = true, f.Timestamp
	}
	if max := e.opts.MaxDuration.Microseconds(); max > 0 &&
		(e.haveFirst && f.Timestamp-e.firstTS >= max || f.Timestamp-e.firstHanded >= max+maxHeldBack.Microseconds()) {
		e.finished, e.timeUp = true, true
		return nil
	}
	if f.Discontinuity {
		e.statsMu.Lock()
		e.stats.Discontinuities++
		e.statsMu.Unlock()
	}
	if ts := e.track(f.TrackID); ts != nil && f.Timestamp > ts.handed.Load() {
		ts.handed.Store(f.Timestamp)
	}
	written, err := e.writeFrame(f)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if !written {
		return nil
	}
	if !e.haveFirst {
		e.haveFirst, e.firstTS = true, f.Timestamp
	}
	e.newest = max(e.newest, f.Timestamp)
	if d := f.Timestamp - e.firstTS; d > e.media.Load() {
		e.media.Store(d)
	}
	return nil
}
