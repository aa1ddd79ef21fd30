package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/moq-export/moq-export/record"
)

// Snapshot is what the progress line shows.
type Snapshot struct {
	Media      time.Duration // media time written (the longest of all recordings)
	Recording  int           // broadcasts being recorded; shown when not 1
	Tracks     int
	Frames     int64
	Bytes      int64
	Late       int64
	Dropped    int64
	Lost       time.Duration // the most media time one track lost to gaps
	Reconnects int64
	// Upload is the object store's accounting (-o s3://...); shown when
	// it has written anything.
	Upload record.UploadStats
}

// FormatProgress renders one progress line, for example
//
//	00:01:23.4  2 tracks  2512 frames  12.3 MB  1.20 Mbit/s  late 0  dropped 0  reconnects 0
func FormatProgress(s Snapshot) string {
	var b strings.Builder
	b.WriteString(formatClock(s.Media))
	if s.Recording != 1 {
		fmt.Fprintf(&b, "  %d recording", s.Recording)
	}
	fmt.Fprintf(&b, "  %d %s  %d frames  %s  %s  late %d  dropped %d",
		s.Tracks, plural(s.Tracks, "track", "tracks"), s.Frames, formatBytes(s.Bytes),
		formatBitrate(s.Bytes, s.Media), s.Late, s.Dropped)
	if s.Lost > 0 {
		fmt.Fprintf(&b, "  lost %.1fs", s.Lost.Seconds())
	}
	fmt.Fprintf(&b, "  reconnects %d", s.Reconnects)
	if u := s.Upload; u.BytesWritten > 0 {
		fmt.Fprintf(&b, "  uploaded %s  spool %s  retries %d", formatBytes(u.BytesUploaded), formatBytes(u.SpoolBytes), u.Retries)
		if u.Latency > 0 {
			fmt.Fprintf(&b, "  part %v", u.Latency.Round(time.Millisecond))
		}
		if u.Cuts > 0 {
			fmt.Fprintf(&b, "  cut %d (spool full)", u.Cuts)
		}
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// formatClock renders d as HH:MM:SS.t.
func formatClock(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	tenths := d / (100 * time.Millisecond)
	return fmt.Sprintf("%02d:%02d:%02d.%d", tenths/36000, tenths/600%60, tenths/10%60, tenths%10)
}

// formatBytes renders n in decimal units (kB = 1000 bytes, as ffmpeg does).
func formatBytes(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000_000:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	case n < 1000_000_000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.2f GB", float64(n)/1e9)
}

// formatBitrate renders the average payload bitrate over media time d.
func formatBitrate(n int64, d time.Duration) string {
	if d <= 0 {
		return "- kbit/s"
	}
	bps := float64(n) * 8 / d.Seconds()
	if bps >= 1e6 {
		return fmt.Sprintf("%.2f Mbit/s", bps/1e6)
	}
	return fmt.Sprintf("%.0f kbit/s", bps/1e3)
}

// console serializes everything written to stderr: log records and the
// progress line. On a terminal the progress line is redrawn in place and a
// log record first clears it. Every write passes through the redactor, so
// a token can reach stderr from no path.
type console struct {
	mu     sync.Mutex
	w      io.Writer
	term   bool
	shown  bool // a progress line is on screen without a newline
	redact *strings.Replacer
	more   []*strings.Replacer // secrets learnt after the start (addSecret)
}

func newConsole(w io.Writer, term bool, redact *strings.Replacer) *console {
	return &console{w: w, term: term, redact: redact}
}

// addSecret scrubs s (and its URL-escaped form) from everything written
// from now on.
func (c *console) addSecret(s string) {
	if len(s) < 4 {
		return
	}
	pairs := []string{s, "REDACTED"}
	if e := url.QueryEscape(s); e != s {
		pairs = append(pairs, e, "REDACTED")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.more = append(c.more, strings.NewReplacer(pairs...))
}

// Write writes log output.
func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shown {
		io.WriteString(c.w, "\r\x1b[K")
		c.shown = false
	}
	s := string(p)
	if c.redact != nil {
		s = c.redact.Replace(s)
	}
	for _, r := range c.more {
		s = r.Replace(s)
	}
	if _, err := io.WriteString(c.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Status shows a progress line: in place on a terminal, as a new line
// otherwise.
func (c *console) Status(line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.term {
		io.WriteString(c.w, "\r"+line+"\x1b[K")
		c.shown = true
		return
	}
	io.WriteString(c.w, line+"\n")
}

// EndStatus ends the progress line on a terminal so what follows starts on
// its own line.
func (c *console) EndStatus() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shown {
		io.WriteString(c.w, "\n")
		c.shown = false
	}
}

// logProgress logs get() as a "progress" record every interval until ctx
// ends, then once more: the progress line of --log-format json.
func logProgress(ctx context.Context, log *slog.Logger, interval time.Duration, get func() Snapshot) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		done := false
		select {
		case <-ctx.Done():
			done = true
		case <-t.C:
		}
		s := get()
		notice(log, "progress", "media", s.Media.Seconds(), "recording", s.Recording, "tracks", s.Tracks, "frames", s.Frames,
			"bytes", s.Bytes, "late", s.Late, "dropped", s.Dropped, "reconnects", s.Reconnects,
			"uploaded", s.Upload.BytesUploaded, "spool", s.Upload.SpoolBytes, "retries", s.Upload.Retries, "upload_latency", s.Upload.Latency.Seconds())
		if done {
			return
		}
	}
}

// runProgress shows get() every interval until ctx ends, then once more.
func runProgress(ctx context.Context, c *console, interval time.Duration, get func() Snapshot) {
	t := time.NewTicker(interval)
	defer t.Stop()
	last := ""
	for {
		select {
		case <-ctx.Done():
			if line := FormatProgress(get()); line != last || c.term {
				c.Status(line)
			}
			c.EndStatus()
			return
		case <-t.C:
			last = FormatProgress(get())
			c.Status(last)
		}
	}
}
