package cli

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/proctest"
)

// raiseChildEnv runs TestRaiseFDLimit's child part.
const raiseChildEnv = "CLI_TEST_RAISE_FD_CHILD"

// TestRaiseFDLimit runs a child that lowers its soft open-files limit to
// 64 (as a shell's ulimit -n leaves it) and checks that raiseFDLimit puts
// it back at the hard limit: --record-all holds a file per broadcast.
func TestRaiseFDLimit(t *testing.T) {
	if os.Getenv(raiseChildEnv) != "" {
		var lim syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
		if lim.Max <= 64 {
			t.Skipf("hard limit %d: nothing to raise to", lim.Max)
		}
		low := syscall.Rlimit{Cur: 64, Max: lim.Max}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
			t.Fatal(err)
		}
		got, err := raiseFDLimit()
		if err != nil || got != lim.Max {
			t.Fatalf("raiseFDLimit = %d, %v; want the hard limit %d", got, err, lim.Max)
		}
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur != lim.Max {
			t.Fatalf("soft limit %d after the raise, hard %d (%v)", lim.Cur, lim.Max, err)
		}
		return
	}
	cmd := proctest.Command(os.Args[0], "-test.run=^TestRaiseFDLimit$", "-test.v")
	cmd.Env = append(os.Environ(), raiseChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "--- SKIP: TestRaiseFDLimit") {
		t.Skipf("child skipped:\n%s", out)
	}
	if !strings.Contains(string(out), "--- PASS: TestRaiseFDLimit") {
		t.Fatalf("the child did not run the check:\n%s", out)
	}
}

func TestPprofIsServedOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:6060", "nonsense"} {
		if _, err := servePprof(addr); err == nil {
			t.Errorf("%s: profiles served off loopback", addr)
		}
	}
	got, err := servePprof("127.0.0.1:0")
	if err != nil || !strings.HasPrefix(got, "127.0.0.1:") {
		t.Fatalf("servePprof(127.0.0.1:0) = %q, %v", got, err)
	}
}
