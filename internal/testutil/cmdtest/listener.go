package cmdtest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/proctest"
	"github.com/moq-export/moq-export/token"
)

// Listener is the binary running in --listen mode.
type Listener struct {
	Cmd   *exec.Cmd
	Lines chan string // stderr, line by line; closed when it ends
	Log   []string    // stderr read so far
	Addr  string      // host:port it listens on
	Pin   string      // fingerprint of its certificate
	Self  bool        // it said its certificate is self-signed
}

var ListeningLine = regexp.MustCompile(`listening on moql://(\S+) and https://\S+ \((self-signed certificate|certificate \S+), SHA-256 fingerprint ([0-9a-f]{64})`)

// StartListener starts the binary with --listen 127.0.0.1:0 and args in dir
// and waits for the line that says where it listens.
func StartListener(t *testing.T, dir string, args ...string) *Listener {
	t.Helper()
	l := &Listener{Cmd: proctest.Command(Binary, append([]string{"--listen", "127.0.0.1:0"}, args...)...), Lines: make(chan string, 100)}
	l.Cmd.Dir = dir
	stderr, err := l.Cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Cmd.Process.Kill() })
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			l.Lines <- sc.Text()
		}
		close(l.Lines)
	}()
	for l.Addr == "" {
		select {
		case line, ok := <-l.Lines:
			if !ok {
				t.Fatalf("moq-export exited:\n%s", strings.Join(l.Log, "\n"))
			}
			l.Log = append(l.Log, line)
			if m := ListeningLine.FindStringSubmatch(line); m != nil {
				l.Addr, l.Self, l.Pin = m[1], m[2] == "self-signed certificate", m[3]
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no listening line:\n%s", strings.Join(l.Log, "\n"))
		}
	}
	return l
}

// Wait collects the rest of stderr and waits up to timeout for the process
// to end on its own; it returns the exit error.
func (l *Listener) Wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		for line := range l.Lines {
			l.Log = append(l.Log, line)
		}
		done <- l.Cmd.Wait()
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		l.Cmd.Process.Kill()
		<-done
		t.Fatalf("moq-export still running after %v:\n%s", timeout, strings.Join(l.Log, "\n"))
		return nil
	}
}

// WaitLine reads the listener's stderr until a line contains every want.
func (l *Listener) WaitLine(t *testing.T, want ...string) string {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-l.Lines:
			if !ok {
				t.Fatalf("moq-export exited before logging %q:\n%s", want, strings.Join(l.Log, "\n"))
			}
			l.Log = append(l.Log, line)
			all := true
			for _, w := range want {
				all = all && strings.Contains(line, w)
			}
			if all {
				return line
			}
		case <-deadline:
			t.Fatalf("no line with %q:\n%s", want, strings.Join(l.Log, "\n"))
		}
	}
}

// WriteKey writes the verifying half of key (the secret for HMAC) to a
// file and returns its path.
func WriteKey(t *testing.T, dir string, key *token.Key) string {
	t.Helper()
	js, err := key.PublicJSON()
	if err != nil {
		js, err = key.MarshalJSON()
	}
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "auth.jwk")
	if err := os.WriteFile(p, js, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
