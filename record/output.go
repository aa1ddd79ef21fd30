package record

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Output is where a Recorder's files go. Files and Stream are the two the
// command uses besides objstore.Output (S3); a service can write
// somewhere else by implementing it: finalization needs nothing but a
// File that can Seek, or, for a File that uploads while recording, a
// RemoteFile.
type Output interface {
	// Create opens output number n (the segment, from 0) of broadcast,
	// which starts at start. The broadcast name is untrusted.
	Create(broadcast string, n int, start time.Time) (File, error)
	// DefaultFormat is the format the output implies ("" for none): the
	// extension of a file path, TS for a stream.
	DefaultFormat() Format
	// Check refuses options the output cannot honour (segments into one
	// file name, several broadcasts into one stream).
	Check(Options) error
}

// File is one output: media is written to it, Close finishes it. When it
// is also an io.Seeker whose Seek works, MKV, FLV and MP4 finalize the file
// (cues and duration, the onMetaData duration, the moov box) when the
// recording ends; otherwise they write a live stream.
type File interface {
	io.Writer
	io.Closer
	// Name names the file in logs and events ("-" for a stream).
	Name() string
}

// FileOptions configure Files.
type FileOptions struct {
	// Overwrite lets a plain path (no placeholder) replace an existing
	// file; without it Create fails with an error wrapping ErrExists.
	// Templates never overwrite: they add -1, -2, ... to the name.
	Overwrite bool
}

// ErrExists is wrapped by the refusal to overwrite a file (an
// *ExistsError).
var ErrExists = errors.New("exists")

// ExistsError is the refusal to replace an output that exists (a file, an
// object) without FileOptions.Overwrite, or the like option of the
// Output. It wraps ErrExists.
type ExistsError struct {
	Path string // the file's path, or the object's URL
}

func (e *ExistsError) Error() string { return e.Path + " already exists" }

func (e *ExistsError) Unwrap() error { return ErrExists }

// Files returns the Output that writes files named by template: a plain
// path, or one with {broadcast} (the broadcast name made safe, see
// SafeName), {n} (segment number) and {time} (UTC start time). A file never
// leaves the template's output directory; each is written through a
// seekable buffer, so containers finalize. A file:// URL names its path;
// any other URL (s3://...) is an error wrapping ErrScheme, never a local
// directory named after the scheme.
func Files(template string, o FileOptions) (Output, error) {
	path, err := LocalPath(template)
	if err != nil {
		return nil, err
	}
	t, err := ParseTemplate(path)
	if err != nil {
		return nil, err
	}
	return &files{t: t, opts: o}, nil
}

type files struct {
	t    Template
	opts FileOptions
}

func (f *files) DefaultFormat() Format {
	ff, _ := FormatFromPath(f.t.String())
	return ff
}

func (f *files) Check(o Options) error {
	if o.Segment > 0 && !f.t.Has("n") && !f.t.Has("time") {
		return fmt.Errorf("%w: Segment writes several files, but %q would give them one name: add {n} or {time}, e.g. 'rec/{broadcast}-{n}%s'", ErrTemplate, f.t, o.Format.Ext())
	}
	return nil
}

// Template returns the template the files are named by.
func (f *files) Template() Template { return f.t }

func (f *files) Create(broadcast string, n int, start time.Time) (File, error) {
	if !f.t.IsTemplate() {
		path := f.t.String()
		if dir := filepath.Dir(path); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("creating the output directory: %w; check the path and its permissions", err)
			}
		}
		file, err := createFile(path, f.opts.Overwrite)
		if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
			return nil, outOfFiles(path, err)
		}
		if errors.Is(err, ErrExists) {
			return nil, &ExistsError{Path: path}
		}
		if err != nil {
			return nil, fmt.Errorf("creating the output: %w; check the path and its permissions", err)
		}
		return NewFileOutput(file), nil
	}
	p, err := f.t.Expand(broadcast, n, start)
	if err != nil {
		return nil, err
	}
	file, created, err := createUnique(f.t.Dir(), p)
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		return nil, outOfFiles(p, err)
	}
	if err != nil {
		// The error names its path relative to the template's directory
		// (an os.Root): say the file.
		return nil, fmt.Errorf("creating the output %s: %w; check the path and its permissions", p, err)
	}
	o := NewFileOutput(file)
	o.name = created
	return o, nil
}

// Stream returns the Output that writes one stream to w (stdout, a pipe):
// buffered, and flushed within 50 ms of a write so a player reading the pipe
// gets the media without waiting. Containers do not finalize (w cannot
// seek); one broadcast, no segments. Closing the output does not close w.
func Stream(w io.Writer) Output { return &stream{w: w} }

