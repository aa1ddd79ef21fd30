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

// fileFlushInterval bounds how long written media may sit in a file
// output's buffer: a recorder killed with SIGKILL (or a machine that loses
// power) keeps everything up to that long before. Muxers write their
// output playable as it grows (MKV and FLV live forms, TS packets), so the
// file is playable up to there.
const fileFlushInterval = 500 * time.Millisecond

// flushingWriter buffers writes and flushes them at least every interval
// from its own goroutine, so output goes out in large blocks yet never sits
// in memory for long. The first write error sticks (bufio.Writer's): every
// later Write and Flush returns it, whichever goroutine met it.
type flushingWriter struct {
	mu   sync.Mutex
	w    *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

func newFlushingWriter(w io.Writer, size int, interval time.Duration) *flushingWriter {
	o := &flushingWriter{w: bufio.NewWriterSize(w, size), stop: make(chan struct{}), done: make(chan struct{})}
	go o.flusher(interval)
	return o
}

func (o *flushingWriter) flusher(interval time.Duration) {
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

// Write buffers p. What reaches the file always ends where a Write ended
// (a whole frame, packet or element): when p does not fit, what is
// buffered goes out first, so a recorder killed at any moment leaves no
// half frame behind.
func (o *flushingWriter) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(p) > o.w.Available() && o.w.Buffered() > 0 {
		if err := o.w.Flush(); err != nil {
			return 0, err
		}
	}
	return o.w.Write(p)
}

// finish stops the flusher and writes what is left.
func (o *flushingWriter) finish() error {
	select {
	case <-o.stop:
	default:
		close(o.stop)
	}
	<-o.done
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.w.Flush()
}

// fileOutput is a buffered io.WriteSeeker over a file, so muxers that
// finalize by seeking (MKV cues and duration, FLV duration) can, while
// writes still go out in large blocks, and at least every
// fileFlushInterval.
type fileOutput struct {
	*flushingWriter
	f *os.File
}

func newFileOutput(f *os.File) *fileOutput {
	return &fileOutput{flushingWriter: newFlushingWriter(appendOrUndo{f}, outputBufferSize, fileFlushInterval), f: f}
}

// Write buffers p; a failed write of the file is a *writeError.
func (o *fileOutput) Write(p []byte) (int, error) {
	n, err := o.flushingWriter.Write(p)
	if err != nil {
		err = &writeError{path: o.f.Name(), err: err}
	}
	return n, err
}

// writeError is a failed write of a file output: the recording to that
// file ends (a write error sticks), and what was written before stays
// playable.
type writeError struct {
	path string
	err  error
}

func (e *writeError) Error() string {
	hint := ""
	if errors.Is(e.err, syscall.ENOSPC) || errors.Is(e.err, syscall.EDQUOT) || errors.Is(e.err, syscall.EFBIG) {
		hint = " (the disk is full, or the file reached a size limit)"
	}
	return fmt.Sprintf("writing %s failed: %v%s; its recording stopped, and what was written before stays playable", e.path, e.err, hint)
}

func (e *writeError) Unwrap() error { return e.err }

// appendOrUndo writes to a file; an append that fails part way (a full
// disk writes what fits) is cut back off, so the file still ends where a
// muxer's write ended and stays playable to there.
type appendOrUndo struct{ f *os.File }

func (a appendOrUndo) Write(p []byte) (int, error) {
	pos, perr := a.f.Seek(0, io.SeekCurrent)
	st, serr := a.f.Stat()
	n, err := a.f.Write(p)
	if err != nil && n > 0 && perr == nil && serr == nil && pos == st.Size() {
		if a.f.Truncate(pos) == nil {
			_, _ = a.f.Seek(pos, io.SeekStart)
			n = 0
		}
	}
	return n, err
}

// Seek flushes what is buffered, then seeks the file. A file that cannot
// seek (a pipe given as a path) reports an error, which muxers take as "live
// output, do not finalize".
func (o *fileOutput) Seek(offset int64, whence int) (int64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.w.Flush(); err != nil {
		return 0, err
	}
	return o.f.Seek(offset, whence)
}

// Close flushes and closes the file.
func (o *fileOutput) Close() error {
	err := o.finish()
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// streamOutput buffers writes to a pipe (stdout) and flushes them at least
// every interval, so a player reading the pipe gets the media without
// waiting for a full buffer, and the pipe does not see one syscall per TS
// packet. After a player closed the pipe every write fails at once.
type streamOutput struct{ *flushingWriter }

func newStreamOutput(w io.Writer, interval time.Duration) *streamOutput {
	return &streamOutput{newFlushingWriter(w, 64<<10, interval)}
}

// Close stops the flusher and writes what is left. It does not close the
// underlying writer.
func (o *streamOutput) Close() error { return o.finish() }

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
