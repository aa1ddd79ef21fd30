package ietf

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"reflect"
	"testing"
)

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The leading-ones varint of drafts 17+ (draft-ietf-moq-transport-17
// §1.4.1): the number of leading 1 bits gives the extra bytes.
func TestLeadingOnesVarintLayout(t *testing.T) {
	for _, tc := range []struct {
		x   uint64
		hex string
	}{
		{0, "00"}, {127, "7f"}, {128, "8080"}, {1<<14 - 1, "bfff"}, {1 << 14, "c04000"},
		{1<<21 - 1, "dfffff"}, {1 << 21, "e0200000"}, {1<<28 - 1, "efffffff"},
		{1 << 28, "f010000000"}, {1<<35 - 1, "f7ffffffff"}, {1 << 35, "f80800000000"},
		{1<<42 - 1, "fbffffffffff"}, {1 << 42, "fe00040000000000"},
		{1<<56 - 1, "feffffffffffffff"}, {1 << 56, "ff0100000000000000"}, {1<<64 - 1, "ffffffffffffffffff"},
	} {
		got := AppendVarint(nil, tc.x, Draft18)
		if hex.EncodeToString(got) != tc.hex {
			t.Errorf("%d: encoded %x, want %s", tc.x, got, tc.hex)
		}
		x, err := ReadVarint(bufio.NewReader(bytes.NewReader(got)), Draft18)
		if err != nil || x != tc.x {
			t.Errorf("%d: decoded %d, %v", tc.x, x, err)
		}
		d := decoder{b: got, v: Draft18}
		if x := d.varint(); d.finish() != nil || x != tc.x {
			t.Errorf("%d: body decoder %d, %v", tc.x, x, d.err)
		}
	}
	// The 7-byte form 1111110x: 49 bits, valid from draft 18 only.
	seven := mustHex(t, "fd000000000001")
	if x, err := ReadVarint(bufio.NewReader(bytes.NewReader(seven)), Draft18); err != nil || x != 1<<48+1 {
		t.Errorf("7-byte form in draft 18: %d, %v", x, err)
	}
	if _, err := ReadVarint(bufio.NewReader(bytes.NewReader(seven)), Draft17); !errors.Is(err, ErrDecode) {
		t.Errorf("7-byte form in draft 17: %v, want ErrDecode", err)
	}
	// Drafts 14-16 keep QUIC varints: 300 is 412c, not 812c.
	if got := AppendVarint(nil, 300, Draft16); hex.EncodeToString(got) != "412c" {
		t.Errorf("draft 16 varint %x", got)
	}
	if _, err := ReadVarint(bufio.NewReader(bytes.NewReader([]byte{0xc0, 1})), Draft20); err != io.ErrUnexpectedEOF {
		t.Errorf("truncated varint: %v", err)
	}
}

// Messages laid out from the draft-14 text (no @moq/net capture: it does
// not implement FETCH).
func TestDraft14FetchLayout(t *testing.T) {
	for _, tc := range []struct {
		name string
		typ  uint64
		hex  string
		m    Message
	}{
		// FETCH: request id 6, priority 0x3c, ascending, standalone,
		// namespace (interop, a.hang), track "audio", start {7,0}, end
		// {7,0}, no parameters.
		{"fetch", TypeFetch, "16001f063c0101" + "0207696e7465726f7006612e68616e67" + "05617564696f" + "0700" + "0700" + "00",
			&Fetch{RequestID: 6, Priority: 0x3c, GroupOrder: GroupOrderAscending, Type: FetchStandalone,
				Namespace: "interop/a.hang", Track: "audio", Start: Location{7, 0}, End: Location{7, 0}}},
		// FETCH_OK: request id 6, ascending, not the end of the track,
		// end location {7, 3}, no parameters.
		{"fetch_ok", TypeFetchOK, "1800060601000703" + "00",
			&FetchOK{RequestID: 6, GroupOrder: GroupOrderAscending, End: Location{7, 3}}},
		// FETCH_ERROR shares REQUEST_ERROR's draft-14 layout.
		{"fetch_error", TypeFetchError, "190008064194" + "046e6f7065",
			&RequestError{RequestID: 6, Code: 404, Reason: "nope"}},
		// FETCH_CANCEL and UNSUBSCRIBE: the request id.
		{"fetch_cancel", TypeFetchCancel, "17000106", &RequestID{ID: 6}},
		{"unsubscribe", TypeUnsubscribe, "0a000102", &RequestID{ID: 2}},
		// SUBSCRIBE_OK with content: largest {5, 2}.
		{"subscribe_ok_content", TypeSubscribeOK, "0400080202000101050200",
			&SubscribeOK{RequestID: 2, TrackAlias: 2, GroupOrder: GroupOrderAscending, Largest: &Location{5, 2}}},
		// SUBSCRIBE with an absolute range 10..12 from object 0.
		{"subscribe_range", TypeSubscribe, "03000b08000080020104" + "0a000200",
			&Subscribe{RequestID: 8, Namespace: "", Track: "", Priority: 0x80, GroupOrder: 2, Forward: true,
				Filter: Filter{Type: FilterAbsoluteRange, Start: Location{10, 0}, End: 12}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := mustHex(t, tc.hex)
			typ, body, err := ReadMessage(bufio.NewReader(bytes.NewReader(raw)), Draft14)
			if err != nil || typ != tc.typ {
				t.Fatalf("ReadMessage %#x: %v", typ, err)
			}
			got := reflect.New(reflect.TypeOf(tc.m).Elem()).Interface().(Message)
			if err := Decode(body, got, Draft14); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tc.m) {
				t.Fatalf("decoded %+v, want %+v", got, tc.m)
			}
			if re := Append(nil, tc.typ, tc.m, Draft14); !bytes.Equal(re, raw) {
				t.Fatalf("encoded %x, want %x", re, raw)
			}
		})
	}
}

