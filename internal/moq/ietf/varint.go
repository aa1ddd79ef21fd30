package ietf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/moq-export/moq-export/internal/varint"
)

// Errors returned by the decoders. Test with errors.Is.
var (
	// ErrDecode means malformed bytes.
	ErrDecode = errors.New("ietf: decode error")
	// ErrTooLarge means a length field beyond the limits.
	ErrTooLarge = errors.New("ietf: message too large")
)

// Limits applied by the decoders.
const (
	// MaxMessage bounds a control message body (its length is a u16).
	MaxMessage = 1<<16 - 1
	// MaxObject bounds one object payload (as moq-lite bounds a frame:
	// the reference's limit).
	MaxObject = 32 << 20
	// MaxExtensions bounds an object's extension block.
	MaxExtensions = 64 << 10
	// MaxParams bounds the parameters of one message.
	MaxParams = 64
	// MaxVersions bounds CLIENT_SETUP's version list.
	MaxVersions = 128
	// MaxNamespaceParts bounds a namespace tuple (the drafts' limit).
	MaxNamespaceParts = 32
)

// AppendVarint appends x in the varint form of v: QUIC (RFC 9000) for
// drafts 14-16, leading-ones for 17+. QUIC varints hold 62 bits; larger
// values are clamped (callers never produce them).
func AppendVarint(b []byte, x uint64, v Version) []byte {
	if !v.LeadingOnes() {
		return varint.Append(b, x)
	}
	switch {
	case x < 1<<7:
		return append(b, byte(x))
	case x < 1<<14:
		return append(b, 0x80|byte(x>>8), byte(x))
	case x < 1<<21:
		return append(b, 0xc0|byte(x>>16), byte(x>>8), byte(x))
	case x < 1<<28:
		return append(b, 0xe0|byte(x>>24), byte(x>>16), byte(x>>8), byte(x))
	case x < 1<<35:
		return append(b, 0xf0|byte(x>>32), byte(x>>24), byte(x>>16), byte(x>>8), byte(x))
	case x < 1<<42:
		return append(b, 0xf8|byte(x>>40), byte(x>>32), byte(x>>24), byte(x>>16), byte(x>>8), byte(x))
	case x < 1<<56:
		// The 7-byte form (49 bits) is invalid in draft 17; skip it
		// everywhere, as the reference does.
		b = append(b, 0xfe)
		return append(b, byte(x>>48), byte(x>>40), byte(x>>32), byte(x>>24), byte(x>>16), byte(x>>8), byte(x))
	default:
		b = append(b, 0xff)
		return binary.BigEndian.AppendUint64(b, x)
	}
}

// leadingOnesLen returns the encoded size announced by first byte c, or 0
// when the form is invalid in v.
func leadingOnesLen(c byte, v Version) int {
	ones := 0
	for ones < 8 && c&(0x80>>ones) != 0 {
		ones++
	}
	switch {
	case ones <= 5:
		return ones + 1
	case ones == 6:
		if v == Draft17 {
			return 0
		}
		return 7
	case ones == 7:
		return 8
	default:
		return 9
	}
}

// decodeLeadingOnes decodes the n-byte form in b (len(b) == n).
func decodeLeadingOnes(b []byte) uint64 {
	n := len(b)
	switch n {
	case 8:
		return binary.BigEndian.Uint64(append([]byte{0}, b[1:]...))
	case 9:
		return binary.BigEndian.Uint64(b[1:])
	}
	// n-1 length bits plus a zero bit lead the first byte.
	x := uint64(b[0] & (0xff >> n))
	for _, c := range b[1:] {
		x = x<<8 | uint64(c)
	}
	return x
}

// ReadVarint reads one varint of v from r. A stream that ends inside it
// is io.ErrUnexpectedEOF (io.EOF before its first byte).
func ReadVarint(r io.ByteReader, v Version) (uint64, error) {
	if !v.LeadingOnes() {
		return varint.Read(r)
	}
	c, err := r.ReadByte()
	if err != nil {
		return 0, err
	}
	n := leadingOnesLen(c, v)
	if n == 0 {
		return 0, fmt.Errorf("%w: 7-byte varint in %v", ErrDecode, v)
	}
	var buf [9]byte
	buf[0] = c
	for i := 1; i < n; i++ {
		if buf[i], err = r.ReadByte(); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
	}
	return decodeLeadingOnes(buf[:n]), nil
}

// decoder reads fields off one message body; the first error sticks.
type decoder struct {
	b   []byte
	v   Version
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrDecode}, args...)...)
	}
}

func (d *decoder) varint() uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail("short varint")
		return 0
	}
	if !d.v.LeadingOnes() {
		n := 1 << (d.b[0] >> 6)
		if len(d.b) < n {
			d.fail("short varint")
			return 0
		}
		x := uint64(d.b[0] & 0x3f)
		for _, c := range d.b[1:n] {
			x = x<<8 | uint64(c)
		}
		d.b = d.b[n:]
		return x
	}
	n := leadingOnesLen(d.b[0], d.v)
	if n == 0 {
		d.fail("7-byte varint in %v", d.v)
		return 0
	}
	if len(d.b) < n {
		d.fail("short varint")
		return 0
	}
	x := decodeLeadingOnes(d.b[:n])
	d.b = d.b[n:]
	return x
}

