package cmdtest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/internal/testutil/proctest"
)

// ProgressClock matches the media time at the start of a progress line.
var ProgressClock = regexp.MustCompile(`(?m)^(\d\d):(\d\d):(\d\d)\.(\d)\s`)

// MediaTimes returns the media times of the progress lines in s.
func MediaTimes(s string) []time.Duration {
	var out []time.Duration
	for _, m := range ProgressClock.FindAllStringSubmatch(s, -1) {
		h, _ := strconv.Atoi(m[1])
		mi, _ := strconv.Atoi(m[2])
		se, _ := strconv.Atoi(m[3])
		te, _ := strconv.Atoi(m[4])
		out = append(out, time.Duration(h)*time.Hour+time.Duration(mi)*time.Minute+time.Duration(se)*time.Second+time.Duration(te)*100*time.Millisecond)
	}
	return out
}

// CutShort matches what ffmpeg says about a file whose last frame was cut
// off: a kill can land in the middle of a write(2), so the file may end
// inside a frame (everything before it decodes).
var CutShort = regexp.MustCompile(`File ended prematurely|Invalid NAL unit size|missing picture in access unit|Error splitting the input into NAL units|Packet corrupt|Truncat|invalid packet size|stream ends prematurely|partial file|Error while decoding|decode_slice_header error|no frame!|error while decoding MB|concealing|Invalid data found when processing input`)

// DecodeCutShort decodes path with ffmpeg like DecodeAtFileTimes (a
// killed recording has its outages too), but accepts the messages of a
// last frame cut off by a kill.
func DecodeCutShort(t *testing.T, path string) {
	t.Helper()
	complaints, cut, err := decodeAtFileTimes(path, true)
	if err != nil || complaints != "" {
		t.Errorf("ffmpeg decoding %s: %v\n%s%s", filepath.Base(path), err, complaints, cut)
	} else if cut != "" {
		t.Logf("%s ends inside a frame: %s", filepath.Base(path), strings.TrimSpace(cut))
	}
}

// DecodeAtFileTimes decodes path like decode, keeping each frame at the
// file's own millisecond time: after an outage the timeline goes on by a
// time that is not a whole number of Frames, and ffmpeg's null output, at
// the stream's nominal frame rate, would round two Frames onto one tick
// and complain about its own timestamps. (The eleventh one-hour soak met
// it: a publisher restart left the video half a frame off the file's
// start, where a frame 2999 ticks of 90 kHz after the one before rounds
// onto its 1/30 s tick.) Two frames less than a millisecond apart, or a
// time that goes back, still fail.
func DecodeAtFileTimes(t *testing.T, path string) {
	t.Helper()
	if complaints, _, err := decodeAtFileTimes(path, false); err != nil || complaints != "" {
		t.Errorf("ffmpeg decoding %s: %v\n%s", filepath.Base(path), err, complaints)
	}
}

// decodeAtFileTimes decodes path with mediatest.DecodeAtFileTimes and
// returns what ffmpeg said; with cutShort, the messages of a last frame
// cut off (CutShort) come apart in cut.
func decodeAtFileTimes(path string, cutShort bool) (complaints, cut string, err error) {
	messages, err := mediatest.DecodeAtFileTimes(path)
	var other, cutOff strings.Builder
	for _, line := range strings.SplitAfter(messages, "\n") {
		switch {
		case strings.TrimSpace(line) == "":
		case cutShort && CutShort.MatchString(line):
			cutOff.WriteString(line)
		default:
			other.WriteString(line)
		}
	}
	return other.String(), cutOff.String(), err
}

// LockedBuffer collects a child's stderr while the test reads it.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// RecorderRun is the binary running with --progress always: its stderr is
// kept (log) and handed over line by line (lines, closed at its end).
type RecorderRun struct {
	Cmd   *exec.Cmd
	Lines chan string
	Log   LockedBuffer
	// Stamped is log with each line's wall time (LogClock) in front,
	// for the logs printed when a test fails.
	Stamped LockedBuffer
}

func StartRecorder(t *testing.T, ctx context.Context, dir string, args ...string) *RecorderRun {
	t.Helper()
	r := &RecorderRun{Cmd: proctest.CommandContext(ctx, Binary, append(args, "--progress", "always")...), Lines: make(chan string, 1024)}
	r.Cmd.Dir = dir
	stderr, err := r.Cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.Lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			r.Log.Write(append(sc.Bytes(), '\n'))
			r.Stamped.Write(fmt.Appendf(nil, "%s %s\n", time.Now().Format(LogClock), sc.Bytes()))
			select {
			case r.Lines <- sc.Text():
			default: // nobody waits for a progress line any more
			}
		}
	}()
	return r
}

// WaitMedia returns the media time of the first progress line that says at
// least d, or 0 when the output ended first.
func (r *RecorderRun) WaitMedia(d time.Duration) time.Duration {
	for line := range r.Lines {
		if ts := MediaTimes(line); len(ts) > 0 && ts[0] >= d {
			return ts[0]
		}
	}
	return 0
}

// Wait reads the rest of the output and waits for the exit.
func (r *RecorderRun) Wait() error {
	for range r.Lines {
	}
	return r.Cmd.Wait()
}

