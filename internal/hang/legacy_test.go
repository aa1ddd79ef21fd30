package hang

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"testing"
)

func TestLegacyOneSecondMatchesReferenceBytes(t *testing.T) {
	// hang sheet §2.2: 1 000 000 µs encodes as 80 0f 42 40.
	got := AppendLegacy(nil, 1_000_000, []byte{0xaa})
	if want, _ := hex.DecodeString("800f4240aa"); !bytes.Equal(got, want) {
		t.Fatalf("% x", got)
	}
	ts, codec, err := DecodeLegacy(got)
	if err != nil || ts != 1_000_000 || !bytes.Equal(codec, []byte{0xaa}) {
		t.Fatalf("%d % x %v", ts, codec, err)
	}
	if LegacyLen(1_000_000, []byte{0xaa}) != len(got) {
		t.Fatal("LegacyLen")
	}
}

func TestLegacyRejectsTruncatedTimestamp(t *testing.T) {
	if _, _, err := DecodeLegacy([]byte{0x80, 0x0f}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("got %v", err)
	}
}

func TestLOCDecodesTimestampTimescaleAndSkipsOtherProperties(t *testing.T) {
	tests := []struct {
		name   string
		hex    string
		wantUS int64
		codec  string
	}{
		// props: 0x10 = 33 (µs)
		{"TimestampOnly", "02 10 21 ff", 33, "ff"},
		// props: 0x08 timescale 90000 (delta 8), 0x10 ts 90000 (delta 8)
		{"Timescale90k", "0a 08 80 01 5f 90 08 80 01 5f 90 ab", 1_000_000, "ab"},
		// props: 0x06 draft-03 timestamp 5, 0x0d (odd, delta 7) 2 bytes skipped
		{"Draft03TimestampAndSkippedBytes", "06 06 05 07 02 01 02 cc dd", 5, "ccdd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := hex.DecodeString(stripSpaces(tt.hex))
			ts, codec, err := DecodeLOC(b)
			if err != nil || ts != tt.wantUS || hex.EncodeToString(codec) != tt.codec {
				t.Fatalf("%d %x %v", ts, codec, err)
			}
		})
	}
}

func TestLOCRoundTrips(t *testing.T) {
	b := AppendLOC(nil, 123456789, []byte("frame"))
	ts, codec, err := DecodeLOC(b)
	if err != nil || ts != 123456789 || string(codec) != "frame" {
		t.Fatalf("%d %q %v", ts, codec, err)
	}
}

func TestLOCWithoutTimestampIsMalformed(t *testing.T) {
	if _, _, err := DecodeLOC([]byte{0x00, 0xff}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("got %v", err)
	}
}

func TestRescale(t *testing.T) {
	tests := []struct {
		v, scale uint64
		want     int64
		ok       bool
	}{
		{1000, 1000, 1_000_000, true},
		{48000, 48000, 1_000_000, true},
		{1, 3, 333333, true},
		{1 << 62, 1, 0, false},
		{5, 0, 0, false},
		// Whole seconds just fit, the fraction pushes past MaxInt64.
		{math.MaxInt64/1_000_000*1000 + 999, 1000, 0, false},
		{math.MaxInt64/1_000_000*1000 + 775, 1000, math.MaxInt64/1_000_000*1_000_000 + 775_000, true},
	}
	for _, tt := range tests {
		got, ok := Rescale(tt.v, tt.scale)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Rescale(%d,%d) = %d %v", tt.v, tt.scale, got, ok)
		}
	}
}

func stripSpaces(s string) string { return string(bytes.ReplaceAll([]byte(s), []byte(" "), nil)) }

func FuzzDecodeLOC(f *testing.F) {
	for _, s := range []string{"02 10 21 ff", "0a 08 80 01 5f 90 08 80 01 5f 90 ab", "06 06 05 07 02 01 02 cc dd"} {
		b, _ := hex.DecodeString(stripSpaces(s))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, codec, err := DecodeLOC(b)
		if err == nil && len(codec) > len(b) {
			t.Fatal("codec payload longer than input")
		}
	})
}

func FuzzDecodeLegacy(f *testing.F) {
	f.Add([]byte{0x80, 0x0f, 0x42, 0x40, 0xaa})
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, codec, err := DecodeLegacy(b)
		if err != nil {
			return
		}
		if again := AppendLegacy(nil, ts, codec); len(again) > len(b) {
			t.Fatalf("re-encoding grew: % x -> % x", b, again)
		}
	})
}
