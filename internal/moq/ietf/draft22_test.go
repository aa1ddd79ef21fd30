package ietf

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

// Drafts 21 and 22 against the project's sheet
// (shared/reference/moq-lite-06.md §8): draft 21 is draft 20 on the wire
// under ALPN moqt-21; draft 22 changes only LOCATION_FILTER, which loses
// its Length for a Location Filter Type.

func unhexStr(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func body(t *testing.T, m Message, v Version) []byte {
	t.Helper()
	_, b, err := ReadMessage(bufio.NewReader(bytes.NewReader(Append(nil, TypeSubscribe, m, v))), v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDraft21IsDraft20OnTheWireUnderItsOwnALPN(t *testing.T) {
	for _, tc := range capturedMessages {
		if tc.v != Draft20 {
			continue
		}
		raw := unhexStr(t, tc.hex)
		if got := Append(nil, tc.typ, tc.want, Draft21); !bytes.Equal(got, raw) {
			t.Errorf("%s: draft 21 writes %x, draft 20 %s", tc.name, got, tc.hex)
		}
	}
	if Draft21.ALPN() != "moqt-21" || Draft22.ALPN() != "moqt-22" {
		t.Fatalf("ALPNs %s %s", Draft21.ALPN(), Draft22.ALPN())
	}
	for _, alpn := range []string{"moqt-21", "moqt-22"} {
		if v, ok := VersionOfALPN(alpn); !ok || !v.Known() || v.ALPN() != alpn {
			t.Errorf("%s: %v %v", alpn, v, ok)
		}
	}
	if _, ok := VersionOfALPN("moqt-23"); ok {
		t.Error("moqt-23 known")
	}
}

// SOURCED: in a SUBSCRIBE, draft 20's Next Object `01 02 00 00` (delta
// type, Length 2, fields 0 0) is `01 05` on draft 22, every other byte the
// same.
func TestDraft22ChangesOnlyTheLocationFilter(t *testing.T) {
	// The parameter list of a SUBSCRIBE asking the next object (the
	// default filter, which SUBSCRIBE itself leaves out): subscriber
	// priority 0x20, then LOCATION_FILTER 0x21 delta-coded as 01.
	params := func(v Version) []byte {
		e := encoder{v: v}
		appendParams(&e, Params{{ID: ParamSubscriberPriority, Value: 60},
			{ID: ParamSubscriptionFilter, Bytes: Filter{Type: FilterLargestObject}.param(v)}}, false)
		return e.b
	}
	b20, b22 := params(Draft20), params(Draft22)
	want := bytes.Replace(b20, unhexStr(t, "01 02 00 00"), unhexStr(t, "01 05"), 1)
	if bytes.Equal(want, b20) || !bytes.Equal(b22, want) {
		t.Fatalf("draft 22 % x, want draft 20 % x with 01 02 00 00 -> 01 05", b22, b20)
	}
	d := decoder{b: b22, v: Draft22}
	p := decodeParams(&d, false)
	fb, _ := p.Bytes(ParamSubscriptionFilter)
	if f, err := decodeFilterParam(fb, Draft22); d.finish() != nil || err != nil || f.Type != FilterLargestObject {
		t.Fatalf("decoded %+v, %v, %v", f, err, d.finish())
	}
	m := &Subscribe{RequestID: 2, Namespace: "interop/dial.hang", Track: "video", Priority: 60,
		GroupOrder: GroupOrderDescending, Forward: true}
	// Relative Start 1: byte-identical in both (every field below 128).
	m.Filter = Filter{Type: FilterRelative, Groups: 1}
	if b20, b22 := body(t, m, Draft20), body(t, m, Draft22); !bytes.Equal(b20, b22) {
		t.Fatalf("Relative(1): draft 20 % x, draft 22 % x", b20, b22)
	}
}

func TestLocationFilterValuesPerDraft(t *testing.T) {
	for _, tt := range []struct {
		tag string
		v   Version
		hex string
		f   Filter
		enc bool // our encoder writes this form for f
	}{
		{"SOURCED", Draft20, "00 00", Filter{Type: FilterLargestObject}, true},
		{"SOURCED", Draft20, "00", Filter{Type: FilterRelative}, false},
		{"SOURCED", Draft20, "01", Filter{Type: FilterRelative, Groups: 1}, true},
		{"SOURCED", Draft20, "07 03", Filter{Type: FilterAbsoluteStart, Start: Location{7, 3}}, true},
		{"SOURCED", Draft20, "07 03 02", Filter{Type: FilterAbsoluteRange, Start: Location{7, 3}, End: 9}, true},
		{"SOURCED (end object not kept)", Draft20, "07 03 02 04", Filter{Type: FilterAbsoluteRange, Start: Location{7, 3}, End: 9}, false},
		{"SOURCED (leading-ones 128)", Draft20, "80 80", Filter{Type: FilterRelative, Groups: 128}, true},
		{"DERIVED", Draft21, "07 03 02", Filter{Type: FilterAbsoluteRange, Start: Location{7, 3}, End: 9}, true},
		{"DERIVED", Draft22, "00", Filter{Type: FilterAbsoluteStart}, true},
		{"DERIVED", Draft22, "05", Filter{Type: FilterLargestObject}, true},
		{"DERIVED", Draft22, "01 01", Filter{Type: FilterRelative, Groups: 1}, true},
		{"DERIVED", Draft22, "02 07 03", Filter{Type: FilterAbsoluteStart, Start: Location{7, 3}}, true},
		{"DERIVED", Draft22, "03 07 03 02", Filter{Type: FilterAbsoluteRange, Start: Location{7, 3}, End: 9}, true},
		{"DERIVED (end object not kept)", Draft22, "04 07 03 02 04", Filter{Type: FilterAbsoluteRange, Start: Location{7, 3}, End: 9}, false},
		{"DERIVED", Draft22, "02 81 2c 00", Filter{Type: FilterAbsoluteStart, Start: Location{300, 0}}, true},
	} {
		raw := unhexStr(t, tt.hex)
		if tt.enc {
			if got := tt.f.param(tt.v); !bytes.Equal(got, raw) {
				t.Errorf("%s %v %+v: encoded % x, sheet %s", tt.tag, tt.v, tt.f, got, tt.hex)
			}
		}
		if got, err := decodeFilterParam(raw, tt.v); err != nil || !reflect.DeepEqual(got, tt.f) {
			t.Errorf("%s %v %s: decoded %+v, %v; want %+v", tt.tag, tt.v, tt.hex, got, err, tt.f)
		}
	}
	// Draft 22: an undefined type, or missing fields, is malformed.
	for _, bad := range []string{"06", "02 07", "01"} {
		if _, err := decodeFilterParam(unhexStr(t, bad), Draft22); err == nil {
			t.Errorf("draft 22 filter %s accepted", bad)
		}
	}
	// Inside a parameter list the draft-22 filter has no Length: a SUBSCRIBE
	// whose filter is cut short does not decode.
	m := &Subscribe{RequestID: 1, Namespace: "n", Track: "t", Filter: Filter{Type: FilterAbsoluteStart, Start: Location{300, 0}}}
	b := body(t, m, Draft22)
	if !bytes.Contains(b, unhexStr(t, "01 02 81 2c 00")) {
		t.Fatalf("draft 22 SUBSCRIBE % x lacks the unprefixed filter", b)
	}
}

// The SETUP AUTHORIZATION TOKEN parameter a client writes reads back as
// its token (USE_VALUE); other alias types and an empty token carry none.
func TestSetupTokenParameterReadsBack(t *testing.T) {
	for _, v := range []Version{Draft14, Draft20, Draft22} {
		if tok, ok := ParseToken(AppendToken(nil, "a.b.c", v), v); !ok || tok != "a.b.c" {
			t.Errorf("%v: %q %v", v, tok, ok)
		}
		for _, bad := range [][]byte{nil, {0x00, 0x01}, {0x03, 0x00}, {0x02, 0x05}} {
			if tok, ok := ParseToken(bad, v); ok {
				t.Errorf("%v % x: token %q", v, bad, tok)
			}
		}
	}
}

func FuzzParseToken(f *testing.F) {
	f.Add(uint8(0), AppendToken(nil, "jwt", Draft14))
	f.Add(uint8(3), AppendToken(nil, "jwt", Draft20))
	f.Fuzz(func(t *testing.T, sel uint8, b []byte) {
		v := fuzzVersions[int(sel)%len(fuzzVersions)]
		tok, ok := ParseToken(b, v)
		if !ok {
			return
		}
		if again, ok := ParseToken(AppendToken(nil, tok, v), v); !ok || again != tok {
			t.Fatalf("%v: token %q reads back as %q", v, tok, again)
		}
	})
}
