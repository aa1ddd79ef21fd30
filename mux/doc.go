// Package mux defines the contract between the export engine and the container
// writers in mux/flv, mux/mkv and mux/ts.
//
// A [Muxer] receives a track set (codec configuration taken from the hang
// catalog), then frames of all tracks already interleaved in timestamp order by
// the jitter buffer, each marked when its track's timeline broke just before
// it ([Frame].Discontinuity), and finally Close, which finalizes the
// container. Every muxer counts what it wrote and dropped in the same
// [Stats].
//
// What a container can carry is stated without building a muxer: each muxer
// package exports its [Caps] (a pure Supports check that its AddTrack also
// applies, and per-kind limits), which the engine and the CLI use to select
// renditions (export.Select).
//
// The package owns the contract and the small pieces every container needs
// and that no library does for us: the [Track] description, codec families
// and sentinel errors. It owns no container format itself.
package mux
