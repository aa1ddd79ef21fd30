package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/moq-export/moq-export/internal/varint"
)

// TestAppendMessagePrefixesEveryBodyLength builds bodies across the
// varint length forms in place and compares with prefix-then-body.
func TestAppendMessagePrefixesEveryBodyLength(t *testing.T) {
	for _, n := range []int{0, 1, 63, 64, 200, 16383, 16384, 70000} {
		body := bytes.Repeat([]byte{0x5a}, n)
		want := append(varint.Append([]byte("head"), uint64(n)), body...)
		got := appendMessage([]byte("head"), func(b []byte) []byte { return append(b, body...) })
		if !bytes.Equal(got, want) {
			t.Errorf("body of %d bytes: got %d bytes % x..., want % x...", n, len(got), got[:min(len(got), 8)], want[:min(len(want), 8)])
		}
	}
}

// TestReadMessageBufferedReadsBodiesOfAnySize reads messages that fit the
// buffer (aliasing it) and one that does not, then a truncated one.
func TestReadMessageBufferedReadsBodiesOfAnySize(t *testing.T) {
	var stream []byte
	bodies := [][]byte{[]byte("abc"), bytes.Repeat([]byte{7}, 100), {}, bytes.Repeat([]byte{9}, 12)}
	for _, b := range bodies {
		stream = appendMessage(stream, func(x []byte) []byte { return append(x, b...) })
	}
	r := bufio.NewReaderSize(bytes.NewReader(append(stream, 0x05, 'x')), 16)
	for i, want := range bodies {
		got, err := ReadMessageBuffered(r, 0)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("message %d: %x, %v; want %x", i, got, err, want)
		}
	}
	if _, err := ReadMessageBuffered(r, 0); err != io.ErrUnexpectedEOF {
		t.Fatalf("truncated message: %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := ReadMessageBuffered(bufio.NewReader(bytes.NewReader([]byte{0x40, 0x64})), 10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("100 bytes with a limit of 10: %v", err)
	}
}
