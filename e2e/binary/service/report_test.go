package service

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
)

// logRecord is one line of --log-format json.
type logRecord struct {
	Level     string   `json:"level"`
	Msg       string   `json:"msg"`
	Path      string   `json:"path"`
	Duration  *float64 `json:"duration"`
	Bytes     *int64   `json:"bytes"`
	Frames    *int64   `json:"frames"`
	Broadcast string   `json:"broadcast"`
	Kind      string   `json:"kind"`
	ExitCode  *int     `json:"exit_code"`
}

// TestListenReportsEachFileWhenItIsFinished: a --listen --record-all
// service that runs for days must say when a file is done, not at exit.
// The demo is published into it (--demo-to) until the test ends it; each
// 1 s segment is reported as a JSON record with its fields while the
// service still runs, and the fields are what ffprobe finds in the file.
func TestListenReportsEachFileWhenItIsFinished(t *testing.T) {
	cmdtest.NeedTools(t, "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	l := startListenerJSON(t, dir, "--record-all", "-o", "rec/{broadcast}-{n}.mkv", "--segment", "1s")
	pub, _ := cmdtest.Start(t, dir, "--demo-to", "moql://"+l.Addr+"/", "--tls-fingerprint", l.Pin, "-b", "alice")
	var got []logRecord
	deadline := time.After(30 * time.Second)
	for len(got) < 2 {
		select {
		case line, ok := <-l.Lines:
			if !ok {
				t.Fatalf("the listener ended:\n%s", strings.Join(l.Log, "\n"))
			}
			l.Log = append(l.Log, line)
			var r logRecord
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("not a JSON record: %q", line)
			}
			if r.Level == "NOTICE" || !strings.Contains("DEBUG INFO WARN ERROR", r.Level) {
				t.Errorf("level %q is not a standard one", r.Level)
			}
			if strings.HasPrefix(r.Msg, "wrote ") {
				got = append(got, r)
			}
		case <-deadline:
			t.Fatalf("no two files reported while recording:\n%s", strings.Join(l.Log, "\n"))
		}
	}
	// Still recording: the reports came as each file was finished.
	if l.Cmd.ProcessState != nil {
		t.Fatal("the listener had exited")
	}
	for i, r := range got {
		want := filepath.Join("rec", "alice-"+strconv.Itoa(i)+".mkv")
		if r.Path != want || r.Broadcast != "alice" || r.Duration == nil || r.Bytes == nil || r.Frames == nil {
			t.Fatalf("record %+v, want path %s, broadcast alice, duration, bytes, frames", r, want)
		}
		path := filepath.Join(dir, r.Path)
		st, err := os.Stat(path)
		if err != nil || st.Size() != *r.Bytes {
			t.Errorf("%s: %v, %v; the record says %d bytes", path, st, err, *r.Bytes)
		}
		p := cmdtest.Probe(t, path)
		if n := p.Frames(t, "h264") + p.Frames(t, "aac"); int64(n) != *r.Frames {
			t.Errorf("%s: ffprobe reads %d frames, the record says %d", path, n, *r.Frames)
		}
		if d := p.Duration(t).Seconds(); math.Abs(d-*r.Duration) > 0.0015 {
			t.Errorf("%s: ffprobe says %.4f s, the record %.4f s", path, d, *r.Duration)
		}
	}
	pub.Process.Signal(os.Interrupt)
	cmdtest.ExitCode(t, pub, 20*time.Second)
	l.Cmd.Process.Signal(os.Interrupt)
	l.Wait(t, 20*time.Second)
}

// startListenerJSON is cmdtest.StartListener with --log-format json: the
// listening line is a JSON record.
func startListenerJSON(t *testing.T, dir string, args ...string) *cmdtest.Listener {
	t.Helper()
	return cmdtest.StartListener(t, dir, append([]string{"--log-format", "json"}, args...)...)
}

