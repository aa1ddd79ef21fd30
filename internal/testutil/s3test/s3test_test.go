package s3test

import (
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/proctest"
)

// TestServerStarted is the child of the test below: it starts a server
// and holds.
func TestServerStarted(t *testing.T) {
	if !proctest.Inner() {
		t.Skip("run by TestAServerEndsWithTheKilledTestBinaryThatStartedIt")
	}
	Start(t)
	proctest.Hold(t)
}

// A test binary killed past -timeout runs no Cleanup (Stop): the server
// must end with it, not serve on.
func TestAServerEndsWithTheKilledTestBinaryThatStartedIt(t *testing.T) {
	if Bin() == "" {
		Start(t) // skips, or fails with MOQ_S3_REQUIRED=1
	}
	proctest.KillMidRun(t, "TestServerStarted", 1)
}
