package ietf

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"testing"
)

var fuzzVersions = []Version{Draft14, Draft16, Draft17, Draft20, Draft22}

// FuzzMessages decodes arbitrary bodies as every control message in every
// draft: errors are fine, panics and re-encodings that do not decode are
// not.
func FuzzMessages(f *testing.F) {
	for _, tc := range capturedMessages {
		raw, _ := hex.DecodeString(tc.hex)
		if len(raw) > 3 {
			f.Add(uint8(0), raw[3:])
		}
	}
	f.Add(uint8(3), []byte{0x06, 0x3c, 0x01, 0x01, 0x00})
	f.Fuzz(func(t *testing.T, sel uint8, body []byte) {
		v := fuzzVersions[int(sel)%len(fuzzVersions)]
		for _, m := range []Message{
			&ClientSetup{}, &ServerSetup{}, &Setup{}, &Subscribe{}, &SubscribeOK{}, &RequestError{},
			&RequestOK{}, &PublishDone{}, &RequestID{}, &PublishNamespace{}, &PublishNamespaceDone{},
			&SubscribeNamespace{}, &Namespace{}, &GoAway{}, &Fetch{}, &FetchOK{},
		} {
			if err := Decode(body, m, v); err != nil {
				continue
			}
			raw := Append(nil, 1, m, v)
			_, again, err := ReadMessage(bufio.NewReader(bytes.NewReader(raw)), v)
			if err != nil {
				t.Fatalf("%T: re-encoding does not frame: %v", m, err)
			}
			if err := Decode(again, m, v); err != nil {
				t.Fatalf("%T %+v: re-encoding does not decode: %v", m, m, err)
			}
		}
	})
}

// FuzzReadMessage reads framed messages and varints off arbitrary streams.
func FuzzReadMessage(f *testing.F) {
	f.Add(uint8(0), []byte{0x20, 0x00, 0x01, 0x00})
	f.Add(uint8(3), []byte{0xaf, 0x00, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		v := fuzzVersions[int(sel)%len(fuzzVersions)]
		r := bufio.NewReader(bytes.NewReader(data))
		for {
			if _, _, err := ReadMessage(r, v); err != nil {
				break
			}
		}
		r = bufio.NewReader(bytes.NewReader(data))
		for {
			x, err := ReadVarint(r, v)
			if err != nil {
				break
			}
			if v.LeadingOnes() || x < 1<<62 {
				y, err := ReadVarint(bufio.NewReader(bytes.NewReader(AppendVarint(nil, x, v))), v)
				if err != nil || y != x {
					t.Fatalf("varint %d re-read as %d, %v", x, y, err)
				}
			}
		}
	})
}

// FuzzSubgroupStream reads a subgroup stream (header, objects, extension
// blocks) from arbitrary bytes.
func FuzzSubgroupStream(f *testing.F) {
	for _, s := range []string{"1902412c000005108016e3600568656c6c6f000003", "5902812c00000410d6e3600568656c6c6f"} {
		b, _ := hex.DecodeString(s)
		f.Add(uint8(0), b)
		f.Add(uint8(3), b)
	}
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		v := fuzzVersions[int(sel)%len(fuzzVersions)]
		r := bufio.NewReader(bytes.NewReader(data))
		typ, err := ReadVarint(r, v)
		if err != nil {
			return
		}
		if typ == StreamFetch {
			if _, err := ReadVarint(r, v); err != nil {
				return
			}
			fr := FetchObjectReader{R: r, V: v}
			for range 1000 {
				o, err := fr.Next()
				if err != nil {
					return
				}
				_, _, _, _ = ObjectTimestamp(o.Extensions, 1000000, v)
			}
			return
		}
		h, err := ReadSubgroupHeader(r, typ, v)
		if err != nil {
			return
		}
		if back, err := subgroupFlags(h.Type(v), v); err != nil || back.Extensions != h.Extensions {
			t.Fatalf("header %+v does not re-encode: %v", h, err)
		}
		or := ObjectReader{R: r, V: v, Header: h}
		for range 1000 {
			o, err := or.Next()
			if err != nil {
				return
			}
			_, _, _, _ = ObjectTimestamp(o.Extensions, 1000000, v)
		}
	})
}

// FuzzFilterAndLocation decodes arbitrary SUBSCRIBE filter parameters and
// Location parameter values: a filter that decodes re-encodes to one that
// decodes to the same filter.
func FuzzFilterAndLocation(f *testing.F) {
	f.Add(uint8(0), []byte{0x04, 0x01, 0x00, 0x02})
	f.Add(uint8(3), []byte{0x05, 0x00, 0x03})
	f.Add(uint8(3), []byte{})
	f.Fuzz(func(t *testing.T, sel uint8, b []byte) {
		v := fuzzVersions[int(sel)%len(fuzzVersions)]
		if l, err := DecodeLocation(b, v); err == nil {
			if again, err := DecodeLocation(AppendLocation(nil, l, v), v); err != nil || again != l {
				t.Fatalf("location %v re-decodes as %v, %v", l, again, err)
			}
		}
		flt, err := decodeFilterParam(b, v)
		if err != nil {
			return
		}
		again, err := decodeFilterParam(flt.param(v), v)
		if err != nil || again != flt {
			t.Fatalf("%v: filter %+v re-decodes as %+v, %v", v, flt, again, err)
		}
	})
}
