// Package demo publishes the sample media embedded in the module (see
// internal/samples) as a live hang broadcast into package
// model: a catalog.json track and one track per rendition in the legacy,
// loc or cmaf container (cmaf shaped as `moq import fmp4` publishes
// ffmpeg's fragmented MP4, the init segment and fragments written with
// mediacommon's fmp4), looping with increasing timestamps, paced in real
// time or as fast as the consumer takes it.
//
// It is the source of the built-in demo broadcast of cmd/moq-export (served
// over loopback QUIC by package subscribe) and of tests that need a live
// broadcast without a network. It is public, not internal as the design
// card draws it: a library user records it to try package record without
// a relay (record's Examples and docs/library.md do).
package demo
