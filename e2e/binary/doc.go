// Package binary holds the end-to-end tests of the moq-export command as a
// user runs it: formats, stdout, signals, terminals, flags and usage
// errors, selections, segments and sizes, late renditions, the built-in
// demo in every packaging, a MediaMTX-like server and refused tokens. Each
// test binary builds cmd/moq-export once (cmdtest.Main) and checks every
// file the command writes with ffmpeg, ffprobe and mkvmerge. The command
// under faults is in e2e/binary/faults, the chaos soak in e2e/binary/soak,
// the command as a service (--listen, --http, HLS packages) in
// e2e/binary/service; each package has its own -timeout and they run side
// by side. The matrix of protocol x packaging x container over the library
// is in package e2e.
package binary
