package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/record"
)

func TestFormatProgressShowsEveryCounter(t *testing.T) {
	got := FormatProgress(Snapshot{Media: 83*time.Second + 450*time.Millisecond, Recording: 1, Tracks: 2, Frames: 2512,
		Bytes: 12_345_678, Late: 3, Dropped: 4, Reconnects: 1})
	want := "00:01:23.4  2 tracks  2512 frames  12.3 MB  1.18 Mbit/s  late 3  dropped 4  reconnects 1"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	got = FormatProgress(Snapshot{Media: time.Minute, Recording: 1, Tracks: 2, Lost: 4200 * time.Millisecond, Reconnects: 1})
	if !strings.HasSuffix(got, "late 0  dropped 0  lost 4.2s  reconnects 1") {
		t.Errorf("with a gap: %q", got)
	}
	got = FormatProgress(Snapshot{Media: time.Minute, Recording: 1, Tracks: 2, Upload: record.UploadStats{BytesWritten: 30e6, BytesUploaded: 25_100_000,
		SpoolBytes: 9_000_000, Retries: 2, Latency: 412345 * time.Microsecond, Cuts: 1}})
	if !strings.HasSuffix(got, "reconnects 0  uploaded 25.1 MB  spool 9.0 MB  retries 2  part 412ms  cut 1 (spool full)") {
		t.Errorf("with an object store: %q", got)
	}
	got = FormatProgress(Snapshot{Recording: 3, Tracks: 1})
	if !strings.HasPrefix(got, "00:00:00.0  3 recording  1 track  0 frames  0 B  - kbit/s") {
		t.Errorf("got %q", got)
	}
}

func TestFormatUnits(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{formatClock(0), "00:00:00.0"},
		{formatClock(-time.Second), "00:00:00.0"},
		{formatClock(25*time.Hour + 61*time.Second + 990*time.Millisecond), "25:01:01.9"},
		{formatBytes(999), "999 B"},
		{formatBytes(1500), "1.5 kB"},
		{formatBytes(2_500_000_000), "2.50 GB"},
		{formatBitrate(125_000, time.Second), "1.00 Mbit/s"},
		{formatBitrate(16_000, 2*time.Second), "64 kbit/s"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestConsoleRedrawsProgressInPlaceOnATerminal(t *testing.T) {
	var buf bytes.Buffer
	c := newConsole(&buf, true, nil)
	c.Status("one")
	c.Status("two")
	c.Write([]byte("a log line\n"))
	c.Status("three")
	c.EndStatus()
	want := "\rone\x1b[K\rtwo\x1b[K\r\x1b[Ka log line\n\rthree\x1b[K\n"
	if buf.String() != want {
		t.Errorf("got %q\nwant %q", buf.String(), want)
	}
}

func TestConsoleWritesProgressLinesWhenNotATerminal(t *testing.T) {
	var buf bytes.Buffer
	c := newConsole(&buf, false, nil)
	c.Status("one")
	c.Write([]byte("log\n"))
	c.Status("two")
	c.EndStatus()
	if buf.String() != "one\nlog\ntwo\n" {
		t.Errorf("got %q", buf.String())
	}
}

func TestRunProgressPrintsAFinalLine(t *testing.T) {
	var buf bytes.Buffer
	c := newConsole(&buf, false, nil)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	done := make(chan struct{})
	go func() {
		runProgress(ctx, c, 5*time.Millisecond, func() Snapshot { n++; return Snapshot{Frames: int64(n), Recording: 1} })
		close(done)
	}()
	time.Sleep(30 * time.Millisecond)
	cancel()
	<-done
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) < 2 || !strings.Contains(lines[len(lines)-1], " frames") {
		t.Errorf("lines %q", lines)
	}
}
