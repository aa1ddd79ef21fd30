package export

import (
	"time"

	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
)

// noTimestamp is trackState.handed before the track's first frame.
const noTimestamp = model.NoTimestamp

// Behind returns how far the export's written position trails live: for
// each media track it reads, the newest frame time its source track
// received on its current timeline (groups held behind a gap fill
// included: they have arrived, they are not written yet) less the newest
// frame time of the track the engine handed to the muxer; the most of
// any track. A recorder in steady state trails by about the jitter
// buffer's wait for the other tracks (tens to hundreds of milliseconds);
// after a long outage, while the missed groups are fetched and written in
// order, by up to the outage: the media a kill would lose on top of the
// last second.
//
// A track with nothing handed to the muxer yet (starting, or held at the
// start gate) counts 0, as does a text track (cues come seconds apart) and
// a track whose source's timeline started after what was written of it
// with earlier times (a publisher restarted with its clock from 0): until
// the muxer gets the new timeline's first frame, its lag is not known.
//
// It reads each track's source once (a lock), not the frames: its cost
// is that of the number of tracks, and the export's polls pay nothing for
// it but a store per frame written. Safe to call from any goroutine while
// the export runs.
func (e *Export) Behind() time.Duration {
	e.statsMu.Lock()
	defer e.statsMu.Unlock()
	var most int64
	for _, ts := range e.reading {
		if ts.track.Kind == mux.Text {
			continue
		}
		handed := ts.handed.Load()
		if handed == noTimestamp {
			continue
		}
		if newest := ts.consumer.Track().NewestTimestamp(); newest != model.NoTimestamp {
			most = max(most, newest-handed)
		}
	}
	return time.Duration(most) * time.Microsecond
}
