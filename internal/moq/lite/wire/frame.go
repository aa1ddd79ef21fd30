package wire

import (
	"bytes"
	"fmt"
	"io"

	"github.com/moq-export/moq-export/internal/varint"
)

// AppendFrame appends one FRAME: the zigzag timestamp delta (from the
// previous frame of the stream, or from 0), the size and the payload.
func AppendFrame(b []byte, delta int64, payload []byte) []byte {
	b = varint.Append(b, Zigzag(delta))
	b = varint.Append(b, uint64(len(payload)))
	return append(b, payload...)
}

// AppendFrameFor appends one FRAME laid out for v: with the timestamp
// delta where v has FrameTimestamps, size and payload only otherwise.
func AppendFrameFor(b []byte, v *Version, delta int64, payload []byte) []byte {
	if v.FrameTimestamps {
		b = varint.Append(b, Zigzag(delta))
	}
	b = varint.Append(b, uint64(len(payload)))
	return append(b, payload...)
}

// FrameReader reads the frames of one Group (or Fetch) stream and keeps the
// running timestamp.
type FrameReader struct {
	R ByteReader
	// NoTimestamps reads frames without the timestamp delta (versions
	// without FrameTimestamps); Timestamp then stays 0.
	NoTimestamps bool
	// Timestamp is the absolute timestamp of the last frame read, in the
	// track's timescale.
	Timestamp int64
	// Slab, when UseSlab is set, is where payloads are cut from
	// (otherwise: one allocation per payload). Held by value, so that a
	// reader on the stack keeps its slab there too.
	Slab    Slab
	UseSlab bool
}

// NewFrameReader returns a FrameReader for frames laid out for v.
func NewFrameReader(r ByteReader, v *Version) *FrameReader {
	return &FrameReader{R: r, NoTimestamps: !v.FrameTimestamps}
}

// Next reads the next frame. It returns io.EOF at a clean end of stream (a
// FIN exactly at a frame boundary) and io.ErrUnexpectedEOF inside a frame.
func (f *FrameReader) Next() ([]byte, error) {
	var z uint64
	if !f.NoTimestamps {
		var err error
		if z, err = varint.Read(f.R); err != nil {
			return nil, err
		}
	}
	size, err := varint.Read(f.R)
	if err != nil {
		if err == io.EOF && !f.NoTimestamps {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if size > MaxFrame {
		return nil, fmt.Errorf("%w: frame of %d bytes", ErrTooLarge, size)
	}
	var slab *Slab
	if f.UseSlab {
		slab = &f.Slab
	}
	payload, err := readN(f.R, size, slab)
	if err != nil {
		return nil, err
	}
	f.Timestamp += Unzigzag(z)
	return payload, nil
}

// readN reads exactly n bytes, growing the buffer as data arrives so that a
// huge size field with little data behind it allocates little. Payloads up
// to a chunk are cut from slab when there is one.
func readN(r io.Reader, n uint64, slab *Slab) ([]byte, error) {
	const chunk = 64 << 10
	if n <= chunk {
		var b []byte
		if slab != nil {
			b = slab.cut(int(n))
		} else {
			b = make([]byte, n)
		}
		if _, err := io.ReadFull(r, b); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		return b, nil
	}
	var buf bytes.Buffer
	buf.Grow(chunk)
	m, err := io.CopyN(&buf, r, int64(n))
	if uint64(m) < n {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf.Bytes(), nil
}

// maxSlab bounds one slab buffer: what a hint can make the first read
// allocate before its data arrived, and what one buffer pins.
const maxSlab = 1 << 20

// Slab cuts the payloads of one stream's frames out of a few larger
// buffers instead of allocating each: a group of 30 frames costs one or two
// allocations rather than 30. A payload cut from it is never handed out
// again nor written by the Slab after its read: a buffer lives, as any
// slice, while a payload cut from it does (the frames of one group, which
// a track keeps and drops together). Its zero value works; it is used by
// one goroutine.
type Slab struct {
	buf []byte
	// Hint sizes the first buffer: the bytes the stream's payloads are
	// expected to take (the previous group's Used, say); 0 starts small.
	// Later buffers grow by half of what was used, up to 1 MiB.
	Hint int
	used int
}

// Used returns the payload bytes cut so far.
func (s *Slab) Used() int { return s.used }

// cut returns the next n bytes of the slab, capped at n so that appending
// to one payload cannot reach the next.
func (s *Slab) cut(n int) []byte {
	if n > cap(s.buf)-len(s.buf) {
		size := s.used / 2
		if s.Hint > 0 {
			size, s.Hint = s.Hint+s.Hint/8, 0
		}
		s.buf = make([]byte, 0, max(n, min(size, maxSlab)))
	}
	start := len(s.buf)
	s.buf = s.buf[:start+n]
	s.used += n
	return s.buf[start : start+n : start+n]
}