func TestRoundTripsAcrossDrafts(t *testing.T) {
	msgs := []Message{
		&Subscribe{RequestID: 10, Namespace: "a/b", Track: "catalog.json", Priority: 100, GroupOrder: 2, Forward: true,
			Filter: Filter{Type: FilterAbsoluteStart, Start: Location{3, 0}}},
		&SubscribeOK{RequestID: 10, TrackAlias: 7, GroupOrder: 2, Largest: &Location{300, 12}, Timescale: 48000},
		&RequestError{RequestID: 10, Code: 0x10, RetryInterval: 5, Reason: "x"},
		&PublishDone{RequestID: 10, Status: DoneSubscriptionEnded, StreamCount: 40, Reason: ""},
		&PublishNamespace{RequestID: 11, Namespace: `we/ird\/part`},
		&SubscribeNamespace{RequestID: 12, Prefix: "", Options: 1},
		&GoAway{URI: "", Timeout: 3},
		&Fetch{RequestID: 14, Priority: 1, GroupOrder: 1, Type: FetchStandalone, Namespace: "n", Track: "t",
			Start: Location{1 << 40, 0}, End: Location{1<<40 + 1, 0}},
		&Fetch{RequestID: 16, Priority: 1, GroupOrder: 1, Type: FetchRelativeJoining, Joining: 10, Offset: 2},
		&FetchOK{RequestID: 14, GroupOrder: 1, EndOfTrack: true, End: Location{9, 9}},
		&RequestOK{RequestID: 3},
		&Namespace{Suffix: "x/y"},
	}
	for v := Draft14; v <= Newest; v++ {
		for _, m := range msgs {
			raw := Append(nil, 1, m, v)
			_, body, err := ReadMessage(bufio.NewReader(bytes.NewReader(raw)), v)
			if err != nil {
				t.Fatalf("%v %T: %v", v, m, err)
			}
			got := reflect.New(reflect.TypeOf(m).Elem()).Interface().(Message)
			if err := Decode(body, got, v); err != nil {
				t.Fatalf("%v %T: Decode: %v", v, m, err)
			}
			if re := Append(nil, 1, got, v); !bytes.Equal(re, raw) {
				t.Errorf("%v %T: round trip %x, want %x (%+v)", v, m, re, raw, got)
			}
		}
	}
}

func TestNamespaceTupleEscaping(t *testing.T) {
	for _, tc := range []struct {
		path  string
		parts []string
	}{
		{"", nil},
		{"room/alice", []string{"room", "alice"}},
		{`a\/b/c`, []string{"a/b", "c"}},
		{`back\\slash`, []string{`back\slash`}},
	} {
		if got := SplitNamespace(tc.path); !reflect.DeepEqual(got, tc.parts) {
			t.Errorf("Split(%q) = %q, want %q", tc.path, got, tc.parts)
		}
		if got := JoinNamespace(tc.parts); got != tc.path {
			t.Errorf("Join(%q) = %q, want %q", tc.parts, got, tc.path)
		}
	}
}

func TestMalformedMessagesAreDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    Version
		body string
		m    Message
	}{
		{"duplicate parameter", Draft14, "0202000201", &ServerSetup{}},
		{"too many parameters", Draft14, "c0000000ff00000e" + "41", &ServerSetup{}},
		{"leftover bytes", Draft14, "0200", &RequestID{}},
		{"length beyond the body", Draft14, "02410505", &RequestError{}},
		{"namespace of 33 parts", Draft14, "0221", &PublishNamespace{}},
		{"bad boolean", Draft14, "02020002020000", &SubscribeOK{}},
		{"unknown filter", Draft14, "02000000800201" + "09" + "00", &Subscribe{}},
		{"unknown fetch type", Draft14, "0600000900", &Fetch{}},
		{"invalid UTF-8", Draft14, "02000201ff", &RequestError{}},
		{"filter param beyond 4 fields", Draft20, "0200" + "0000" + "01" + "2105" + "0101010101", &Subscribe{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Decode(mustHex(t, tc.body), tc.m, tc.v)
			if !errors.Is(err, ErrDecode) {
				t.Fatalf("Decode: %v, want ErrDecode", err)
			}
		})
	}
}

func TestSubgroupTypes(t *testing.T) {
	for _, tc := range []struct {
		t    uint64
		v    Version
		ok   bool
		want SubgroupHeader
	}{
		{0x10, Draft14, true, SubgroupHeader{HasPriority: true, FirstObject: true}},
		{0x1d, Draft14, true, SubgroupHeader{HasPriority: true, Extensions: true, ExplicitSubgroup: true, EndOfGroup: true, FirstObject: true}},
		{0x32, Draft16, true, SubgroupHeader{SubgroupIsFirstObject: true, FirstObject: true}},
		{0x16, Draft14, false, SubgroupHeader{}}, // subgroup id both implied and explicit
		{0x05, Draft14, false, SubgroupHeader{}}, // the fetch stream type
		{0x50, Draft14, false, SubgroupHeader{}}, // FIRST_OBJECT is not a bit before draft 18
		{0x50, Draft18, true, SubgroupHeader{HasPriority: true, FirstObject: true}},
		{0x10, Draft18, true, SubgroupHeader{HasPriority: true}}, // starts mid-subgroup
	} {
		h, err := subgroupFlags(tc.t, tc.v)
		if (err == nil) != tc.ok {
			t.Errorf("%#x in %v: err %v", tc.t, tc.v, err)
			continue
		}
		if tc.ok {
			if h != tc.want {
				t.Errorf("%#x in %v: %+v, want %+v", tc.t, tc.v, h, tc.want)
			}
			if got := h.Type(tc.v); got != tc.t {
				t.Errorf("%+v: type %#x, want %#x", h, got, tc.t)
			}
		}
	}
}

// Fetch streams: draft 14 spells every field out; drafts 15+ use the
// serialization flags.
func TestFetchObjectsRoundTrip(t *testing.T) {
	type obj struct {
		group, id uint64
		ext       []byte
		payload   string
	}
	objs := []obj{{7, 0, []byte{0x10, 0x05}, "a"}, {7, 1, nil, "bb"}, {7, 3, nil, "c"}, {9, 0, []byte{}, "d"}}
	for v := Draft14; v <= Newest; v++ {
		var b []byte
		w := FetchObjectWriter{V: v}
		for _, o := range objs {
			b = w.Append(b, o.group, o.id, o.ext, []byte(o.payload))
		}
		r := FetchObjectReader{R: bufio.NewReader(bytes.NewReader(b)), V: v}
		for i, o := range objs {
			got, err := r.Next()
			if err != nil {
				t.Fatalf("%v object %d: %v", v, i, err)
			}
			if got.Group != o.group || got.ID != o.id || string(got.Payload) != o.payload || !bytes.Equal(got.Extensions, o.ext) {
				t.Errorf("%v object %d: %+v, want %+v", v, i, got, o)
			}
		}
		if _, err := r.Next(); err != io.EOF {
			t.Errorf("%v: after the last object: %v", v, err)
		}
	}
	// Draft 14's layout: group, subgroup, object, priority, extensions,
	// payload length, payload.
	b := (&FetchObjectWriter{V: Draft14}).Append(nil, 7, 2, []byte{0x10, 0x05}, []byte("hi"))
	if want := "0700020002100502" + "6869"; hex.EncodeToString(b) != want {
		t.Errorf("draft 14 fetch object %x, want %s", b, want)
	}
}

