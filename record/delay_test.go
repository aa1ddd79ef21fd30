package record

import (
	"bytes"
	"testing"
	"time"
)

// TestMaxDelayDefaults: files let the jitter delay grow (DefaultMaxDelay, or
// what Options say; negative: never), a Stream keeps Delay.
func TestMaxDelayDefaults(t *testing.T) {
	files, err := Files(t.TempDir()+"/{broadcast}.mkv", FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		out    Output
		max    time.Duration
		wantMx time.Duration
	}{
		{"file, default", files, 0, DefaultMaxDelay},
		{"file, set", files, 2 * time.Second, 2 * time.Second},
		{"file, never", files, -1, 0},
		{"stream", Stream(&bytes.Buffer{}), 0, 0},
		{"stream, set", Stream(&bytes.Buffer{}), 2 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Recorder{opts: Options{Output: tc.out, MaxDelay: tc.max}}
			if got := r.exportOptions().MaxDelay; got != tc.wantMx {
				t.Fatalf("MaxDelay %v, want %v", got, tc.wantMx)
			}
		})
	}
}

type flushCounter struct {
	bytes.Buffer
	flushes int
}

func (f *flushCounter) Flush() error { f.flushes++; return nil }

// TestCountWriterPassesFlushOn: MP4 flushes each whole fragment through
// the byte counter to the file's buffer; an output without Flush is fine.
func TestCountWriterPassesFlushOn(t *testing.T) {
	fc := &flushCounter{}
	cw := &countWriter{w: fc}
	var w interface{ Flush() error } = &countWriteSeeker{countWriter: cw}
	cw.Write([]byte("moof"))
	if err := w.Flush(); err != nil || fc.flushes != 1 || cw.n != 4 {
		t.Fatalf("flush: %v, %d flushes, %d bytes counted", err, fc.flushes, cw.n)
	}
	if err := (&countWriter{w: &bytes.Buffer{}}).Flush(); err != nil {
		t.Fatalf("flush without a Flush below: %v", err)
	}
}
