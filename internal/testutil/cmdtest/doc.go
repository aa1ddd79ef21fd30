// Package cmdtest runs the moq-export command as its end-to-end tests do:
// Main builds cmd/moq-export once per test binary (one build at a time on
// the machine) and re-executes the test binary as a publisher process when
// asked; the helpers run the command, start relays, listeners, publishers
// and recorders, and read what it wrote with ffprobe and ffmpeg. The tests
// themselves are in e2e/binary and the packages under it, one job each, so
// that each has its own -timeout and they run beside each other.
package cmdtest