type stream struct {
	w    io.Writer
	used bool
}

func (s *stream) DefaultFormat() Format { return TS }

// Live implements LiveOutput: a player reads a Stream as it is written.
func (s *stream) Live() bool { return true }

func (s *stream) Check(o Options) error {
	if o.Segment > 0 {
		return errors.New("record: Segment writes several files, but a Stream is one: use Files with {n} in the template")
	}
	return nil
}

func (s *stream) Create(string, int, time.Time) (File, error) {
	if s.used {
		return nil, errors.New("record: a Stream takes one recording")
	}
	s.used = true
	return &namedStream{newStreamOutput(s.w, 50*time.Millisecond)}, nil
}

type namedStream struct{ *streamOutput }

func (namedStream) Name() string { return "-" }

// outputBufferSize is how much a file output gathers before a write: muxers
// write one frame (or one 188-byte TS packet) at a time.
const outputBufferSize = 1 << 20

// fileFlushInterval bounds how long written media may sit in a file
// output's buffer: a recorder killed with SIGKILL (or a machine that loses
// power) keeps everything up to that long before. Muxers write their
// output playable as it grows (MKV and FLV live forms, TS packets, MP4
// fragments), so the file is playable up to there.
const fileFlushInterval = 500 * time.Millisecond

// flushingWriter buffers writes and flushes them at most interval after
// they were buffered, so output goes out in large blocks yet never sits in
// memory for long. The flush is a timer armed by the first write into an
// empty buffer; the buffer grows with what a recording writes per interval
// (up to size) and is let go after an interval without writes. So an idle
// output (nothing buffered) holds no buffer and costs no goroutine, no
// ticker and no wakeup, which is what lets a process hold a thousand idle
// recordings, while an active one keeps its buffer. The first write error
// sticks, as bufio.Writer's does: every later Write and Flush returns it,
// whichever goroutine met it.
type flushingWriter struct {
	mu       sync.Mutex
	w        io.Writer
	size     int
	buf      []byte // nil while idle
	wrote    bool   // written since the last timed flush
	err      error
	interval time.Duration
	timer    *time.Timer // nil until the first write
	armed    bool        // the timer will fire
	finished bool
	// whole is w as a wholeWriter (nil when it is not); ends then holds
	// where each Write buffered in buf ends, so that a write that fails
	// part way keeps the Writes that fit.
	whole wholeWriter
	ends  []int
	// behind makes a full buffer go out on a goroutine of its own while
	// the next one fills (writeBehindLocked); inflight is closed when
	// that write ended, having set behindErr and returned its buffer
	// (done).
	behind    bool
	inflight  chan struct{}
	behindErr error
	done      []byte
	doneEnds  []int
}

// wholeWriter is a writer told where the Writes of a muxer that p holds
// end (ascending offsets in p, the last len(p)): an append that fails
// part way keeps the whole ones that fit (appendOrUndo).
type wholeWriter interface {
	WriteWhole(p []byte, ends []int) (int, error)
}

// firstBufferSize is the buffer a writer starts with; it grows by need.
const firstBufferSize = 4 << 10

func newFlushingWriter(w io.Writer, size int, interval time.Duration) *flushingWriter {
	whole, _ := w.(wholeWriter)
	return &flushingWriter{w: w, size: size, interval: interval, whole: whole}
}

// write writes b, whose Writes end at ends, to the writer.
func (o *flushingWriter) write(b []byte, ends []int) (int, error) {
	if o.whole != nil {
		return o.whole.WriteWhole(b, ends)
	}
	return o.w.Write(b)
}

// flushLocked writes what is buffered. What a failed write left behind is
// dropped: the error sticks, and nothing is written after it.
func (o *flushingWriter) flushLocked() error {
	if err := o.waitLocked(); err != nil {
		return err
	}
	if len(o.buf) == 0 {
		return nil
	}
	_, err := o.write(o.buf, o.ends)
	o.buf, o.ends = o.buf[:0], o.ends[:0]
	o.err = err
	return err
}

// waitLocked waits for the write behind, if one runs, and returns the
// sticky error.
func (o *flushingWriter) waitLocked() error {
	if o.inflight != nil {
		<-o.inflight
		o.inflight = nil
		if o.err == nil {
			o.err = o.behindErr
		}
	}
	return o.err
}

