package export

import "github.com/moq-export/moq-export/model"

// TrackState is where an exported track stands: what its source track
// holds and where the engine's reader of it is (model.TrackState), and
// whether the engine holds it back to align it with the video (an audio
// track backfilled to the video's keyframe after a late join or a
// restart of the publisher). A recorder logs it for a track that receives
// nothing while the others do.
type TrackState struct {
	model.TrackState
	Aligning bool
}

// TrackState returns the state of the rendition the export reads as name,
// or false when it reads none by that name (not exported, or removed). It
// is safe to call from any goroutine while the export runs.
func (e *Export) TrackState(name string) (TrackState, bool) {
	e.statsMu.Lock()
	ts := e.reading[name]
	e.statsMu.Unlock()
	if ts == nil {
		return TrackState{}, false
	}
	return TrackState{TrackState: ts.consumer.Track().State(), Aligning: ts.aligning.Load()}, true
}
