package interop

import (
	"context"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/proctest"
)

// TestReferencePublisherStarted is the child of the test below: it starts
// a reference publisher under Deno and holds.
func TestReferencePublisherStarted(t *testing.T) {
	if !proctest.Inner() {
		t.Skip("run by TestAReferenceProcessEndsWithTheKilledTestBinaryThatStartedIt")
	}
	ref := needReference(t)
	ctx := context.Background()
	cert := newTestCert(t)
	pub := ref.start(ctx, t, "publish", "--manifest", sampleBroadcast("interop/orphan.hang", 1).write(t),
		"--listen", "127.0.0.1:0", "--cert", cert.certFile, "--key", cert.keyFile)
	pub.expect(ctx, "listening", nil)
	proctest.Hold(t)
}

// A test binary killed past -timeout runs no Cleanup: the reference
// processes it started (a publisher serves until killed) must end with it.
func TestAReferenceProcessEndsWithTheKilledTestBinaryThatStartedIt(t *testing.T) {
	needReference(t)
	proctest.KillMidRun(t, "TestReferencePublisherStarted", 1)
}
