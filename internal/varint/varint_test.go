package varint

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"testing"
)

// TestParseReadsTheRFC9000Examples decodes the sample varints of RFC 9000
// Appendix A.1, the non-minimal two-byte 37 included.
func TestParseReadsTheRFC9000Examples(t *testing.T) {
	for _, c := range []struct {
		hex  string
		want uint64
	}{
		{"c2197c5eff14e88c", 151288809941952652},
		{"9d7f3e7d", 494878333},
		{"7bbd", 15293},
		{"25", 37},
		{"4025", 37},
	} {
		b, _ := hex.DecodeString(c.hex)
		got, n, err := Parse(append(b, 0xaa))
		if err != nil || got != c.want || n != len(b) {
			t.Errorf("Parse(%s) = %d, %d, %v; want %d, %d", c.hex, got, n, err, c.want, len(b))
		}
		got, err = Read(bytes.NewReader(b))
		if err != nil || got != c.want {
			t.Errorf("Read(%s) = %d, %v; want %d", c.hex, got, err, c.want)
		}
	}
}

// TestAppendWritesTheMinimalFormAtEachBoundary checks the length of each
// form's largest and smallest values, the round trip, and the clamp above
// Max.
func TestAppendWritesTheMinimalFormAtEachBoundary(t *testing.T) {
	for _, c := range []struct {
		v    uint64
		size int
	}{
		{0, 1}, {63, 1}, {64, 2}, {16383, 2}, {16384, 4}, {1<<30 - 1, 4}, {1 << 30, 8}, {Max, 8},
	} {
		b := Append([]byte{0xee}, c.v)
		if len(b)-1 != c.size || Len(c.v) != c.size {
			t.Errorf("%d: %d bytes (Len %d), want %d", c.v, len(b)-1, Len(c.v), c.size)
		}
		got, n, err := Parse(b[1:])
		if err != nil || got != c.v || n != c.size {
			t.Errorf("%d: parsed back %d, %d, %v", c.v, got, n, err)
		}
	}
	if got, _, _ := Parse(Append(nil, Max+5)); got != Max {
		t.Errorf("a value above Max is written as %d, want Max", got)
	}
}

// TestTruncatedVarintsAreErrors cuts each length form short.
func TestTruncatedVarintsAreErrors(t *testing.T) {
	if _, _, err := Parse(nil); !errors.Is(err, ErrTruncated) {
		t.Errorf("Parse(nil): %v", err)
	}
	for _, v := range []uint64{64, 16384, 1 << 30} {
		b := Append(nil, v)
		if _, _, err := Parse(b[:len(b)-1]); !errors.Is(err, ErrTruncated) {
			t.Errorf("Parse of %d cut short: %v", v, err)
		}
		if _, err := Read(bufio.NewReader(bytes.NewReader(b[:len(b)-1]))); err != io.ErrUnexpectedEOF {
			t.Errorf("Read of %d cut short: %v, want io.ErrUnexpectedEOF", v, err)
		}
	}
	if _, err := Read(bytes.NewReader(nil)); err != io.EOF {
		t.Errorf("Read of nothing: %v, want io.EOF", err)
	}
}

// FuzzParse: Parse never panics, agrees with Read, and what it parses
// re-encodes to a form that parses back to the same value.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "25", "4025", "7bbd", "9d7f3e7d", "c2197c5eff14e88c", "c2"} {
		b, _ := hex.DecodeString(s)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, n, err := Parse(b)
		rv, rerr := Read(bytes.NewReader(b))
		if (err == nil) != (rerr == nil) || (err == nil && rv != v) {
			t.Fatalf("Parse %d, %v; Read %d, %v", v, err, rv, rerr)
		}
		if err != nil {
			return
		}
		if n > len(b) || v > Max {
			t.Fatalf("Parse used %d of %d bytes, value %d", n, len(b), v)
		}
		if back, _, _ := Parse(Append(nil, v)); back != v {
			t.Fatalf("%d re-encoded reads %d", v, back)
		}
	})
}
