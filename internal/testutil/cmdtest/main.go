package cmdtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// CommandPkg is the command these tests build and run.
const CommandPkg = "github.com/moq-export/moq-export/cmd/moq-export"

// slowBuild is how long a build may take before Main says how long it took.
const slowBuild = 30 * time.Second

// Main is a test binary's TestMain: re-executed as a publisher process it
// runs that and returns its exit code; re-executed by proctest.KillMidRun
// it runs the tests with the command its parent built; otherwise it
// builds the command into Binary, runs the tests and removes the build.
// Builds of the command take a lock beside the temporary directory, so
// that the end-to-end packages go test starts at once do not compile the
// same packages side by side: the first compiles, the others link from the
// build cache.
func Main(m *testing.M) int {
	if os.Getenv(PublisherEnv) != "" {
		// Re-executed as the publisher process of a fault test.
		return PublisherMain()
	}
	if UsePrebuilt() {
		// Re-executed by proctest.KillMidRun: the command is built.
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "moq-export-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	Binary = filepath.Join(dir, "moq-export")
	if err := build(Binary); err != nil {
		fmt.Fprintln(os.Stderr, "building moq-export:", err)
		return 1
	}
	return m.Run()
}

// build builds the command into path under the machine-wide build lock.
func build(path string) error {
	start := time.Now()
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "moq-export-cmdtest-build.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	waited := time.Since(start)
	cmd := exec.Command("go", "build", "-o", path, CommandPkg)
	cmd.Stderr = os.Stderr
	err = cmd.Run()
	if took := time.Since(start); took > slowBuild {
		fmt.Fprintf(os.Stderr, "cmdtest: building %s took %.1fs (%.1fs of it waiting for another build)\n", CommandPkg, took.Seconds(), waited.Seconds())
	}
	return err
}
