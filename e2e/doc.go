// Package e2e holds the end-to-end matrix test: our publisher (package
// demo's broadcast served by package subscribe) and our recorder (package
// record) over real loopback QUIC, across every dimension a recording
// crosses: wire protocol version, payload packaging (legacy, loc, cmaf),
// container (FLV, MKV, MPEG-TS, MP4), role (the recorder dials the
// publisher, or accepts the publisher's connection), path (live join,
// FETCH backfill, resume after a network outage, hang's markers) and
// transport (raw QUIC, WebTransport). Every file is decoded by ffmpeg and
// compared packet by packet with what was published.
//
// The dimensions are tables in matrix_test.go: a new wire version, a
// packaging, a container or a path is one row there (and, for a path, one
// case in rig_test.go's record). The package holds tests only.
package e2e
