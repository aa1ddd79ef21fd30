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
package export
