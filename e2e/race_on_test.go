//go:build race

package e2e

// raceEnabled: the race detector slows quic-go several times over.
const raceEnabled = true
