// Package mux defines the contract between the export engine and the container
// writers in mux/flv, mux/mkv and mux/ts.
//
// A [Muxer] receives a track set (codec configuration taken from the hang
// catalog), then frames of all tracks already interleaved in timestamp order by
// the jitter buffer, explicit discontinuity events, and finally Close, which
// finalizes the container. The package also holds the small pieces every
// container needs and that no library does for us: the [Track] description and
// sentinel errors. It owns no container format itself.
package mux
