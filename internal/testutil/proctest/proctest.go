package proctest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Command is exec.Command for a process that ends with the test binary.
func Command(name string, args ...string) *exec.Cmd {
	return Bind(exec.Command(name, args...))
}

// CommandContext is exec.CommandContext for a process that ends with the
// test binary (ctx kills it only while the test binary runs).
func CommandContext(ctx context.Context, name string, args ...string) *exec.Cmd {
	return Bind(exec.CommandContext(ctx, name, args...))
}

// Bind makes cmd, not yet started, end with the test binary and returns it.
func Bind(cmd *exec.Cmd) *exec.Cmd {
	bind(cmd)
	return cmd
}

// innerEnv marks the child KillMidRun starts.
const innerEnv = "MOQ_EXPORT_PROCTEST_INNER"

// holding is the line Hold prints for KillMidRun.
const holding = "proctest: holding"

// Inner reports whether this test binary is the child of KillMidRun.
func Inner() bool { return os.Getenv(innerEnv) != "" }

// Hold is called by a test KillMidRun runs, once it has started its
// processes: it tells KillMidRun so and waits to be killed. Outside
// KillMidRun it skips the test.
func Hold(t testing.TB) {
	t.Helper()
	if !Inner() {
		t.Skip("run by proctest.KillMidRun only")
	}
	fmt.Printf("\n%s\n", holding)
	for {
		// Not select{}: with nothing else to wait for (a child started
		// without pipes), the runtime would end the binary as deadlocked.
		time.Sleep(time.Hour)
	}
}

// KillMidRun runs the test named test of this binary as a child (which
// calls Hold once its processes run), SIGKILLs the child as go test
// kills a binary past its -timeout, and fails unless every process the
// child started (its descendants when it was killed; there must be at
// least want) is gone within 10 s.
func KillMidRun(t *testing.T, test string, want int) {
	t.Helper()
	for _, p := range killMidRun(t, test, want, 10*time.Second) {
		t.Errorf("%s outlived the killed test binary that started it by 10 s", p)
		killPid(p.Pid)
	}
}

// killMidRun is KillMidRun, returning the processes still running wait
// after the kill.
func killMidRun(t *testing.T, test string, want int, wait time.Duration) []Proc {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(self, "-test.run=^"+test+"$", "-test.v", "-test.count=1")
	// The child's temporary files (its t.TempDir), which it does not
	// remove when killed, go under the test's.
	child.Env = append(os.Environ(), innerEnv+"=1", "TMPDIR="+t.TempDir())
	var log lockedLog
	child.Stderr = &log
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	held := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == holding {
				close(held)
				break
			}
			log.Write(append(sc.Bytes(), '\n'))
		}
		for sc.Scan() {
		}
	}()
	select {
	case <-held:
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s did not start its processes within 2 min:\n%s", test, log.String())
	}
	procs := Descendants(child.Process.Pid)
	if len(procs) < want {
		t.Fatalf("%s started %d processes, want at least %d: %v\n%s", test, len(procs), want, procs, log.String())
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	// The kernel signals each process as the child dies; a loaded machine
	// may take a while to run the kill and reap it.
	deadline := time.Now().Add(wait)
	for _, p := range procs {
		for Alive(p.Pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	var left []Proc
	for _, p := range procs {
		if Alive(p.Pid) {
			left = append(left, p)
		}
	}
	return left
}

// Proc is a running process.
type Proc struct {
	Pid     int
	Command string // its /proc comm
}

func (p Proc) String() string { return fmt.Sprintf("%s (pid %d)", p.Command, p.Pid) }

// Descendants returns the running processes below pid (children,
// grandchildren, ...), read from /proc.
func Descendants(pid int) []Proc {
	entries, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	comm := map[int]string{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		c, pp, state, ok := stat(p)
		if !ok || state == 'Z' {
			continue
		}
		parent[p], comm[p] = pp, c
	}
	var procs []Proc
	below := map[int]bool{pid: true}
	for changed := true; changed; {
		changed = false
		for p, pp := range parent {
			if below[pp] && !below[p] {
				below[p], changed = true, true
				procs = append(procs, Proc{Pid: p, Command: comm[p]})
			}
		}
	}
	return procs
}

// Alive reports whether process pid runs (a zombie waiting for its reaper
// does not).
func Alive(pid int) bool {
	_, _, state, ok := stat(pid)
	return ok && state != 'Z'
}

// stat reads /proc/pid/stat: "pid (comm) STATE PPID ...".
func stat(pid int) (comm string, ppid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, 0, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, 0, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 2 || len(f[0]) != 1 {
		return "", 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return s[open+1 : end], ppid, f[0][0], err == nil
}
