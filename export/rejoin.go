package export

import (
	"context"
	"time"

	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
)

// Aligning the audio with the video after a restart of the publisher.
//
// A restarted publisher (or a resume on a new publisher session) starts a
// new timeline on every track (model.Event.Restart). Its video comes back
// at the keyframe of the group it is in, its audio at its newest frame, up
// to a GOP later. As at a live join (the start gate), the audio is
// backfilled to the video's keyframe before it is read, so the recording
// picks up with sound where the picture does. Meanwhile the jitter buffer
// waits for it (filling, as a late track's fill), so nothing of it is late.

// rejoinWindow is how far apart, in media time and in wall time, the
// video's first keyframe of a new timeline and an audio track's first
// frame of one may be and still belong to the same restart (the jitter
// buffer's rewind window).
const rejoinWindow = 10 * time.Second

// restartKey is the first keyframe of a video track's new timeline.
type restartKey struct {
	ts int64
	at time.Time
	ok bool
}

// discontinuity handles a discontinuity of ts: after one, a video track's
// next frame (its keyframe) becomes the restart key; an audio track that
// starts a new timeline (restart) is not read on until its backfill to
// that key ends. A video track may see its publisher's restart as a rewind
// of the same timeline rather than a new one (a restarted publisher whose
// groups happen to go on with the same numbers and times): any of its
// discontinuities counts. It reports whether to stop reading ts.
func (e *Export) discontinuity(ts *trackState, restart bool) bool {
	if !e.haveFirst || ts.removed {
		return false // nothing written yet: the start gate aligns the tracks
	}
	switch ts.track.Kind {
	case mux.Video:
		ts.awaitKey = true
	case mux.Audio:
		if !restart || !e.hasVideo() {
			return false
		}
		e.startRejoin(ts)
		return true
	}
	return false
}

// hasVideo reports whether a video track is being exported.
func (e *Export) hasVideo() bool {
	for _, o := range e.all {
		if o.track.Kind == mux.Video && !o.ended && !o.removed {
			return true
		}
	}
	return false
}

// videoRestartKey notes the first frame of a video track's new timeline
// and hands it to the audio tracks waiting for one.
func (e *Export) videoRestartKey(ts *trackState, f model.Frame) {
	ts.awaitKey = false
	e.restartKey = restartKey{ts: f.Timestamp, at: e.opts.Now(), ok: true}
	for i := range e.fills {
		e.offerKey(&e.fills[i])
	}
}

// offerKey gives fill the restart key when it belongs to the fill's
// restart: near in wall time and not far before the audio's first frame.
func (e *Export) offerKey(f *lateFill) {
	k := e.restartKey
	if f.key == nil || f.keyed || !k.ok || e.opts.Now().Sub(k.at) > rejoinWindow {
		return
	}
	if first, ok := f.ts.consumer.Track().OldestTimestamp(); ok && first-k.ts > rejoinWindow.Microseconds() {
		return // an older restart's key
	}
	f.keyed = true
	f.key <- k.ts
}

// startRejoin backfills audio track ts, which starts a new timeline, back
// to the video's first keyframe of it, in the background, before ts is
// read on. The wait for the key and the backfill take at most what the
// start gate waits (files: MaxDelay); after that ts is read from where its
// subscription started.
func (e *Export) startRejoin(ts *trackState) {
	t := ts.consumer.Track()
	ctx, cancel := context.WithTimeout(e.ctx, e.startWait())
	key := make(chan int64, 1)
	ts.filling = true
	ts.aligning.Store(true)
	ts.filled.Store(false)
	e.fills = append(e.fills, lateFill{ts: ts, cancel: cancel, key: key})
	e.offerKey(&e.fills[len(e.fills)-1])
	name := ts.track.Name
	go func() {
		select {
		case k := <-key:
			if err := t.Backfill(ctx, k); err != nil {
				e.log.Debug("backfill after a restart failed; the track goes on at its first live group", "track", name, "err", err)
			}
		case <-ctx.Done():
			e.log.Debug("no video keyframe after the restart to align with; the track goes on at its first live group", "track", name)
		}
		ts.filled.Store(true)
		e.ready.Wake()
	}()
}
