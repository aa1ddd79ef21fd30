package record

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestFileOutputBuffersAndSeeks(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	o := NewFileOutput(f)
	o.Write([]byte("hello "))
	o.Write(bytes.Repeat([]byte("a"), outputBufferSize+10)) // larger than the buffer
	o.Write([]byte(" world"))
	if pos, err := o.Seek(0, io.SeekCurrent); err != nil || pos != int64(6+outputBufferSize+10+6) {
		t.Fatalf("position %d, %v", pos, err)
	}
	o.Seek(0, io.SeekStart)
	o.Write([]byte("HELLO"))
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if len(b) != 6+outputBufferSize+10+6 || string(b[:6]) != "HELLO " || string(b[len(b)-6:]) != " world" {
		t.Errorf("file %q...%q (%d bytes)", b[:6], b[len(b)-6:], len(b))
	}
}

func TestStreamOutputFlushesWithoutMoreWrites(t *testing.T) {
	var w countingWriter
	o := newStreamOutput(&w, 5*time.Millisecond)
	defer o.Close()
	o.Write([]byte("frame"))
	deadline := time.Now().Add(2 * time.Second)
	for w.Len() != 5 {
		if time.Now().After(deadline) {
			t.Fatal("a small write never reached the pipe")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestBrokenPipeIsRecognizedAndSticks(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	o := newStreamOutput(w, time.Hour)
	defer w.Close()
	o.Write(bytes.Repeat([]byte("x"), 100<<10)) // over the buffer: written at once
	_, err = o.Write([]byte("more"))
	if !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("write after the reader left: %v, want EPIPE", err)
	}
	if err := o.Close(); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("Close: %v", err)
	}
}

// countingWriter counts what reaches it, safe to read while written.
type countingWriter struct{ n atomic.Int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n.Add(int64(len(p))); return len(p), nil }
func (c *countingWriter) Len() int                    { return int(c.n.Load()) }

func TestFileOutputFlushesWithinTheIntervalAndAtWriteBoundaries(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	o := NewFileOutput(f)
	defer o.Close()
	size := func() int64 {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	o.Write([]byte("frame"))
	deadline := time.Now().Add(10 * fileFlushInterval)
	for size() != 5 {
		if time.Now().After(deadline) {
			t.Fatal("a small write never reached the file")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A write that does not fit sends what is buffered first, whole.
	o.Write(bytes.Repeat([]byte("a"), outputBufferSize-100))
	o.Write(bytes.Repeat([]byte("b"), 200))
	o.mu.Lock()
	o.waitLocked() // the a's go out behind the b's buffering
	o.mu.Unlock()
	if got := size(); got != 5+outputBufferSize-100 {
		t.Fatalf("file is %d bytes, want %d: a write was split", got, 5+outputBufferSize-100)
	}
}

// failingWriter fails every write after the first n bytes, like a disk
// that fills up.
type failingWriter struct {
	n       int
	written bytes.Buffer
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.written.Len()+len(p) > w.n {
		return 0, syscall.ENOSPC
	}
	return w.written.Write(p)
}

func TestOutputWriteErrorSticks(t *testing.T) {
	w := &failingWriter{n: 10}
	o := newFlushingWriter(w, 64, time.Hour)
	o.Write([]byte("0123456789"))
	o.Write(bytes.Repeat([]byte("x"), 100)) // flushes the first write, then fails
	if _, err := o.Write([]byte("more")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write after the disk filled: %v", err)
	}
	if err := o.finish(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("finish: %v", err)
	}
	if w.written.String() != "0123456789" {
		t.Fatalf("written %q", w.written.String())
	}
}

func TestWriteErrorNamesTheFileAndTheFullDisk(t *testing.T) {
	err := error(&WriteError{Path: "rec/a.mkv", Err: syscall.ENOSPC})
	for _, want := range []string{"writing rec/a.mkv failed", "disk is full", "stays playable"} {
		if !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Error("does not unwrap to ENOSPC")
	}
}

// TestIdleOutputArmsNoTimer: an output with nothing buffered has no flush
// pending (no goroutine, ticker or wakeup) and holds no buffer; a write
// arms one flush, which disarms and gives the buffer back once it ran, and
// finish leaves nothing armed.
func TestIdleOutputArmsNoTimer(t *testing.T) {
	var w countingWriter
	o := newFlushingWriter(&w, 64, time.Millisecond)
	armed := func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.armed
	}
	if armed() || o.timer != nil {
		t.Fatal("a new output armed a flush")
	}
	for range 3 {
		o.Write([]byte("frame"))
		if !armed() {
			t.Fatal("a buffered write armed no flush")
		}
		for w.Len()%5 != 0 || armed() {
			time.Sleep(time.Millisecond) // the flush runs within the interval
		}
		o.mu.Lock()
		held := o.buf != nil
		o.mu.Unlock()
		if held {
			t.Fatal("an idle output kept its buffer after the timed flush")
		}
	}
	if w.Len() != 15 {
		t.Fatalf("flushed %d bytes, want 15", w.Len())
	}
	o.Write(bytes.Repeat([]byte("x"), 100)) // over the buffer: written at once
	if armed() {
		t.Error("a write that left nothing buffered armed a flush")
	}
	o.Write([]byte("tail"))
	if err := o.finish(); err != nil || w.Len() != 119 {
		t.Fatalf("finish: %v, %d bytes written, want 119", err, w.Len())
	}
	if o.Write([]byte("late")); armed() {
		t.Error("a write after finish armed a flush")
	}
}

// TestAMuxersFlushLeavesAFileOutputToWriteInLargeBlocks: MP4 asks for a
// flush after each fragment (for a bufio.Writer, which would split it); a
// file output passes on whole Writes anyway, so the flush must not reach
// it: a write per fragment (tens of kB) costs the kernel about twice what
// megabyte writes do (BenchmarkExportAnHourOfOneRenditionToMP4).
func TestAMuxersFlushLeavesAFileOutputToWriteInLargeBlocks(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	// The file output's own flush timer is kept out of the way.
	o := &FileOutput{flushingWriter: newFlushingWriter(&appendOrUndo{f: f}, outputBufferSize, time.Hour), f: f, name: p}
	cw := &countWriter{w: o}
	for i := range 3 {
		if _, err := cw.Write(bytes.Repeat([]byte{byte('a' + i)}, 60<<10)); err != nil {
			t.Fatal(err)
		}
		if err := cw.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := os.Stat(p); err != nil || st.Size() != 0 {
		t.Fatalf("after three fragments and their flushes the file holds %d bytes (%v), want them still buffered", st.Size(), err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); len(b) != 3*60<<10 || b[0] != 'a' || b[len(b)-1] != 'c' {
		t.Fatalf("file holds %d bytes, want the three fragments", len(b))
	}
}

// gatedWriter holds each Write until gate lets it go, keeping what was
// written; fail makes a write fail.
type gatedWriter struct {
	gate    chan struct{}
	entered chan struct{}
	mu      sync.Mutex
	written bytes.Buffer
	fail    error
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	g.entered <- struct{}{}
	<-g.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fail != nil {
		return 0, g.fail
	}
	return g.written.Write(p)
}

// TestAFullFileBufferIsWrittenBehindWhileTheNextFills: a file output's
// full buffer goes to the file on a goroutine of its own, and the writer
// of the media goes on filling the next one meanwhile (the export and the
// system call on two cores); whole Writes still reach the file in order,
// one write behind at most, and a failed write behind sticks as any.
func TestAFullFileBufferIsWrittenBehindWhileTheNextFills(t *testing.T) {
	for _, fail := range []bool{false, true} {
		g := &gatedWriter{gate: make(chan struct{}), entered: make(chan struct{}, 4)}
		o := newFlushingWriter(g, 64, time.Hour)
		o.behind = true
		a, b, c := bytes.Repeat([]byte("a"), 40), bytes.Repeat([]byte("b"), 40), bytes.Repeat([]byte("c"), 40)
		o.Write(a)
		returned := make(chan error, 1)
		go func() {
			_, err := o.Write(b) // a does not fit with b: a goes behind
			returned <- err
		}()
		<-g.entered // a's write runs, and is held
		select {
		case err := <-returned:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the write of b waited for the file to take a")
		}
		if fail {
			g.mu.Lock()
			g.fail = syscall.ENOSPC
			g.mu.Unlock()
		}
		g.gate <- struct{}{} // a's write ends
		go func() {
			_, err := o.Write(c) // waits for a, then b goes behind
			returned <- err
		}()
		if fail {
			if err := <-returned; !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("a write after the write behind failed: %v", err)
			}
			if err := o.finish(); !errors.Is(err, syscall.ENOSPC) || g.written.Len() != 0 {
				t.Fatalf("finish: %v, %d bytes written after the failure", err, g.written.Len())
			}
			continue
		}
		<-g.entered
		g.gate <- struct{}{} // b's write
		if err := <-returned; err != nil {
			t.Fatal(err)
		}
		go func() { returned <- o.finish() }()
		<-g.entered
		g.gate <- struct{}{} // c's, by finish
		if err := <-returned; err != nil {
			t.Fatal(err)
		}
		if want := string(a) + string(b) + string(c); g.written.String() != want {
			t.Fatalf("written %q, want %q", g.written.String(), want)
		}
	}
}

// TestAnOutputThatExistsIsRefusedWithItsPathAndNoFlag: a plain path that
// exists is not replaced without Overwrite; the refusal is an
// *ExistsError naming the path (the command adds its -y and -o advice),
// and the file is left as it was.
func TestAnOutputThatExistsIsRefusedWithItsPathAndNoFlag(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.mkv")
	if err := os.WriteFile(p, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := Files(p, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = out.Create("b", 0, time.Now())
	e, ok := errors.AsType[*ExistsError](err)
	if !ok || e.Path != p || !errors.Is(err, ErrExists) {
		t.Fatalf("Create over an existing file: %v, want an *ExistsError for %s wrapping ErrExists", err, p)
	}
	if msg := err.Error(); strings.Contains(msg, "-y") || strings.Contains(msg, "-o") {
		t.Errorf("the library's refusal %q names the command's flags", msg)
	}
	if b, _ := os.ReadFile(p); string(b) != "keep" {
		t.Errorf("the existing file now holds %q", b)
	}
}
