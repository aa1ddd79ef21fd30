package main

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"math"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/udpproxy"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
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

// cutShort matches what ffmpeg says about a file whose last frame was cut
// off: a kill can land in the middle of a write(2), so the file may end
// inside a frame (everything before it decodes).
var cutShort = regexp.MustCompile(`File ended prematurely|Invalid NAL unit size|missing picture in access unit|Error splitting the input into NAL units|Packet corrupt|Truncat|invalid packet size|stream ends prematurely|partial file|Error while decoding|decode_slice_header error|no frame!|error while decoding MB|concealing|Invalid data found when processing input`)

// decodeCutShort decodes path with ffmpeg like decode, but accepts the
// messages of a last frame cut off by a kill.
func decodeCutShort(t *testing.T, path string) {
	t.Helper()
	cmd := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-i", path, "-f", "null", "-")
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	err := cmd.Run()
	var other []string
	for _, line := range strings.Split(strings.TrimSpace(errOut.String()), "\n") {
		if line != "" && !cutShort.MatchString(line) {
			other = append(other, line)
		}
	}
	if err != nil || len(other) > 0 {
		t.Errorf("ffmpeg decoding %s: %v\n%s", filepath.Base(path), err, errOut.String())
	} else if errOut.Len() > 0 {
		t.Logf("%s ends inside a frame: %s", filepath.Base(path), strings.TrimSpace(errOut.String()))
	}
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

// recorderRun is the binary running with --progress always: its stderr is
// kept (log) and handed over line by line (lines, closed at its end).
type recorderRun struct {
	cmd   *exec.Cmd
	lines chan string
	log   lockedBuffer
}

func startRecorder(t *testing.T, ctx context.Context, dir string, args ...string) *recorderRun {
	t.Helper()
	r := &recorderRun{cmd: exec.CommandContext(ctx, binary, append(args, "--progress", "always")...), lines: make(chan string, 1024)}
	r.cmd.Dir = dir
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			r.log.Write(append(sc.Bytes(), '\n'))
			select {
			case r.lines <- sc.Text():
			default: // nobody waits for a progress line any more
			}
		}
	}()
	return r
}

// waitMedia returns the media time of the first progress line that says at
// least d, or 0 when the output ended first.
func (r *recorderRun) waitMedia(d time.Duration) time.Duration {
	for line := range r.lines {
		if ts := mediaTimes(line); len(ts) > 0 && ts[0] >= d {
			return ts[0]
		}
	}
	return 0
}

// wait reads the rest of the output and waits for the exit.
func (r *recorderRun) wait() error {
	for range r.lines {
	}
	return r.cmd.Wait()
}

// TestSIGKILLLeavesAPlayableFileInEachFormat kills the recorder with
// SIGKILL once its progress line says it wrote 3 s of media: the file
// decodes (at most its last frame cut off, when the kill lands inside a
// write) and holds the media written up to about a second before the kill
// (file outputs flush at least every 500 ms; MP4 also keeps the fragment
// being built, at most a GOP).
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
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r := startRecorder(t, ctx, dir, append([]string{"-o", tc.file}, tc.args...)...)
			written := r.waitMedia(3 * time.Second)
			if written == 0 {
				r.wait()
				t.Fatalf("no progress past 3 s:\n%s", r.log.String())
			}
			if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			err := r.wait()
			if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("exit: %v\n%s", err, r.log.String())
			}
			path := filepath.Join(dir, tc.file)
			decodeCutShort(t, path)
			d := mediaSpan(t, path)
			t.Logf("%v of media in the file, %v written by the kill", d, written)
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

// packetTimes returns, per stream index, the sorted packet timestamps of
// path (seconds).
func packetTimes(t *testing.T, path string) map[int][]float64 {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "packet=stream_index,pts_time", "-of", "csv=p=0", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	times := map[int][]float64{}
	for _, line := range strings.Fields(string(out)) {
		parts := strings.Split(strings.Trim(line, ","), ",")
		if len(parts) != 2 {
			continue
		}
		i, err1 := strconv.Atoi(parts[0])
		v, err2 := strconv.ParseFloat(parts[1], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		times[i] = append(times[i], v)
	}
	for _, ts := range times {
		sort.Float64s(ts)
	}
	return times
}

// largestGap returns the largest distance between neighbouring times.
func largestGap(ts []float64) time.Duration {
	var gap float64
	for i := 1; i < len(ts); i++ {
		gap = max(gap, ts[i]-ts[i-1])
	}
	return time.Duration(gap * float64(time.Second))
}

// TestNetworkOutageOfFourSecondsLosesNoFrame: the recorder reaches the
// publisher through a UDP proxy that drops everything in both directions
// for 4 s while the publisher goes on and keeps its groups. The recorder
// notices (3 s of silence), reconnects as soon as the network is back and
// fetches what it missed: the file has no hole, measured from its packet
// timestamps, and every frame of the 8 s is in it.
func TestNetworkOutageOfFourSecondsLosesNoFrame(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := model.NewBroadcast("live")
	go demo.Publish(ctx, b, demo.Options{Realtime: true, KeepGroups: 100000})
	srv, _, pin, err := subscribe.ServeLoopback(b, subscribe.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	px, err := udpproxy.New(srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	dir := t.TempDir()
	r := startRecorder(t, ctx, dir, "moql://"+px.Addr()+"/", "--tls-fingerprint", pin, "-b", "live",
		"--duration", "8s", "-o", "out.mkv", "-v")
	r.waitMedia(2 * time.Second)
	px.Blackhole(true)
	time.Sleep(4 * time.Second) // the outage itself
	px.Blackhole(false)
	if err := r.wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, r.log.String())
	}
	log := &r.log
	if !strings.Contains(log.String(), "reconnected") {
		t.Fatalf("no reconnect in the log: the outage was not noticed\n%s", log.String())
	}
	path := filepath.Join(dir, "out.mkv")
	decode(t, path)
	times := packetTimes(t, path)
	if len(times) != 2 {
		t.Fatalf("%d streams", len(times))
	}
	// 30 fps video and 1024-sample AAC at 48 kHz: neighbours are 33 and
	// 21 ms apart; a lost frame would double that.
	for i, ts := range times {
		t.Logf("stream %d: %d packets over %.2fs, largest gap %v", i, len(ts), ts[len(ts)-1]-ts[0], largestGap(ts))
		if gap := largestGap(ts); gap > 60*time.Millisecond {
			t.Errorf("stream %d: a hole of %v in the packet timestamps\n%s", i, gap, log.String())
		}
		if span := ts[len(ts)-1] - ts[0]; span < 7.5 {
			t.Errorf("stream %d spans %.2fs, want about 8s", i, span)
		}
	}
}
