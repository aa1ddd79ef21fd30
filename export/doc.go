// Package export is the export engine: it reads a broadcast's catalog and
// media tracks from package model, orders their frames with package jitter
// and feeds a mux.Muxer. Run drives one export until it ends; Go does the
// same in the background and calls back at the end.
//
// An export that waits holds no goroutine: Go (and so Run) parks it on its
// ready set (model.ReadySet.Park), and the next event (media, the catalog,
// a backfill ending, the next deadline, ctx ending) continues it in a new
// goroutine. A thousand recordings of paused broadcasts cost their heap,
// not a thousand stacks.
//
// The engine follows the catalog: renditions that appear are added (if the
// container can still take them), those that leave are ended. Its cost
// follows the media that arrives, not the tracks it watches: a track puts
// itself on a model.ReadySet when it receives something and a poll visits
// only those; a poll nothing woke is one atomic load.
//
// Joining live, video starts at its latest keyframe and audio at its newest
// frame. A start gate holds the first tracks unread until each holds a frame
// (at most Delay; MaxDelay where the delay may grow, as for files, so that a
// first group that comes late on a loaded machine is not dropped), backfills the audio that starts after the earliest video
// keyframe back to it (model.Track.Backfill, in the background, at most
// min(Delay, 1 s), or MaxDelay for files; a failure only costs the
// alignment), then reads. Tracks
// a catalog update adds later are read at once, but audio, which joined at
// its newest frame, is first backfilled back to the newest frame written
// (at most 1 s, while the output waits for it), so that a rendition added
// mid-recording is there from its first frames. After a restart of the
// publisher (model.Event.Restart: a new timeline) the same alignment as at
// a live join is made again: the audio, back at its newest frame, is
// backfilled to the first keyframe of the video's new timeline before it
// is read on (at most what the start gate waits; rejoin.go).
//
// With Options.CheckPayloads (package record always sets it), a frame
// whose payload is not what its track's codec says (H.264/H.265
// NAL unit lengths that do not add up and no Annex B either, an ADTS
// header where raw AAC is expected) never reaches the muxer: it is counted
// (TrackStats.DroppedMalformed), warned once per track, and on video the
// frames up to the next keyframe go with it (payload.go; the checks are
// internal/codec/h26x's and internal/codec/codecconf's).
//
// It owns the order of work (catalog, selection, subscriptions, jitter,
// muxer) and the rendition selection rule (Select); the containers,
// segmenting (mux/segment) and the network (package subscribe) are not its.
package export
