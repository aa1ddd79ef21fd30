// Package model is the relay's data model in memory: a Broadcast holds
// Tracks, a Track holds Groups (one keyframe-led run of frames, one QUIC
// stream on the wire) and a Group holds Frames.
//
// Producers (package subscribe, the built-in publisher, tests) create groups
// and write frames; any number of Consumers read a track in group order with
// the latency-bounded skipping of hang's reference reader (a stalled group is
// abandoned for a newer one once the newer one is more than the latency
// ahead, and has been for the latency of wall time: the groups a silence
// held back land at once, in any order, and are not stalled; a rewind of
// the publisher becomes a discontinuity).
//
// Consumers never block and never need a goroutine: a consumer attached to a
// ReadySet puts itself on the set's ready list (once) whenever its track
// changes, like an epoll ready list, so the exporter that watches hundreds of
// tracks visits only those that received something. An idle poll is one
// atomic load. A reader with nothing to do can Park on its ready set
// instead of blocking on Wakeup: the next change calls it back, so an idle
// reader holds no goroutine either. A reader that needs a track's first
// frame before it acts selects on FirstFrame (a Track's, or a Broadcast's
// for a track it may not hold yet), a channel closed at that frame.
package model
