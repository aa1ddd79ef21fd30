package wire

import (
	"bytes"
	"fmt"
	"io"
)

// AppendFrame appends one FRAME: the zigzag timestamp delta (from the
// previous frame of the stream, or from 0), the size and the payload.
func AppendFrame(b []byte, delta int64, payload []byte) []byte {
	b = AppendVarint(b, Zigzag(delta))
	b = AppendVarint(b, uint64(len(payload)))
	return append(b, payload...)
}

// AppendFrameFor appends one FRAME laid out for v: with the timestamp
// delta where v has FrameTimestamps, size and payload only otherwise.
func AppendFrameFor(b []byte, v *Version, delta int64, payload []byte) []byte {
	if v.FrameTimestamps {
		b = AppendVarint(b, Zigzag(delta))
	}
	b = AppendVarint(b, uint64(len(payload)))
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
		if z, err = ReadVarint(f.R); err != nil {
			return nil, err
		}
	}
	size, err := ReadVarint(f.R)
	if err != nil {
		if err == io.EOF && !f.NoTimestamps {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if size > MaxFrame {
		return nil, fmt.Errorf("%w: frame of %d bytes", ErrTooLarge, size)
	}
	payload, err := readN(f.R, size)
	if err != nil {
		return nil, err
	}
	f.Timestamp += Unzigzag(z)
	return payload, nil
}

// readN reads exactly n bytes, growing the buffer as data arrives so that a
// huge size field with little data behind it allocates little.
func readN(r io.Reader, n uint64) ([]byte, error) {
	const chunk = 64 << 10
	if n <= chunk {
		b := make([]byte, n)
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
