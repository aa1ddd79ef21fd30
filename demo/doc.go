// Package demo publishes the sample media embedded in the module (see
// internal/testmedia) as a live hang broadcast into package
// model: a catalog.json track and one legacy-container track per rendition,
// looping with increasing timestamps, paced in real time or as fast as the
// consumer takes it.
//
// It is the source of the built-in demo broadcast of cmd/moq-export (served
// over loopback QUIC by package subscribe) and of tests that need a live
// broadcast without a network.
package demo
