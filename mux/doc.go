// Package mux is the contract between the export engine and the container
// writers (mux/flv, mux/mkv, mux/ts, mux/mp4): a [Muxer] gets tracks, then
// frames interleaved in timestamp order (marked when their timeline broke),
// then Close. It owns that contract, the [Track] description, codec
// families, the [Caps] a container states and the [Stats] every muxer
// keeps; no container format.
package mux
