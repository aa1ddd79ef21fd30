package binary

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
)

// TestInterruptBeforeTheFirstFrameLeavesAValidFile: a broadcast whose
// catalog came but no media yet, stopped with Ctrl-C: the MKV opened for it
// is a valid empty file (ffprobe and mkvmerge read it without a message:
// both tracks, no packet), and the exit code says nothing was recorded.
func TestInterruptBeforeTheFirstFrameLeavesAValidFile(t *testing.T) {
	cmdtest.NeedTools(t, "ffprobe", "mkvmerge")
	t.Parallel()
	_, url, pin := cmdtest.RelayWith(t, demo.Options{Realtime: true, Hold: make(chan struct{})}, "held")
	dir := t.TempDir()
	cmd, lines := cmdtest.Start(t, dir, url, "--tls-fingerprint", pin, "-b", "held", "-o", "x.mkv", "-v")
	lines.WaitFor(t, "writing")
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	if code := cmdtest.ExitCode(t, cmd, 20*time.Second); code != 130 {
		t.Errorf("exit %d, want 130 (nothing recorded)\n%s", code, lines.String())
	}
	path := filepath.Join(dir, "x.mkv")
	if _, err := os.Stat(path); err != nil {
		return // no file is fine too
	}
	if p := mediatest.Probe(t, path); len(p.Streams) != 2 || len(p.Packets) != 0 {
		t.Errorf("ffprobe: %d streams, %d packets; want the 2 tracks and no packet", len(p.Streams), len(p.Packets))
	}
	if out, err := exec.Command("mkvmerge", "-J", path).CombinedOutput(); err != nil || strings.Contains(string(out), `"errors": [
      "`) {
		t.Errorf("mkvmerge: %v\n%s", err, out)
	}
}

// TestRecordAllRecordsTheBuiltInDemo: --record-all without a URL records
// the demo's one broadcast to the template.
func TestRecordAllRecordsTheBuiltInDemo(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	r := cmdtest.Run(t, dir, "--record-all", "-o", "rec/{broadcast}-{n}.mkv", "--duration", "1s")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	path := filepath.Join(dir, "rec", "demo-0.mkv")
	cmdtest.Decode(t, path)
	cmdtest.ExpectFrames(t, cmdtest.Probe(t, path), "h264", 1)
}

// TestListenNamesItsPortAndSaysItWaitsOnce: --listen 127.0.0.1:0 names
// the port it is bound to, and two sessions that announce nothing get one
// waiting notice, not one each.
func TestListenNamesItsPortAndSaysItWaitsOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := cmdtest.StartListener(t, dir, "--record-all", "-o", "rec/{broadcast}.mkv")
	for range 2 {
		r := cmdtest.Run(t, dir, "moql://"+l.Addr+"/", "--tls-fingerprint", l.Pin, "--list", "--wait", "2500ms")
		if r.Code != 0 {
			t.Fatalf("--list: exit %d\n%s", r.Code, r.Stderr)
		}
	}
	l.Cmd.Process.Signal(os.Interrupt)
	l.Wait(t, 20*time.Second)
	log := strings.Join(l.Log, "\n")
	if n := strings.Count(log, "waiting for broadcasts to be announced"); n != 1 {
		t.Errorf("%d waiting notices, want 1:\n%s", n, log)
	}
	if strings.Contains(log, "127.0.0.1:0") || !strings.Contains(log, "--listen "+l.Addr) {
		t.Errorf("the notices do not name the bound address %s:\n%s", l.Addr, log)
	}
	if strings.Contains(log, "warning: publisher session ended") {
		t.Errorf("a publisher that closed its session is no warning:\n%s", log)
	}
}

// TestFFmpegHabitsGetAHint: -i URL, -t 5 and --duration 5 are refused
// (exit 2) with what moq-export takes instead.
func TestFFmpegHabitsGetAHint(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		hint string
	}{
		{[]string{"-i", "https://relay.example/anon", "-o", "x.mkv"}, "takes the URL as its argument"},
		{[]string{"-t", "5", "-o", "x.mkv"}, "--duration 5s"},
		{[]string{"--duration", "5", "-o", "x.mkv"}, "durations need a unit, e.g. 5s"},
	} {
		r := cmdtest.Run(t, t.TempDir(), c.args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, c.hint) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, r.Code, r.Stderr, c.hint)
		}
	}
}

// TestVersionExplainsGOFLAGSWithoutBuildVCS: a build made with
// GOFLAGS=-buildvcs=false names no commit, and says why when GOFLAGS
// still says so, instead of telling to build in a clone.
func TestVersionExplainsGOFLAGSWithoutBuildVCS(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "moq-export")
	build := exec.Command("go", "build", "-o", bin, cmdtest.CommandPkg)
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), "no commit recorded: GOFLAGS has -buildvcs=false") {
		t.Errorf("version: %v, %q", err, out)
	}
	cmd = exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := cmd.Output(); err != nil || !strings.Contains(string(out), "-buildvcs=false") || !strings.Contains(string(out), "in a git clone") {
		t.Errorf("version without GOFLAGS: %v, %q", err, out)
	}
}
