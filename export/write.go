package export

import (
	"fmt"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/jitter"
	"github.com/moq-export/moq-export/mux"
)

func muxKind(k catalog.Kind) mux.Kind {
	if k == catalog.KindVideo {
		return mux.Video
	}
	return mux.Audio
}

// write hands one released item to the muxer. MaxDuration and the media
// time count from the first frame the muxer wrote: frames it drops (audio
// a TS or FLV file holds back until the first video keyframe) are not in
// the file, and counting from them ended a recording whose video came
// late with nothing written.
func (e *Export) write(it jitter.Item) error {
	f := it.Frame
	if e.haveFirst && e.opts.MaxDuration > 0 && f.Timestamp-e.firstTS >= e.opts.MaxDuration.Microseconds() {
		e.finished, e.timeUp = true, true
		return nil
	}
	if f.Discontinuity {
		e.statsMu.Lock()
		e.stats.Discontinuities++
		e.statsMu.Unlock()
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