func TestObjectReaderStopsOnTruncationAndBadStatus(t *testing.T) {
	h := SubgroupHeader{HasPriority: true}
	for _, tc := range []struct {
		name string
		hex  string
		want error
	}{
		{"truncated payload", "000568656c", io.ErrUnexpectedEOF},
		{"unknown status", "000009", ErrDecode},
		{"payload beyond the limit", "00" + "c000000010000000", ErrTooLarge},
	} {
		r := ObjectReader{R: bufio.NewReader(bytes.NewReader(mustHex(t, tc.hex))), V: Draft14, Header: h}
		if _, err := r.Next(); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestObjectTimestampReadsDeltaTypesFromDraft16(t *testing.T) {
	// Timescale 0x08 = 90000, then Timestamp 0x10 = 3000: in draft 16+
	// the second type is the delta 0x08.
	ext14 := AppendVarint(AppendVarint(AppendVarint(AppendVarint(nil, 0x08, Draft14), 90000, Draft14), 0x10, Draft14), 3000, Draft14)
	ts, scale, ok, err := ObjectTimestamp(ext14, 1000000, Draft14)
	if err != nil || !ok || ts != 3000 || scale != 90000 {
		t.Errorf("draft 14: %d/%d %v %v", ts, scale, ok, err)
	}
	ext16 := AppendVarint(AppendVarint(AppendVarint(AppendVarint(nil, 0x08, Draft16), 90000, Draft16), 0x08, Draft16), 3000, Draft16)
	ts, scale, ok, err = ObjectTimestamp(ext16, 1000000, Draft16)
	if err != nil || !ok || ts != 3000 || scale != 90000 {
		t.Errorf("draft 16: %d/%d %v %v", ts, scale, ok, err)
	}
	if _, _, ok, err := ObjectTimestamp([]byte{0x0b, 0x01, 0xaa}, 1, Draft14); ok || err != nil {
		t.Errorf("no timestamp: %v %v", ok, err)
	}
}

// TestTrackStatusAndFilterLayouts: draft 14's TRACK_STATUS_OK is
// SUBSCRIBE_OK's layout with Track Alias 0 (draft-ietf-moq-transport-14
// §9.17); draft 20 spells "no filter" as no fields and {0, 0} as the next
// object, so an open-ended absolute start at {0, 0} is written as none.
func TestTrackStatusAndFilterLayouts(t *testing.T) {
	ok := SubscribeOK{RequestID: 3, GroupOrder: GroupOrderDescending, Largest: &Location{Group: 5, Object: 1}}
	got := Append(nil, TypeTrackStatusOK, &ok, Draft14)
	// Type 0x0e, length 8, request id 3, alias 0, expires 0, order 2,
	// content exists 1, largest {5, 1}, no parameters.
	want := []byte{0x0e, 0x00, 0x08, 0x03, 0x00, 0x00, 0x02, 0x01, 0x05, 0x01, 0x00}
	if !bytes.Equal(got, want) {
		t.Errorf("TRACK_STATUS_OK % x, want % x", got, want)
	}
	for _, c := range []struct {
		f    Filter
		want []byte
	}{
		{Filter{Type: FilterAbsoluteStart}, []byte{}},
		{Filter{Type: FilterLargestObject}, []byte{0x00, 0x00}},
		{Filter{Type: FilterAbsoluteStart, Start: Location{Group: 3, Object: 1}}, []byte{0x03, 0x01}},
		{Filter{Type: FilterAbsoluteRange, Start: Location{Group: 1}, End: 2}, []byte{0x01, 0x00, 0x01}},
		{Filter{Type: FilterRelative, Groups: 2}, []byte{0x02}},
	} {
		if got := c.f.param(Draft20); !bytes.Equal(got, c.want) {
			t.Errorf("%+v: % x, want % x", c.f, got, c.want)
		}
		if back, err := decodeFilterParam(c.want, Draft20); err != nil || back != c.f {
			t.Errorf("% x decodes as %+v, %v; want %+v", c.want, back, err, c.f)
		}
	}
}
