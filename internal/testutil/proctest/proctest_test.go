package proctest

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// plainEnv makes TestSleeperStarted start its sleeper with exec.Command.
const plainEnv = "PROCTEST_PLAIN"

// TestSleeperStarted is the child of the tests below: it starts a sleeper
// through Command (with $PROCTEST_PLAIN, through exec.Command) and holds.
func TestSleeperStarted(t *testing.T) {
	if !Inner() {
		t.Skip("run by the tests below")
	}
	cmd := Command("sleep", "600")
	if os.Getenv(plainEnv) != "" {
		cmd = exec.Command("sleep", "600")
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	Hold(t)
}

func TestAProcessFromCommandEndsWithTheTestBinaryThatStartedIt(t *testing.T) {
	KillMidRun(t, "TestSleeperStarted", 1)
}

// The check can fail: a process started without Bind outlives its test
// binary, as every process the tests started did before this package.
func TestAProcessFromExecCommandOutlivesTheKilledTestBinary(t *testing.T) {
	t.Setenv(plainEnv, "1")
	left := killMidRun(t, "TestSleeperStarted", 1, time.Second)
	for _, p := range left {
		killPid(p.Pid)
	}
	if len(left) != 1 || left[0].Command != "sleep" {
		t.Fatalf("outlived the killed test binary: %v, want the sleeper", left)
	}
}
