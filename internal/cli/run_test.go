package cli

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/overload"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
)

// TestExecuteRecordsTheDemoWithProgress runs the whole command in process
// (so -race sees the recording, the progress goroutine and the output
// flusher together) and checks the file's size against the counters.
func TestExecuteRecordsTheDemoWithProgress(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "x.mkv")
	var stderr bytes.Buffer
	code := Execute(context.Background(), []string{"--duration", "1s", "-o", out, "--progress", "always"},
		Env{Stdout: &bytes.Buffer{}, Stderr: &stderr})
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	st, err := os.Stat(out)
	if err != nil || st.Size() < 20000 {
		t.Fatalf("output %v, %v", st, err)
	}
	last := lastLine(stderr.String())
	if !strings.HasPrefix(last, "00:00:00.9") || !strings.Contains(last, "2 tracks") {
		t.Errorf("last progress line %q", last)
	}
}

// TestCancelFinishesTheRecording cancels the context as Ctrl-C does: the
// command exits 0 and the stream written to stdout is complete.
func TestCancelFinishesTheRecording(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel)
	var stdout syncBuffer
	var stderr bytes.Buffer
	code := Execute(ctx, []string{"--demo-loops", "0", "-f", "ts"}, Env{Stdout: &stdout, Stderr: &stderr})
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	n := stdout.Len()
	if n < 188*50 || n%188 != 0 {
		t.Errorf("stdout holds %d bytes: not whole TS packets of a second of media", n)
	}
}

// TestRecordAllWritesOneFilePerBroadcast records two in-process broadcasts,
// one with a hostile name, to a template.
func TestRecordAllWritesOneFilePerBroadcast(t *testing.T) {
	dir := t.TempDir()
	cfg := &Config{RecordAll: true, Output: filepath.Join(dir, "{broadcast}-{n}.ts"), Format: "ts", formatGiven: true,
		Delay: time.Hour, Progress: "never", URL: "https://relay.example/"}
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	con := newConsole(&bytes.Buffer{}, false, nil)
	a := newTestApp(t, cfg, con)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var bcs []*model.Broadcast
	for _, name := range []string{"alice", "../../x"} {
		b := model.NewBroadcast(name)
		go demo.Publish(ctx, b, demo.Options{Loops: 1, KeepGroups: 1 << 20})
		bcs = append(bcs, b)
	}
	src := newLocalSource(bcs...)
	done := make(chan error, 1)
	go func() { done <- a.recordAll(ctx, src, 0) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := a.snapshot()
		st := a.rec.Stats()
		if st.Recorded == 2 && st.Recordings == 0 {
			if s.Frames != 2*309 {
				t.Errorf("%d frames recorded, want 2 x 309", s.Frames)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the recordings did not end with their broadcasts")
		}
		time.Sleep(10 * time.Millisecond)
	}
	src.Close()
	if err := <-done; err != nil {
		t.Errorf("recordAll: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	want := []string{filepath.Join(dir, "_._.._x-0.ts"), filepath.Join(dir, "alice-0.ts")}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Errorf("files %v, want %v", files, want)
	}
}

// TestRecordAllStartsNothingWhileOverloaded: the command's overload
// monitor, fed samples that put the recorder past half of quic-go's packet
// queue, logs the overload, and --record-all defers the two broadcasts
// announced then (no file); fed calm samples for a second's worth, it lets
// them start, and both are recorded whole.
func TestRecordAllStartsNothingWhileOverloaded(t *testing.T) {
	dir := t.TempDir()
	cfg := &Config{RecordAll: true, Output: filepath.Join(dir, "{broadcast}.ts"), Format: "ts", formatGiven: true,
		Delay: time.Hour, Progress: "never", URL: "https://relay.example/"}
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	con := newConsole(&logs, false, nil)
	a := &app{cfg: cfg, con: con, log: newLogger(con, logText, LevelNotice)}
	a.load = overload.New(a.log)
	a.load.Observe(overload.Sample{Rate: 50_000, Wait: 10 * time.Millisecond}) // 500 packets queued
	if err := a.newRecorder(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var bcs []*model.Broadcast
	for _, name := range []string{"alice", "bob"} {
		b := model.NewBroadcast(name)
		go demo.Publish(ctx, b, demo.Options{Loops: 1, KeepGroups: 1 << 20})
		bcs = append(bcs, b)
	}
	src := newLocalSource(bcs...)
	done := make(chan error, 1)
	go func() { done <- a.recordAll(ctx, src, 0) }()
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s:\n%s", what, logs.String())
			}
		}
	}
	waitUntil("no deferral logged", func() bool { return strings.Count(logs.String(), "refused a broadcast for now") == 2 })
	if !strings.Contains(logs.String(), "overloaded: packets may soon be dropped") {
		t.Fatalf("the overload was not logged:\n%s", logs.String())
	}
	if st := a.rec.Stats(); st.Recordings != 0 || st.Recorded != 0 {
		t.Fatalf("recordings started while overloaded: %+v", st)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) != 0 {
		t.Fatalf("files while overloaded: %v", files)
	}
	for range overload.LeaveAfter {
		a.load.Observe(overload.Sample{Rate: 50_000})
	}
	waitUntil("the deferred broadcasts were not recorded", func() bool {
		st := a.rec.Stats()
		return st.Recorded == 2 && st.Recordings == 0
	})
	if s := a.snapshot(); s.Frames != 2*309 {
		t.Errorf("%d frames recorded, want 2 x 309", s.Frames)
	}
	src.Close()
	if err := <-done; err != nil {
		t.Errorf("recordAll: %v", err)
	}
}

