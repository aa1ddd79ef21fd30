// Package binary holds the end-to-end tests of the moq-export command: each
// builds cmd/moq-export once (TestMain) and runs the binary as a user would,
// against the built-in demo, our own publisher (in process or re-executed as
// a separate process for fault tests), the reference publisher and object
// stores, and checks every file it writes with ffmpeg, ffprobe and
// mkvmerge. The package has no code of its own beyond tests; the matrix of
// protocol x packaging x container over the library is in package e2e.
package binary