// TestTheNumbersAddUp records 2 s of the live demo and checks what the
// command says against the file: its duration is ffprobe's (the last frame
// included), rounded to the millisecond; every frame received is written,
// dropped or named as after the end; payload and file bytes are both
// given, the file bytes being the file's size.
func TestTheNumbersAddUp(t *testing.T) {
	cmdtest.NeedTools(t, "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	r := cmdtest.Run(t, dir, "--duration", "2s", "-o", "x.mkv", "--summary", "sum.json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "sum.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Files []struct {
			Path  string  `json:"path"`
			Size  int64   `json:"size"`
			Media float64 `json:"media_seconds"`
		} `json:"files"`
		Media     json.Number `json:"media_seconds"`
		Bytes     int64       `json:"bytes"`
		FileBytes int64       `json:"file_bytes"`
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	var raw struct {
		PerTrack []map[string]any `json:"per_track"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if len(sum.Files) != 1 || len(raw.PerTrack) != 2 {
		t.Fatalf("summary %s", b)
	}
	st, err := os.Stat(filepath.Join(dir, "x.mkv"))
	if err != nil || sum.Files[0].Size != st.Size() || sum.FileBytes != st.Size() || sum.Bytes <= 0 || sum.Bytes >= sum.FileBytes {
		t.Errorf("file %v %v; summary size %d, file_bytes %d, payload bytes %d", st, err, sum.Files[0].Size, sum.FileBytes, sum.Bytes)
	}
	d := cmdtest.Probe(t, filepath.Join(dir, "x.mkv")).Duration(t).Seconds()
	if math.Abs(d-sum.Files[0].Media) > 0.0015 {
		t.Errorf("the file lasts %.4f s (ffprobe), the summary says %.4f s", d, sum.Files[0].Media)
	}
	if m := sum.Media.String(); len(m) > len("2.005") || !strings.HasPrefix(m, "2.0") {
		t.Errorf("media_seconds %s: want the recording's 2 s, to the millisecond", m)
	}
	for _, tr := range raw.PerTrack {
		n := func(k string) float64 { v, _ := tr[k].(float64); return v }
		if n("received") != n("written")+n("dropped_late")+n("dropped_by_muxer")+n("after_end") {
			t.Errorf("track %v: received is not written + dropped + after the end", tr)
		}
	}
	if !strings.Contains(r.Stderr, "wrote x.mkv: 00:00:02.0, ") || !strings.Contains(r.Stderr, "recorded 00:00:02.0 in 1 file: ") {
		t.Errorf("stderr does not say the 2 s the file lasts:\n%s", r.Stderr)
	}
	if !strings.Contains(r.Stderr, "kB of media, "+formatKB(st.Size())+" of files") {
		t.Errorf("stderr does not give both payload and file bytes:\n%s", r.Stderr)
	}
	// /dev/null is no file that was written.
	r = cmdtest.Run(t, dir, "--duration", "1s", "-f", "mkv", "-o", os.DevNull)
	if r.Code != 0 || strings.Contains(r.Stderr, "wrote "+os.DevNull) {
		t.Errorf("-o /dev/null: exit %d\n%s", r.Code, r.Stderr)
	}
}

// formatKB is the command's rendering of a size in kB.
func formatKB(n int64) string {
	return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + " kB"
}

// TestUsageErrorsAreJSONRecords: under --log-format json a usage error is
// a record with its exit code, whether or not its flag came first.
func TestUsageErrorsAreJSONRecords(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--log-format", "json", "-f", "avi"}, {"--bogus", "--log-format", "json"}, {"--log-format=json", "--duration", "5"}} {
		r := cmdtest.Run(t, t.TempDir(), args...)
		var rec logRecord
		if err := json.Unmarshal([]byte(strings.TrimSpace(r.Stderr)), &rec); err != nil || r.Code != 2 || rec.Level != "ERROR" || rec.Kind != "usage" || rec.ExitCode == nil || *rec.ExitCode != 2 {
			t.Errorf("%v: exit %d, stderr %q (%v)", args, r.Code, r.Stderr, err)
		}
	}
}