// writeBehindLocked hands the full buffer to a goroutine that writes it,
// and fills the buffer it wrote last meanwhile: the writer of the media
// (a muxer on the export's goroutine) does not wait for the system call,
// which goes on beside it on another core. One write is behind at most.
func (o *flushingWriter) writeBehindLocked() error {
	if err := o.waitLocked(); err != nil {
		return err
	}
	full, fullEnds := o.buf, o.ends
	o.buf, o.done = o.done[:0], nil
	o.ends, o.doneEnds = o.doneEnds[:0], nil
	done := make(chan struct{})
	o.inflight = done
	go func() {
		_, o.behindErr = o.write(full, fullEnds)
		o.done, o.doneEnds = full, fullEnds
		close(done)
	}()
	return nil
}

// armLocked starts the flush timer when something is buffered and no flush
// is due yet.
func (o *flushingWriter) armLocked() {
	if o.armed || o.finished || len(o.buf) == 0 {
		return
	}
	o.armed = true
	if o.timer == nil {
		o.timer = time.AfterFunc(o.interval, o.timedFlush)
		return
	}
	o.timer.Reset(o.interval)
}

// timedFlush is the timer's: it writes what is buffered. After writes it
// fires once more an interval later (flushing what came meanwhile); when
// none came, it lets the buffer go and stays off until the next write.
func (o *flushingWriter) timedFlush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.finished {
		o.armed = false
		return
	}
	_ = o.flushLocked() // an error sticks for the next Write
	if o.wrote {
		o.wrote = false
		o.timer.Reset(o.interval)
		return
	}
	o.armed = false
	o.buf, o.done, o.ends, o.doneEnds = nil, nil, nil, nil
}

// Write buffers p. What reaches the file always ends where a Write ended
// (a whole frame, packet or element): when p does not fit, what is
// buffered goes out first, so a recorder killed at any moment leaves no
// half frame behind. A write as large as the buffer goes out at once.
func (o *flushingWriter) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return 0, o.err
	}
	if len(o.buf) > 0 && len(p) > o.size-len(o.buf) {
		flush := o.flushLocked
		if o.behind {
			flush = o.writeBehindLocked
		}
		if err := flush(); err != nil {
			return 0, err
		}
	}
	if len(p) >= o.size {
		if err := o.waitLocked(); err != nil {
			return 0, err
		}
		n, err := o.w.Write(p)
		o.err = err
		return n, err
	}
	if cap(o.buf)-len(o.buf) < len(p) {
		// Grow by doubling, never beyond size (what does not fit was
		// flushed above).
		grown := make([]byte, len(o.buf), min(o.size, max(firstBufferSize, 2*cap(o.buf), len(o.buf)+len(p))))
		copy(grown, o.buf)
		o.buf = grown
	}
	o.buf = append(o.buf, p...)
	if o.whole != nil {
		o.ends = append(o.ends, len(o.buf))
	}
	o.wrote = true
	o.armLocked()
	return len(p), nil
}

// Flush writes what is buffered.
func (o *flushingWriter) Flush() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.flushLocked()
}

// finish stops the flush timer, writes what is left and lets the buffer
// go.
func (o *flushingWriter) finish() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.finished, o.armed = true, false
	if o.timer != nil {
		o.timer.Stop() // a flush already running finds finished set
	}
	err := o.flushLocked()
	o.buf, o.done, o.ends, o.doneEnds = nil, nil, nil, nil
	return err
}

// FileOutput is a buffered io.WriteSeeker over a file, so muxers that
// finalize by seeking (MKV cues and duration, FLV duration, the MP4 moov)
// can, while writes still go out in large blocks. A plain bufio.Writer
// cannot seek: the container would silently stay unfinished. What is
// buffered goes to the file within 500 ms of its write, and a failed write
// is a *WriteError.
type FileOutput struct {
	*flushingWriter
	f    *os.File
	name string
}

// NewFileOutput returns the buffered output over f; Close closes f.
func NewFileOutput(f *os.File) *FileOutput {
	w := newFlushingWriter(&appendOrUndo{f: f}, outputBufferSize, fileFlushInterval)
	w.behind = true
	return &FileOutput{flushingWriter: w, f: f, name: f.Name()}
}

// Name returns the file's path.
func (o *FileOutput) Name() string { return o.name }

// LocalPath implements LocalFile: the file's path.
func (o *FileOutput) LocalPath() string { return o.name }

// FlushesItself implements SelfFlushingFile: what is written goes to the
// file in blocks up to 1 MB, within 500 ms of its write, so a muxer's
// flushes are not passed on.
func (o *FileOutput) FlushesItself() bool { return true }

// Size returns the size of the file on disk (after Close: its final size).
func (o *FileOutput) Size() int64 {
	st, err := os.Stat(o.name)
	if err != nil {
		return 0
	}
	return st.Size()
}

