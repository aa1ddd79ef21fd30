package cli

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// outputBufferSize is how much a file output gathers before a write: muxers
// write one frame (or one 188-byte TS packet) at a time.
const outputBufferSize = 256 << 10

// fileOutput is a buffered io.WriteSeeker over a file, so muxers that
// finalize by seeking (MKV cues and duration, FLV duration) can, while
// writes still go out in large blocks.
type fileOutput struct {
	f   *os.File
	buf []byte
	err error
}

func newFileOutput(f *os.File) *fileOutput {
	return &fileOutput{f: f, buf: make([]byte, 0, outputBufferSize)}
}

func (o *fileOutput) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	if len(o.buf)+len(p) > cap(o.buf) {
		if err := o.flush(); err != nil {
			return 0, err
		}
		if len(p) >= cap(o.buf) {
			n, err := o.f.Write(p)
			o.err = err
			return n, err
		}
	}
	o.buf = append(o.buf, p...)
	return len(p), nil
}

func (o *fileOutput) flush() error {
	if o.err != nil {
		return o.err
	}
	if len(o.buf) == 0 {
		return nil
	}
	_, err := o.f.Write(o.buf)
	o.buf = o.buf[:0]
	o.err = err
	return err
}

// Seek flushes what is buffered, then seeks the file. A file that cannot
// seek (a pipe given as a path) reports an error, which muxers take as "live
// output, do not finalize".
func (o *fileOutput) Seek(offset int64, whence int) (int64, error) {
	if err := o.flush(); err != nil {
		return 0, err
	}
	return o.f.Seek(offset, whence)
}

// Close flushes and closes the file.
func (o *fileOutput) Close() error {
	err := o.flush()
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// streamOutput buffers writes to a pipe (stdout) and flushes them at least
// every interval, so a player reading the pipe gets the media without
// waiting for a full buffer, and the pipe does not see one syscall per TS
// packet. The first write error sticks: after a player closed the pipe
// every write fails at once.
type streamOutput struct {
	mu   sync.Mutex
	w    io.Writer
	buf  []byte
	err  error
	stop chan struct{}
	done chan struct{}
}

func newStreamOutput(w io.Writer, interval time.Duration) *streamOutput {
	o := &streamOutput{w: w, buf: make([]byte, 0, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
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
			_ = o.flushLocked()
			o.mu.Unlock()
		}
	}
}

func (o *streamOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return 0, o.err
	}
	if len(o.buf)+len(p) > cap(o.buf) {
		if err := o.flushLocked(); err != nil {
			return 0, err
		}
		if len(p) >= cap(o.buf) {
			n, err := o.w.Write(p)
			o.err = err
			return n, err
		}
	}
	o.buf = append(o.buf, p...)
	return len(p), nil
}

func (o *streamOutput) flushLocked() error {
	if o.err != nil || len(o.buf) == 0 {
		return o.err
	}
	_, err := o.w.Write(o.buf)
	o.buf = o.buf[:0]
	o.err = err
	return err
}

// Close stops the flusher and writes what is left. It does not close the
// underlying writer.
func (o *streamOutput) Close() error {
	close(o.stop)
	<-o.done
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.flushLocked()
}

// isBrokenPipe reports whether err says the reader of our output went away
// (a player that quit, `| head`).
func isBrokenPipe(err error) bool {
	return errors.Is(err, syscall.EPIPE)
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
