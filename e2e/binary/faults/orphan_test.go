package faults

import (
	"context"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
	"github.com/moq-export/moq-export/internal/testutil/proctest"
)

// TestProcessesStarted is the child of the test below: it starts each
// kind of process these tests start that runs until killed (a publisher,
// a recorder without --duration, a listener) and holds.
func TestProcessesStarted(t *testing.T) {
	if !proctest.Inner() {
		t.Skip("run by TestTheProcessesATestStartedEndWithItsKilledTestBinary")
	}
	dir := t.TempDir()
	certFile, keyFile, _ := cmdtest.PublisherCert(t, dir)
	cmdtest.StartPublisher(t, context.Background(), "127.0.0.1:0", certFile, keyFile, time.Now())
	cmdtest.StartRecorder(t, context.Background(), dir, "-o", "demo.mkv")
	cmdtest.StartListener(t, dir)
	proctest.Hold(t)
}

// TestTheProcessesATestStartedEndWithItsKilledTestBinary: a test binary
// killed for running past -timeout runs no Cleanup, and the processes its
// tests started that serve or record until killed outlived it (a
// publisher for 15 minutes after the whole suite's e2e/binary ran past 15
// minutes under load, suite26 r1; a moq-export for 53). Every one ends
// with the test binary that started it.
func TestTheProcessesATestStartedEndWithItsKilledTestBinary(t *testing.T) {
	t.Setenv(cmdtest.BinaryEnv, cmdtest.Binary)
	proctest.KillMidRun(t, "TestProcessesStarted", 3)
}
