// Package faults holds the end-to-end tests of the moq-export command under
// faults: network outages and blackholes, publishers killed and restarted
// (re-executed test binaries, cmdtest.PublisherMain), recorders killed, a
// full disk, a relay's GOAWAY, a rendition that stalls alone. Each checks
// what the command wrote with ffmpeg and ffprobe against the loss its fault
// is allowed.
package faults
