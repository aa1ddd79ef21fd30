// Package export is the export engine: it reads a broadcast's catalog and
// media tracks from package model, orders their frames with package jitter
// and feeds a mux.Muxer. One goroutine drives one export (Run), or a caller
// drives it step by step (Poll).
//
// The engine follows the catalog as it changes: renditions that appear are
// added (if the container can still take them), renditions that leave are
// ended. Its cost follows the media that arrives, not the number of tracks
// it watches: tracks put themselves on a model.ReadySet when they receive
// something, and a poll visits only those; a poll that nothing woke returns
// after one atomic load.
//
// Joining a live broadcast, each track starts at its newest group: video at
// its latest keyframe, audio (one frame per group) at its newest frame, so
// audio would begin up to a GOP after video. A start gate holds the first
// tracks of the catalog unread until each holds a frame (or the jitter
// Delay passed); then every audio track that starts after the earliest
// video keyframe K is backfilled to K (model.Track.Backfill: package
// subscribe fetches the older groups the relay still has), in the
// background and bounded by min(Delay, 1 s), and reading begins; no poll
// waits for it. A backfill that fails or times out
// only means the audio starts at its first live frame. Tracks that a
// catalog update adds later are read at once.
package export
