package export

import "github.com/moq-export/moq-export/model"

// Test hooks: the tests and benchmarks drive an export step by step, which
// no user of the package needs (Run and Go drive it).

// Poll does whatever work is ready without blocking: it reads the tracks
// that received something, and writes the frames the jitter buffer
// releases. A poll that nothing woke returns at once. Poll never waits:
// the audio backfills of the start gate run in the background. Such a
// caller ends the export with Close.
func (e *Export) Poll() error {
	if e.started && e.ready.Empty() && e.gate == nil && len(e.fills) == 0 && !e.jitterDue() {
		return nil
	}
	return e.poll()
}

// Done reports whether the broadcast ended or MaxDuration was reached.
func (e *Export) Done() bool { return e.finished }

// Close ends an export driven by Poll as Run ends its own: it writes what
// is buffered (unless MaxDuration stopped it) and closes the muxer. Later
// calls return nil.
func (e *Export) Close() error { return e.finish() }

// Linger waits for a consumer to become ready as an export of an unpaced
// broadcast does before it parks (at most LingerFor); it reports whether
// one did.
func (e *Export) Linger() bool { return e.linger() }

// LingerFor bounds Linger.
const LingerFor = model.LingerFor
