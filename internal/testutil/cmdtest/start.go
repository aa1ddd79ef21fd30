package cmdtest

import (
	"bytes"
	"context"
	"log/slog"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/proctest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
)

// Relay serves broadcasts of the demo media on a loopback publisher and
// returns its URL and certificate pin; the server is closed with the test.
func Relay(t *testing.T, names ...string) (srv *subscribe.Server, url, pin string) {
	t.Helper()
	return RelayWith(t, demo.Options{Realtime: true}, names...)
}

// RelayWith is relay with the demo's options.
func RelayWith(t *testing.T, opts demo.Options, names ...string) (srv *subscribe.Server, url, pin string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var bcs []*model.Broadcast
	for _, n := range names {
		b := model.NewBroadcast(n)
		go demo.Publish(ctx, b, opts)
		bcs = append(bcs, b)
	}
	srv, url, pin, err := subscribe.ServeLoopback(bcs[0], subscribe.ServerOptions{Logger: slog.New(slog.DiscardHandler), Publish: bcs[1:]})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, url, pin
}

// StderrLines collects what a command writes (stderr, a pty) and lets the
// test wait for a string in it.
type StderrLines struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	More chan struct{}
}

func (s *StderrLines) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.buf.Write(p)
	s.mu.Unlock()
	select {
	case s.More <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (s *StderrLines) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// WaitFor waits until the output holds want, at most 20 s.
func (s *StderrLines) WaitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for !strings.Contains(s.String(), want) {
		select {
		case <-s.More:
		case <-deadline:
			t.Fatalf("the output never said %q:\n%s", want, s.String())
		}
	}
}

// WaitForMedia waits until a progress line shows at least d of media, at
// most 20 s. (Lines come every second of wall-clock time, not at whole
// Seconds of media: 00:00:00.9 may be followed by 00:00:02.0.)
func (s *StderrLines) WaitForMedia(t *testing.T, d time.Duration) {
	t.Helper()
	re := regexp.MustCompile(`(?m)^(\d\d):(\d\d):(\d\d\.\d)  `)
	deadline := time.After(20 * time.Second)
	for {
		for _, m := range re.FindAllStringSubmatch(s.String(), -1) {
			h, _ := strconv.Atoi(m[1])
			mi, _ := strconv.Atoi(m[2])
			sec, _ := strconv.ParseFloat(m[3], 64)
			if time.Duration((float64(h*3600+mi*60)+sec)*float64(time.Second)) >= d {
				return
			}
		}
		select {
		case <-s.More:
		case <-deadline:
			t.Fatalf("no progress line showed %v of media:\n%s", d, s.String())
		}
	}
}

func Start(t *testing.T, dir string, args ...string) (*exec.Cmd, *StderrLines) {
	t.Helper()
	cmd := proctest.Command(Binary, args...)
	cmd.Dir = dir
	errOut := &StderrLines{More: make(chan struct{}, 1)}
	cmd.Stderr = errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, errOut
}

// ExitCode waits for cmd, at most limit.
func ExitCode(t *testing.T, cmd *exec.Cmd, limit time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(limit):
		cmd.Process.Kill()
		t.Fatalf("still running after %v", limit)
	}
	return -1
}
