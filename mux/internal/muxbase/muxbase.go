package muxbase

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/moq-export/moq-export/mux"
)

// Output is a muxer's output: it writes whole buffers, counts the bytes
// written, and keeps the first error. The zero value is not usable; make
// one with NewOutput.
type Output struct {
	w      io.Writer
	format string // "mkv": the prefix of errors
	// Pos counts the bytes written so far.
	Pos int64
	// Err is the first error: a failed write, or one given to Fail.
	Err error
	// Closed is set by the muxer's Close.
	Closed bool
}

// NewOutput returns the Output over w of a muxer of format (the prefix of
// its errors: "flv", "mkv", "ts", "mp4").
func NewOutput(w io.Writer, format string) Output { return Output{w: w, format: format} }

// Write writes b whole: a write that takes less without an error is
// io.ErrShortWrite. A failure is wrapped as "FORMAT: write: ...", sticks,
// and is returned.
func (o *Output) Write(b []byte) error {
	n, err := o.w.Write(b)
	o.Pos += int64(n)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return o.Fail(fmt.Errorf("%s: write: %w", o.format, err))
	}
	return nil
}

// Fail makes err the sticky error, unless there is one already, and
// returns err.
func (o *Output) Fail(err error) error {
	if o.Err == nil {
		o.Err = err
	}
	return err
}

// Usable is what WriteFrame returns before it looks at a frame:
// mux.ErrClosed after Close, the sticky error after a failure, else nil.
func (o *Output) Usable() error {
	if o.Closed {
		return mux.ErrClosed
	}
	return o.Err
}

// UnknownTrack is the error for a track id the muxer does not have, in
// doing what ("frame for", "remove").
func (o *Output) UnknownTrack(what string, id int) error {
	return fmt.Errorf("%s: %s track %d: %w", o.format, what, id, mux.ErrUnknownTrack)
}

// MaxHeldBytes bounds the memory a Held holds.
const MaxHeldBytes = 64 << 20

// heldOverhead is what holding one frame costs beyond its payload (the
// entry in a slice that grows by doubling, the payload allocation's
// rounding), so that tiny frames count against MaxHeldBytes too.
const heldOverhead = 128

// Held is what a muxer holds, in order, while its header waits: frames,
// with their timestamps and sizes, and marks (entries without media, such
// as a discontinuity to apply in order). The zero value is empty.
type Held[T any] struct {
	entries     []held[T]
	frames      int   // entries that are not marks
	bytes       int   // their payloads, and heldOverhead each
	first, last int64 // µs: the span of the frames
}

type held[T any] struct {
	v    T
	ts   int64
	size int
	mark bool
}

// Add holds a frame of size payload bytes at ts µs.
func (h *Held[T]) Add(v T, ts int64, size int) { h.add(held[T]{v: v, ts: ts, size: size}) }

// AddMark holds an entry without media: it counts in neither the span nor
// the bytes.
func (h *Held[T]) AddMark(v T) { h.add(held[T]{v: v, mark: true}) }

func (h *Held[T]) add(e held[T]) {
	h.entries = append(h.entries, e)
	if e.mark {
		return
	}
	if h.frames == 0 {
		h.first, h.last = e.ts, e.ts
	}
	h.frames++
	h.first, h.last = min(h.first, e.ts), max(h.last, e.ts)
	h.bytes += e.size + heldOverhead
}

// Len is the number of entries held.
func (h *Held[T]) Len() int { return len(h.entries) }

// Over reports whether the frames held span wait or more, or hold
// MaxHeldBytes or more: the header should wait no longer.
func (h *Held[T]) Over(wait time.Duration) bool {
	return (h.frames > 0 && h.last-h.first >= wait.Microseconds()) || h.bytes >= MaxHeldBytes
}

// DeleteFunc drops the entries for which del is true.
func (h *Held[T]) DeleteFunc(del func(T) bool) {
	kept := slices.DeleteFunc(h.entries, func(e held[T]) bool { return del(e.v) })
	*h = Held[T]{entries: h.entries[:0]}
	for _, e := range kept {
		h.add(e)
	}
}

// First returns the earliest timestamp of the frames held, false when
// none is.
func (h *Held[T]) First() (int64, bool) { return h.first, h.frames > 0 }

// Last returns the newest entry for which match is true, to be changed in
// place; nil when there is none.
func (h *Held[T]) Last(match func(*T) bool) *T {
	for i := len(h.entries) - 1; i >= 0; i-- {
		if e := &h.entries[i]; !e.mark && match(&e.v) {
			return &e.v
		}
	}
	return nil
}

// Take returns every entry held, in order, and empties h.
func (h *Held[T]) Take() []T {
	out := make([]T, len(h.entries))
	for i, e := range h.entries {
		out[i] = e.v
	}
	*h = Held[T]{}
	return out
}