func (d *decoder) u8() uint8 {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail("short byte")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) bool() bool {
	c := d.u8()
	if c > 1 {
		d.fail("boolean %d", c)
	}
	return c == 1
}

// bytes reads a length-prefixed byte string (aliasing the body).
func (d *decoder) bytes() []byte {
	n := d.varint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("length %d beyond the message", n)
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) str() string {
	p := d.bytes()
	if d.err == nil && !utf8.Valid(p) {
		d.fail("invalid UTF-8")
	}
	return string(p)
}

// namespace reads a namespace tuple and joins it into a path.
func (d *decoder) namespace() string {
	n := d.varint()
	if d.err != nil {
		return ""
	}
	if n > MaxNamespaceParts {
		d.fail("namespace of %d parts", n)
		return ""
	}
	parts := make([]string, 0, n)
	for range n {
		parts = append(parts, d.str())
	}
	return JoinNamespace(parts)
}

// typedFilter reads a draft-22 LOCATION_FILTER value (a type and the
// fields it names, no length) and returns its bytes (aliasing the body).
func (d *decoder) typedFilter() []byte {
	start := d.b
	t := d.varint()
	n, ok := typedFieldCount(t)
	if d.err == nil && !ok {
		d.fail("location filter type %d", t)
	}
	for range n {
		d.varint()
	}
	if d.err != nil {
		return nil
	}
	used := len(start) - len(d.b)
	return start[:used:used]
}

// location reads a Location (group, object).
func (d *decoder) location() Location {
	return Location{Group: d.varint(), Object: d.varint()}
}

// finish reports the sticky error, or leftover bytes.
func (d *decoder) finish() error {
	if d.err == nil && len(d.b) > 0 {
		d.fail("%d bytes left over", len(d.b))
	}
	return d.err
}

// encoder appends fields for version v.
type encoder struct {
	b []byte
	v Version
}

func (e *encoder) varint(x uint64) { e.b = AppendVarint(e.b, x, e.v) }
func (e *encoder) u8(c uint8)      { e.b = append(e.b, c) }
func (e *encoder) bool(t bool) {
	if t {
		e.u8(1)
	} else {
		e.u8(0)
	}
}
func (e *encoder) bytes(p []byte) { e.varint(uint64(len(p))); e.b = append(e.b, p...) }
func (e *encoder) str(s string)   { e.varint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) namespace(path string) {
	parts := SplitNamespace(path)
	e.varint(uint64(len(parts)))
	for _, p := range parts {
		e.str(p)
	}
}
func (e *encoder) location(l Location) { e.varint(l.Group); e.varint(l.Object) }

// Location is a position in a track.
type Location struct{ Group, Object uint64 }

// SplitNamespace turns a broadcast path into a namespace tuple: one field
// per "/"-separated part, "" for no fields. "\/" and "\\" inside a part
// stand for "/" and "\" (the escaping @moq/net uses).
func SplitNamespace(path string) []string {
	if path == "" {
		return nil
	}
	parts := []string{""}
	for i := 0; i < len(path); i++ {
		c := path[i]
		switch {
		case c == '/':
			parts = append(parts, "")
		case c == '\\' && i+1 < len(path) && (path[i+1] == '/' || path[i+1] == '\\'):
			i++
			parts[len(parts)-1] += string(path[i])
		default:
			parts[len(parts)-1] += string(c)
		}
	}
	return parts
}

// JoinNamespace is the inverse of SplitNamespace.
func JoinNamespace(parts []string) string {
	esc := strings.NewReplacer(`\`, `\\`, `/`, `\/`)
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = esc.Replace(p)
	}
	return strings.Join(out, "/")
}

// ReadMessage reads one control message: Type, u16 Length, body. io.EOF
// means the stream ended cleanly before a message.
func ReadMessage(r *bufio.Reader, v Version) (typ uint64, body []byte, err error) {
	typ, err = ReadVarint(r, v)
	if err != nil {
		return 0, nil, err
	}
	var l [2]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	body = make([]byte, binary.BigEndian.Uint16(l[:]))
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return typ, body, nil
}

// AppendMessage frames body as a control message of type typ. A body over
// MaxMessage is a programming error of the caller (the messages here stay
// far below it); it panics rather than put a corrupt length on the wire.
func AppendMessage(b []byte, typ uint64, body []byte, v Version) []byte {
	if len(body) > MaxMessage {
		panic(fmt.Sprintf("ietf: message of %d bytes", len(body)))
	}
	b = AppendVarint(b, typ, v)
	b = binary.BigEndian.AppendUint16(b, uint16(len(body)))
	return append(b, body...)
}
