package main

import (
	"bufio"
	"bytes"
	"math"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// progressClock matches the media time at the start of a progress line.
var progressClock = regexp.MustCompile(`(?m)^(\d\d):(\d\d):(\d\d)\.(\d)\s`)

// mediaTimes returns the media times of the progress lines in s.
func mediaTimes(s string) []time.Duration {
	var out []time.Duration
	for _, m := range progressClock.FindAllStringSubmatch(s, -1) {
		h, _ := strconv.Atoi(m[1])
		mi, _ := strconv.Atoi(m[2])
		se, _ := strconv.Atoi(m[3])
		te, _ := strconv.Atoi(m[4])
		out = append(out, time.Duration(h)*time.Hour+time.Duration(mi)*time.Minute+time.Duration(se)*time.Second+time.Duration(te)*100*time.Millisecond)
	}
	return out
}

// mediaSpan returns the span of the packet timestamps in path (first to
// last), read with ffprobe: what the recording holds, finalized or not.
func mediaSpan(t *testing.T, path string) time.Duration {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "packet=pts_time", "-of", "csv=p=0", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	first, last := math.Inf(1), math.Inf(-1)
	for _, line := range strings.Fields(string(out)) {
		v, err := strconv.ParseFloat(strings.Trim(line, ","), 64)
		if err != nil {
			continue
		}
		first, last = min(first, v), max(last, v)
	}
	if first > last {
		t.Fatalf("%s: no packets", path)
	}
	return time.Duration((last - first) * float64(time.Second))
}

// lockedBuffer collects a child's stderr while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSIGKILLLeavesAPlayableFileInEachFormat kills the recorder with
// SIGKILL once its progress line says it wrote 3 s of media: the file
// decodes without errors and holds the media written up to about a second
// before the kill (file outputs flush at least every 500 ms; MP4 also
// keeps the fragment being built, at most a GOP).
func TestSIGKILLLeavesAPlayableFileInEachFormat(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	for _, tc := range []struct {
		file  string
		args  []string
		slack time.Duration
	}{
		{"k.flv", nil, time.Second},
		{"k.mkv", nil, time.Second},
		{"k.webm", []string{"--demo-codecs", "vp9,opus"}, time.Second},
		{"k.ts", nil, time.Second},
		{"k.mp4", nil, 3 * time.Second},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cmd := exec.Command(binary, append([]string{"-o", tc.file, "--progress", "always"}, tc.args...)...)
			cmd.Dir = dir
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var log lockedBuffer
			// The progress line is rewritten with \r on a terminal and
			// printed line by line otherwise.
			sc := bufio.NewScanner(stderr)
			var written time.Duration
			for sc.Scan() {
				log.Write(append(sc.Bytes(), '\n'))
				if ts := mediaTimes(sc.Text()); len(ts) > 0 && ts[0] >= 3*time.Second {
					written = ts[0]
					break
				}
			}
			if written == 0 {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("no progress past 3 s:\n%s", log.String())
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			go func() { // drain, so the child is never blocked on stderr
				for sc.Scan() {
				}
			}()
			err = cmd.Wait()
			if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("exit: %v\n%s", err, log.String())
			}
			path := filepath.Join(dir, tc.file)
			decode(t, path)
			d := mediaSpan(t, path)
			if d < written-tc.slack {
				t.Errorf("file holds %v of media, the recorder had written %v before the kill", d, written)
			}
		})
	}
}

// TestFullDiskEndsTheRecordingWithExit1AndAPlayableFile: a file size
// limit (ulimit -f, what a full disk looks like to a writer: a write that
// stops part way, then errors) ends the recording with exit 1 and a
// message naming the file, and the file decodes cleanly up to there.
func TestFullDiskEndsTheRecordingWithExit1AndAPlayableFile(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe", "sh")
	for _, file := range []string{"f.flv", "f.mkv", "f.ts", "f.mp4"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			// 200 blocks of 512 bytes: about 3 s of the demo.
			r := runProgram(t, dir, "sh", "-c", `ulimit -f 200 && exec "$0" "$@"`, binary, "-o", file, "--duration", "30s")
			if r.code != 1 {
				t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
			}
			for _, want := range []string{"writing " + file + " failed", "size limit", "stays playable"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
				}
			}
			path := filepath.Join(dir, file)
			decode(t, path)
			if d := mediaSpan(t, path); d < time.Second {
				t.Errorf("the file holds %v of media", d)
			}
		})
	}
}
