// Package wire encodes and decodes the moq-lite messages byte for byte
// (varints, length-prefixed control messages, typed subscribe responses,
// group headers and frames, the legacy SETUP exchange), with no I/O beyond
// reading one message from a stream. Every decoder bounds what it
// allocates by the bytes it was given and the limits below, so hostile
// length fields cannot exhaust memory.
//
// It owns every difference between moq-lite versions. versions.go is
// moq-lite's version table: each Version names its ALPN and wire code and
// says, field by field, what its wire carries (a Setup stream,
// ANNOUNCE_OK, TRACK_INFO, FETCH, frame timestamps, ...); Versions lists
// them in preference order. It holds moq-lite's versions only: the
// facade's list of every version (both families') is built from this
// table and moq-transport's (internal/moq/ietf). Messages whose layout differs
// between versions have AppendFor/DecodeFor methods keyed by a *Version
// (Append/Decode are the moq-lite-05 layout); session code asks the
// capability fields, never version numbers. Adding a version is one table
// entry plus the layouts it changes; the module's testdata/reference-layouts.jsonl holds
// the bytes the reference (@moq/net 0.3.4) writes for every message of
// every version, which the tests compare both ways.
//
// Hand-written because no Go library implements moq-lite; its QUIC
// varints come from internal/varint, shared with moq-transport, the
// payload packagings and the archive.
package wire
