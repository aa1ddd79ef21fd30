// Package varint is the QUIC variable-length integer of RFC 9000 §16: two
// bits of length, then 6, 14, 30 or 62 bits of value. moq-lite's wire
// codec, moq-transport's drafts 14-16, the legacy and loc payloads of
// internal/hang and the archive's segment index all write it; this is its
// one implementation.
//
// It is written by hand rather than taken from quic-go's quicvarint so
// that only the transport package imports quic-go, and so that a
// truncated varint is an error value (never a panic) for the fuzzed
// parsers that call Parse on untrusted bytes.
package varint

import (
	"errors"
	"io"
)

// Max is the largest value a varint holds.
const Max = 1<<62 - 1

// ErrTruncated means the bytes end inside a varint.
var ErrTruncated = errors.New("truncated varint")

// Len returns the encoded size of v (8 for values above Max, which Append
// clamps).
func Len(v uint64) int {
	switch {
	case v < 1<<6:
		return 1
	case v < 1<<14:
		return 2
	case v < 1<<30:
		return 4
	default:
		return 8
	}
}

// Append appends v in its minimal form. Values above Max are clamped
// (callers never produce them).
func Append(b []byte, v uint64) []byte {
	v = min(v, Max)
	switch Len(v) {
	case 1:
		return append(b, byte(v))
	case 2:
		return append(b, byte(v>>8)|0x40, byte(v))
	case 4:
		return append(b, byte(v>>24)|0x80, byte(v>>16), byte(v>>8), byte(v))
	}
	return append(b, byte(v>>56)|0xc0, byte(v>>48), byte(v>>40), byte(v>>32),
		byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// Parse decodes a varint (any length form, minimal or not) from the start
// of b and returns it with the number of bytes used; ErrTruncated when b
// ends inside it.
func Parse(b []byte) (uint64, int, error) {
	if len(b) == 0 {
		return 0, 0, ErrTruncated
	}
	n := 1 << (b[0] >> 6)
	if len(b) < n {
		return 0, 0, ErrTruncated
	}
	v := uint64(b[0] & 0x3f)
	for _, c := range b[1:n] {
		v = v<<8 | uint64(c)
	}
	return v, n, nil
}

// Read reads one varint from r. A clean EOF before the first byte is
// io.EOF; EOF inside the varint is io.ErrUnexpectedEOF.
func Read(r io.ByteReader) (uint64, error) {
	c, err := r.ReadByte()
	if err != nil {
		return 0, err
	}
	n := 1 << (c >> 6)
	v := uint64(c & 0x3f)
	for i := 1; i < n; i++ {
		c, err := r.ReadByte()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		v = v<<8 | uint64(c)
	}
	return v, nil
}
