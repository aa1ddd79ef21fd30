package wire

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/moq-export/moq-export/internal/varint"
)

// Limits applied by the decoders.
const (
	// MaxMessage bounds the body of one control message.
	MaxMessage = 64 << 10
	// MaxFrame bounds one frame payload (the Rust model's limit).
	MaxFrame = 32 << 20
	// MaxSetupParams bounds the SETUP parameter count.
	MaxSetupParams = 64
	// MaxHops bounds the hop list of an announcement.
	MaxHops = 32
)

// Errors returned by the decoders. Test with errors.Is.
var (
	// ErrDecode means malformed bytes.
	ErrDecode = errors.New("wire: decode error")
	// ErrTooLarge means a length field beyond the limits.
	ErrTooLarge = errors.New("wire: message too large")
)

// ParseVarint decodes a varint (any length form) from the start of b and
// returns it with the number of bytes used; a truncated one is ErrDecode.
func ParseVarint(b []byte) (uint64, int, error) {
	v, n, err := varint.Parse(b)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %w", ErrDecode, err)
	}
	return v, n, nil
}

// Zigzag maps a signed value to the unsigned form used for frame timestamp
// deltas.
func Zigzag(n int64) uint64 { return uint64(n<<1) ^ uint64(n>>63) }

// Unzigzag inverts Zigzag.
func Unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// ReadMessageBuffered is ReadMessage for a bufio.Reader, without a copy
// when the body fits r's buffer: the body then aliases that buffer and is
// valid until the next read from r (decode it at once). A body larger than
// the buffer is read into its own slice, as ReadMessage does.
func ReadMessageBuffered(r *bufio.Reader, max int) ([]byte, error) {
	n, err := readMessageSize(r, max)
	if err != nil || n > r.Size() {
		return readBody(r, n, err)
	}
	body, err := r.Peek(n)
	if err != nil {
		return nil, unexpectedEOF(err)
	}
	r.Discard(n) // buffered: no read, body stays valid
	return body, nil
}

// ReadMessage reads one length-prefixed message body from r (at most max
// bytes; MaxMessage when max is 0). A clean EOF before the length is
// io.EOF.
func ReadMessage(r ByteReader, max int) ([]byte, error) {
	n, err := readMessageSize(r, max)
	return readBody(r, n, err)
}

// readMessageSize reads a message's length prefix and checks it against
// max (MaxMessage when 0).
func readMessageSize(r ByteReader, max int) (int, error) {
	if max <= 0 {
		max = MaxMessage
	}
	n, err := varint.Read(r)
	if err != nil {
		return 0, err
	}
	if n > uint64(max) {
		return 0, fmt.Errorf("%w: %d bytes (limit %d)", ErrTooLarge, n, max)
	}
	return int(n), nil
}

// readBody reads a body of n bytes into its own slice, unless err (from
// readMessageSize) is set.
func readBody(r io.Reader, n int, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, unexpectedEOF(err)
	}
	return body, nil
}

// unexpectedEOF turns an EOF inside a message into io.ErrUnexpectedEOF.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// ByteReader is what the stream readers need: bufio.Reader satisfies it.
type ByteReader interface {
	io.Reader
	io.ByteReader
}

// appendMessage appends the length prefix and body built by fn. The body
// is built in place after a one-byte prefix and moved up in the rare case
// its length needs more (no scratch buffer per message).
func appendMessage(b []byte, fn func([]byte) []byte) []byte {
	start := len(b)
	b = fn(append(b, 0))
	n := uint64(len(b) - start - 1)
	l := varint.Len(n)
	if l == 1 {
		b[start] = byte(n)
		return b
	}
	b = append(b, make([]byte, l-1)...)
	copy(b[start+l:], b[start+1:start+1+int(n)])
	varint.Append(b[start:start], n)
	return b
}

// dec walks a message body; the first error sticks.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrDecode}, args...)...)
	}
}

func (d *dec) varint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n, err := ParseVarint(d.b)
	if err != nil {
		d.err = err
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) u8() uint8 {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail("truncated byte")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *dec) bool() bool {
	c := d.u8()
	if c > 1 {
		d.fail("boolean %d", c)
	}
	return c == 1
}

func (d *dec) bytes() []byte {
	n := d.varint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("length %d beyond message", n)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) str() string {
	b := d.bytes()
	if d.err != nil {
		return ""
	}
	if !validUTF8(b) {
		d.fail("invalid UTF-8")
		return ""
	}
	return string(b)
}

func (d *dec) opt() Opt {
	v := d.varint()
	if v == 0 {
		return Opt{}
	}
	return Opt{Seq: v - 1, Valid: true}
}

// done fails when bytes are left over.
func (d *dec) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d bytes left over", len(d.b))
	}
	return d.err
}

func appendStr(b []byte, s string) []byte {
	b = varint.Append(b, uint64(len(s)))
	return append(b, s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}
