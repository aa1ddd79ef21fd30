package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestLogTimeBeginsEveryTextLineWithTheUTCTime: --log-time begins each
// log line of a run (notices, -v's info, the closing summary's, and the
// error a failed run exits with) with the time it was said, in UTC to the
// millisecond, within the run's span, so that a recovery's length can be
// read from a log kept in a file; without it the lines are as before.
func TestLogTimeBeginsEveryTextLineWithTheUTCTime(t *testing.T) {
	stamped := regexp.MustCompile(`^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) moq-export: `)
	// A run that fails: its output's directory is a file.
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, run := range []struct {
		stamp bool
		out   string
		exit  int
	}{
		{true, filepath.Join(t.TempDir(), "x.mkv"), ExitOK},
		{false, filepath.Join(t.TempDir(), "x.mkv"), ExitOK},
		{true, filepath.Join(notDir, "x.mkv"), ExitRuntime},
		{false, filepath.Join(notDir, "x.mkv"), ExitRuntime},
	} {
		stamp := run.stamp
		args := []string{"--duration", "1s", "-v", "-o", run.out}
		if stamp {
			args = append(args, "--log-time")
		}
		var stderr bytes.Buffer
		begin := time.Now().UTC().Truncate(time.Millisecond)
		if code := Execute(context.Background(), args, Env{Stdout: &bytes.Buffer{}, Stderr: &stderr}); code != run.exit {
			t.Fatalf("exit %d, want %d: %s", code, run.exit, stderr.String())
		}
		end := time.Now().UTC()
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if run.exit == ExitOK && len(lines) < 3 {
			t.Fatalf("%d lines: the test proves nothing\n%s", len(lines), stderr.String())
		}
		if last := lines[len(lines)-1]; run.exit != ExitOK && !strings.Contains(last, "moq-export: error: creating the output directory") {
			t.Fatalf("the failed run's last line is not its error: %q", last)
		}
		var prev time.Time
		for _, line := range lines {
			m := stamped.FindStringSubmatch(line)
			if !stamp {
				if m != nil || !strings.HasPrefix(line, "moq-export: ") {
					t.Errorf("without --log-time: %q", line)
				}
				continue
			}
			if m == nil {
				t.Errorf("with --log-time, a line without its time: %q", line)
				continue
			}
			at, err := time.Parse(stampLayout, m[1])
			if err != nil || at.Before(begin) || at.After(end) || at.Before(prev) {
				t.Errorf("time %s (%v) out of the run's span %v-%v or before the line before (%v): %q", m[1], err, begin, end, prev, line)
			}
			prev = at
		}
	}
}
