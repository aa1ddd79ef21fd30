package binary

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// parentEnv re-executes the test binary as parentMain.
const parentEnv = "MOQ_EXPORT_TEST_PARENT"

// parentMain stands for a test binary that started a publisher process
// (as the fault tests and the soak do) and is then killed: it starts one
// with the certificate in $MOQ_EXPORT_TEST_CERT and $MOQ_EXPORT_TEST_KEY,
// prints "publisher PID" once it listens, and waits to be killed.
func parentMain() int {
	cmd, err := publisherCommand(context.Background(), "127.0.0.1:0", os.Getenv("MOQ_EXPORT_TEST_CERT"), os.Getenv("MOQ_EXPORT_TEST_KEY"), time.Now())
	if err != nil {
		fmt.Fprintln(os.Stderr, "parent:", err)
		return 1
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "parent:", err)
		return 1
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if !strings.HasPrefix(line, "listening ") {
		fmt.Fprintf(os.Stderr, "parent: the publisher said %q, %v\n", line, err)
		cmd.Process.Kill()
		return 1
	}
	fmt.Printf("publisher %d\n", cmd.Process.Pid)
	select {}
}

// alive reports whether process pid runs (a zombie waiting for its
// reaper does not).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) STATE ...: the state follows the last ')'.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(s[i+1:], " Z")
}

// TestAPublisherProcessEndsWithTheTestBinaryThatStartedIt: a test binary
// killed for running past -timeout runs no Cleanup; the publisher
// processes its fault tests started serve until killed, so without more
// they outlived it (three of them for 15 minutes after the whole suite's
// e2e/binary ran past 15 minutes under load, suite26 r1). The publisher a
// killed test binary started ends with it.
func TestAPublisherProcessEndsWithTheTestBinaryThatStartedIt(t *testing.T) {
	certFile, keyFile, _ := publisherCert(t, t.TempDir())
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(self)
	parent.Env = append(os.Environ(), parentEnv+"=1", "MOQ_EXPORT_TEST_CERT="+certFile, "MOQ_EXPORT_TEST_KEY="+keyFile)
	parent.Stderr = os.Stderr
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { parent.Process.Kill(); parent.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "publisher ")))
	if err != nil || perr != nil || !strings.HasPrefix(line, "publisher ") {
		t.Fatalf("the parent said %q, %v", line, err)
	}
	if !alive(pid) {
		t.Fatalf("the publisher (pid %d) does not run before its parent is killed", pid)
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	parent.Wait()
	// The kernel signals the child as the parent dies; allow a loaded
	// machine time to run the kill and reap it.
	for deadline := time.Now().Add(10 * time.Second); alive(pid); {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the publisher (pid %d) outlived the killed test binary that started it by 10 s", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