// Write buffers p; a failed write of the file is a *WriteError.
func (o *FileOutput) Write(p []byte) (int, error) {
	n, err := o.flushingWriter.Write(p)
	if err != nil {
		err = &WriteError{Path: o.name, Err: err}
	}
	return n, err
}

// Flush writes what is buffered; a failed write is a *WriteError.
func (o *FileOutput) Flush() error {
	if err := o.flushingWriter.Flush(); err != nil {
		return &WriteError{Path: o.name, Err: err}
	}
	return nil
}

// Seek flushes what is buffered, then seeks the file. A file that cannot
// seek (a pipe given as a path) reports an error, which muxers take as "live
// output, do not finalize".
func (o *FileOutput) Seek(offset int64, whence int) (int64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.flushLocked(); err != nil {
		return 0, &WriteError{Path: o.name, Err: err}
	}
	return o.f.Seek(offset, whence)
}

// Close flushes and closes the file, giving back the blocks reserved past
// its end.
func (o *FileOutput) Close() error {
	err := o.finish()
	if err != nil {
		err = &WriteError{Path: o.name, Err: err}
	}
	if a, ok := o.w.(*appendOrUndo); ok {
		a.unreserve(o.f)
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// appendOrUndo writes to a file; an append that fails part way (a full
// disk writes what fits) is cut back to the end of the last whole Write
// of a muxer it holds (WriteWhole: a buffer of them; Write: one), so the
// file still ends where a muxer's write ended and stays playable to
// there, with all the media that fit. An append first
// reserves the blocks it and the next ones fill (reserve), where that is
// cheaper than letting the file system find them page by page.
type appendOrUndo struct {
	f *os.File
	reservation
}

func (a *appendOrUndo) Write(p []byte) (int, error) { return a.WriteWhole(p, nil) }

// WriteWhole writes p, which holds whole Writes of a muxer ending at ends;
// an append that fails part way keeps those that fit and cuts the rest
// off. A buffer flushed late (a starved flush timer, a recorder catching
// up) can hold seconds of media: cut back to where it began, the file lost
// them all, and one whose first flush failed so was left empty.
func (a *appendOrUndo) WriteWhole(p []byte, ends []int) (int, error) {
	pos, perr := a.f.Seek(0, io.SeekCurrent)
	st, serr := a.f.Stat()
	appending := perr == nil && serr == nil && pos == st.Size()
	if appending {
		a.reserve(a.f, pos, pos+int64(len(p)))
	}
	n, err := a.f.Write(p)
	if err != nil && n > 0 && appending {
		keep := 0
		for _, e := range ends {
			if e > n {
				break
			}
			keep = e
		}
		if keep == n {
			return n, err
		}
		if a.f.Truncate(pos+int64(keep)) == nil {
			_, _ = a.f.Seek(pos+int64(keep), io.SeekStart)
			n = keep
		}
	}
	return n, err
}

// WriteError is a failed write of a file output (a full disk, EIO): the
// recording to that file ends (a write error sticks), and what was written
// before stays playable.
type WriteError struct {
	Path string
	Err  error
}

func (e *WriteError) Error() string {
	hint := ""
	if errors.Is(e.Err, syscall.ENOSPC) || errors.Is(e.Err, syscall.EDQUOT) || errors.Is(e.Err, syscall.EFBIG) {
		hint = " (the disk is full, or the file reached a size limit)"
	}
	return fmt.Sprintf("writing %s failed: %v%s; its recording stopped, and what was written before stays playable", e.Path, e.Err, hint)
}

func (e *WriteError) Unwrap() error { return e.Err }

// streamOutput buffers writes to a pipe (stdout) and flushes them within
// interval of their write, so a player reading the pipe gets the media without
// waiting for a full buffer, and the pipe does not see one syscall per TS
// packet. After a player closed the pipe every write fails at once.
type streamOutput struct{ *flushingWriter }

func newStreamOutput(w io.Writer, interval time.Duration) *streamOutput {
	return &streamOutput{newFlushingWriter(w, 64<<10, interval)}
}

// Close stops the flush timer and writes what is left. It does not close the
// underlying writer.
func (o *streamOutput) Close() error { return o.finish() }

// createFile creates a plain output file. An existing regular file is
// truncated only when overwrite is set; otherwise the call fails with
// ErrExists, so a file that appeared since the command checked is not lost
// either. What is not a regular file (/dev/null, a FIFO) is opened for
// writing as it is.
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
		return nil, fmt.Errorf("%s %w", path, ErrExists)
	}
	return f, err
}