// RecordAcrossAFreshClockRestart records the test publisher with args
// (selection and output flags) for 10 s of media in dir; after 3 s the
// publisher is killed with SIGKILL and started again 1 s later on the same
// port with a fresh clock (its timestamps start afresh, as a restarted
// process's do). The new publisher holds its media until every track is
// subscribed, as tools/fleetpub does: it must see the catalog and both
// media tracks subscribed again (issue 26 item 0: a recorder once
// resubscribed only the catalog, "model: duplicate group" for its group 0,
// and recorded nothing more). It returns the recorder's log once it
// exited 0.
func RecordAcrossAFreshClockRestart(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r, pub, _ := RecordAcrossAKill(t, ctx, dir, time.Now(), nil, append([]string{"--duration", "10s"}, args...),
		func(start func(epoch time.Time, env ...string) *PublisherProcess) *PublisherProcess {
			time.Sleep(time.Second)
			return start(time.Now(), "MOQ_EXPORT_TEST_HOLD=1")
		})
	// The recorder finds the dead connection by its idle timeout (3 s),
	// reconnects and resubscribes; on a loaded machine that may take
	// several seconds more.
	want := []string{"live/aac", "live/catalog.json", "live/h264"}
	var got []string
	for deadline := time.Now().Add(45 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got = got[:0]
		for _, line := range strings.Split(pub.log.String(), "\n") {
			if id, ok := strings.CutPrefix(line, "subscribed "); ok {
				got = append(got, id)
			}
		}
		if len(got) == len(want) || time.Now().After(deadline) {
			break
		}
	}
	if slices.Sort(got); !slices.Equal(got, want) {
		r.Cmd.Process.Kill()
		r.Wait()
		t.Fatalf("the restarted publisher saw %v subscribed, want %v: the recorder did not resubscribe every track", got, want)
	}
	if err := r.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
	return r.Log.String()
}

// RecordAcrossAKill starts the test publisher (env added to its
// environment, its clock from epoch) and a recorder of it with args
// (besides the URL, the pin and -vv) in dir; after 3 s of media it kills
// the publisher with SIGKILL and lets restart start the new one on the same
// port with the same certificate. It returns the recorder, still running,
// the new publisher and when the old one died.
//
// The kill is the only fault a restart test means: an attempt whose
// recorder lost its connection before it (a loaded machine that stalled a
// process past the 3 s silence timeout) cannot test the restart, and is
// made again, at most three times in all. Under -race at load ~40 a
// publisher once sent nothing for 5 s at 1.7 s of media; the recorder
// reconnected, fetched the backlog at once and reached its --Duration
// before the kill, and the test waited for a resubscription from a
// recorder that had finished.
func RecordAcrossAKill(t *testing.T, ctx context.Context, dir string, epoch time.Time, env, args []string,
	restart func(start func(epoch time.Time, env ...string) *PublisherProcess) *PublisherProcess) (*RecorderRun, *PublisherProcess, time.Time) {
	t.Helper()
	const attempts = 3
	var r *RecorderRun
	var pubs []*PublisherProcess
	LogsOnFailure(t, &r, &pubs)
	for attempt := 1; ; attempt++ {
		certFile, keyFile, pin := PublisherCert(t, dir)
		pub := StartPublisher(t, ctx, "127.0.0.1:0", certFile, keyFile, epoch, env...)
		pubs = []*PublisherProcess{pub}
		r = StartRecorder(t, ctx, dir, append([]string{"moql://" + pub.Addr + "/", "--tls-fingerprint", pin, "-vv"}, args...)...)
		if r.WaitMedia(3*time.Second) == 0 {
			r.Wait()
			t.Fatal("no progress past 3 s")
		}
		if lost := LineWith(r.Stamped.String(), "connection lost"); lost != "" {
			if attempt == attempts {
				t.Fatalf("in each of %d attempts the connection was lost before the publisher was killed (the last: %s): the machine stalled too long to test a restart", attempts, lost)
			}
			t.Logf("attempt %d: the connection was lost before the publisher was killed, the restart cannot be tested on it; recording again (%s)", attempt, lost)
			r.Cmd.Process.Kill()
			r.Wait()
			pub.Cmd.Process.Kill()
			pub.Cmd.Wait()
			EmptyDir(t, dir)
			continue
		}
		if err := pub.Cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		pub.Cmd.Wait()
		killed := time.Now()
		t.Logf("the publisher was killed at %s", killed.Format(LogClock))
		pub = restart(func(epoch time.Time, env ...string) *PublisherProcess {
			p := StartPublisher(t, ctx, pub.Addr, certFile, keyFile, epoch, env...)
			pubs = append(pubs, p)
			return p
		})
		return r, pub, killed
	}
}

// LineWith returns the first line of log that holds text, or "".
func LineWith(log, text string) string {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, text) {
			return line
		}
	}
	return ""
}

// EmptyDir removes everything in dir.
func EmptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

// LogClock is how the restart tests print a wall time, as the recorder's
// and the publishers' logs do (slog's text handler).
const LogClock = "15:04:05.000"

// LogsOnFailure prints, when t has failed, the recorder's whole log and
// each publisher's (the killed one, then the restarted one): every check
// of a restart test can fail on a loaded machine in a way seen once in
// hundreds of runs, and a failure must explain itself (of the last attempt
// when there were several: RecordAcrossAKill). It is printed once,
// after the test's own messages; the messages do not repeat it. The logs
// are read when the test ends, after the recorder has exited or been
// killed.
func LogsOnFailure(t *testing.T, run **RecorderRun, pubs *[]*PublisherProcess) {
	t.Cleanup(func() {
		r := *run
		if !t.Failed() || r == nil {
			return
		}
		t.Logf("the recorder's log (%s):\n%s", strings.Join(r.Cmd.Args[1:], " "), r.Stamped.String())
		for i, p := range *pubs {
			what := "the first publisher's log"
			if i > 0 {
				what = fmt.Sprintf("restarted publisher %d's log", i)
			}
			t.Logf("%s (%s):\n%s", what, p.Addr, p.log.String())
		}
	})
}
