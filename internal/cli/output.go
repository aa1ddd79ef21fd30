package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/term"
)

// outputBufferSize is how much a file output gathers before a write: muxers
// write one frame (or one 188-byte TS packet) at a time.
const outputBufferSize = 256 << 10

// fileOutput is a buffered io.WriteSeeker over a file, so muxers that
// finalize by seeking (MKV cues and duration, FLV duration) can, while
// writes still go out in large blocks.
type fileOutput struct {
	f *os.File
	*bufio.Writer
}

func newFileOutput(f *os.File) *fileOutput {
	return &fileOutput{f: f, Writer: bufio.NewWriterSize(f, outputBufferSize)}
}

// Seek flushes what is buffered, then seeks the file. A file that cannot
// seek (a pipe given as a path) reports an error, which muxers take as "live
// output, do not finalize".
func (o *fileOutput) Seek(offset int64, whence int) (int64, error) {
	if err := o.Flush(); err != nil {
		return 0, err
	}
	return o.f.Seek(offset, whence)
}

// Close flushes and closes the file.
func (o *fileOutput) Close() error {
	err := o.Flush()
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// streamOutput buffers writes to a pipe (stdout) and flushes them at least
// every interval, so a player reading the pipe gets the media without
// waiting for a full buffer, and the pipe does not see one syscall per TS
// packet. The first write error sticks (bufio.Writer's): after a player
// closed the pipe every write fails at once.
type streamOutput struct {
	mu   sync.Mutex
	w    *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

func newStreamOutput(w io.Writer, interval time.Duration) *streamOutput {
	o := &streamOutput{w: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go o.flusher(interval)
	return o
}

func (o *streamOutput) flusher(interval time.Duration) {
	defer close(o.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-o.stop:
			return
		case <-t.C:
			o.mu.Lock()
			_ = o.w.Flush()
			o.mu.Unlock()
		}
	}
}

func (o *streamOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.w.Write(p)
}

// Close stops the flusher and writes what is left. It does not close the
// underlying writer.
func (o *streamOutput) Close() error {
	close(o.stop)
	<-o.done
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.w.Flush()
}

// isBrokenPipe reports whether err says the reader of our output went away
// (a player that quit, `| head`).
func isBrokenPipe(err error) bool {
	return errors.Is(err, syscall.EPIPE)
}

// isTerminal reports whether f is a terminal. /dev/null is a character
// device but no terminal: the check asks the terminal driver.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// errExists is wrapped by the refusal to overwrite a file.
var errExists = errors.New("exists")

// createFile creates the -o file. An existing regular file is truncated
// only when overwrite is set; otherwise the call fails with errExists, so a
// file that appeared since the question was asked is not lost either. What
// is not a regular file (/dev/null, a FIFO) is opened for writing as it is.
func createFile(path string, overwrite bool) (*os.File, error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return os.OpenFile(path, os.O_WRONLY, 0)
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if !overwrite {
		flags |= os.O_EXCL
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%s %w", path, errExists)
	}
	return f, err
}