// syncBuffer is a bytes.Buffer safe for the output flusher's goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// lastLine returns the last progress line in s (the summary follows it).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i > 0; i-- {
		if !strings.HasPrefix(lines[i], "moq-export: ") {
			return lines[i]
		}
	}
	return lines[0]
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// newTestApp returns the command's app for cfg (checked) writing to con.
func newTestApp(t *testing.T, cfg *Config, con *console) *app {
	t.Helper()
	a := &app{cfg: cfg, con: con, log: newLogger(con, logText, LevelNotice)}
	if err := a.newRecorder(context.Background()); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestListenForgetsPublishersThatLeft: a --listen --record-all service
// runs for days; the sessions of publishers that disconnected must not
// pile up.
func TestListenForgetsPublishersThatLeft(t *testing.T) {
	dir := t.TempDir()
	cfg := &Config{Listen: "127.0.0.1:0", RecordAll: true, Output: filepath.Join(dir, "{broadcast}-{n}.ts"),
		Delay: 100 * time.Millisecond, Progress: "never"}
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	con := newConsole(&stderr, false, nil)
	a := newTestApp(t, cfg, con)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.listen(ctx) }()
	var addr, pin string
	for addr == "" {
		if m := regexp.MustCompile(`moql://(\S+) .*fingerprint ([0-9a-f]{64})`).FindStringSubmatch(stderr.String()); m != nil {
			addr, pin = m[1], m[2]
		} else if ctx.Err() != nil {
			t.Fatalf("no listening line: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := range 3 {
		pub, err := subscribe.Dial(ctx, "moql://"+addr+"/", subscribe.Options{Role: subscribe.RolePublisher, TLSFingerprint: pin, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		bc := model.NewBroadcast(fmt.Sprintf("pub%d", i))
		go demo.Publish(ctx, bc, demo.Options{Realtime: true})
		if err := pub.Publish(bc); err != nil {
			t.Fatal(err)
		}
		// Leave once the recording is under way.
		before := a.snapshot().Frames
		for a.snapshot().Frames < before+30 {
			if ctx.Err() != nil {
				t.Fatalf("publisher %d was not recorded: %s", i, stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		pub.Close()
	}
	for {
		a.mu.Lock()
		n := len(a.sources)
		a.mu.Unlock()
		recorded := a.rec.Stats().Recorded
		if n == 0 && recorded == 3 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d recordings; %d sessions of publishers that left are still held", recorded, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
}

// TestPickBroadcastNamesWhereTheBroadcastsCameFrom: with --listen there is
// no URL to name, the message says the publisher announced them.
func TestPickBroadcastNamesWhereTheBroadcastsCameFrom(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{URL: "https://relay.example/anon?jwt=s3cr3t"}, "announced under https://relay.example/anon?jwt=REDACTED ("},
		{Config{Listen: "127.0.0.1:4443"}, "announced by the publisher on --listen 127.0.0.1:4443 ("},
	} {
		cfg := tc.cfg
		cfg.Format = MKV
		con := newConsole(&bytes.Buffer{}, false, nil)
		a := &app{cfg: &cfg, con: con, log: quietLogger()}
		_, err := a.pickBroadcast(context.Background(), newLocalSource(model.NewBroadcast("a"), model.NewBroadcast("b")))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "pick one with -b") {
			t.Errorf("%+v: %v; want it to say %q", tc.cfg, err, tc.want)
		}
	}
}

// TestLoopbackOnlyTellsWhoCanReachAListener: only a loopback address keeps
// --listen quiet; the unspecified address and a LAN address are reachable
// from other hosts and warn.
func TestLoopbackOnlyTellsWhoCanReachAListener(t *testing.T) {
	for _, tt := range []struct {
		addr string
		want bool
	}{{"127.0.0.1:4443", true}, {"[::1]:4443", true}, {"0.0.0.0:4443", false}, {"[::]:4443", false}, {"192.168.1.5:4443", false}} {
		a, err := net.ResolveUDPAddr("udp", tt.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := loopbackOnly(a); got != tt.want {
			t.Errorf("loopbackOnly(%s) = %v, want %v", tt.addr, got, tt.want)
		}
	}
}
