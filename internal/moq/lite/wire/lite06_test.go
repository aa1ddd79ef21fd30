package wire

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/varint"
)

// No installable peer speaks final moq-lite-06 (npm's @moq/net 0.3.4 has
// only the older moq-lite-06-wip), so its layouts are checked against the
// byte vectors of the published text (draft-lcurley-moq-lite-06) as the
// project's sheet gives them (shared/reference/moq-lite-06.md §4.5, §5,
// §9): SOURCED ones are bytes a reference source states or asserts,
// DERIVED ones were computed from the layouts. Each is checked both ways:
// our encoder writes exactly those bytes, and those bytes decode to the
// values.

// sheetVector is one vector: its bytes (with the stream type where the
// message opens a stream), the message, and the stream type it opens with
// (-1: none).
type sheetVector struct {
	name       string
	tag        string // SOURCED or DERIVED
	hex        string
	streamType int
	msg        versionedMessage
	fresh      func() versionedMessage
}

func TestLite06SheetVectorsBothWays(t *testing.T) {
	sub := func(id uint64, path, track string, p SubscribeParams) *Subscribe {
		return &Subscribe{ID: id, Broadcast: path, Track: track, SubscribeParams: p}
	}
	vectors := []sheetVector{
		{"SETUP path /anon?jwt=abc, role 2, hop 12345", "DERIVED",
			"01 17 03 02 0d 2f 61 6e 6f 6e 3f 6a 77 74 3d 61 62 63 03 01 02 05 02 70 39", UniSetup,
			plain{func() *Setup {
				s := &Setup{}
				s.SetBytes(ParamPath, []byte("/anon?jwt=abc"))
				s.SetVarint(ParamRole, RoleSubscriber)
				s.SetVarint(ParamOrigin, 12345)
				return s
			}()}, func() versionedMessage { return plain{&Setup{}} }},
		{"SETUP empty", "DERIVED (SOURCED layout: an empty parameter list)", "01 01 00", UniSetup,
			plain{&Setup{}}, func() versionedMessage { return plain{&Setup{}} }},
		{"ANNOUNCE_REQUEST empty prefix", "DERIVED", "01 01 00", StreamAnnounce,
			&AnnounceRequest{}, func() versionedMessage { return &AnnounceRequest{} }},
		{"ANNOUNCE_REQUEST room", "DERIVED", "01 05 04 72 6f 6f 6d", StreamAnnounce,
			&AnnounceRequest{Prefix: "room"}, func() versionedMessage { return &AnnounceRequest{} }},
		{"TRACK_INFO default", "DERIVED", "0b 00 c0 1f ff ff ff ff ff ff 43 e8", -1,
			&TrackInfo{MaxLatency: NoMaxAge, Timescale: 1000}, func() versionedMessage { return &TrackInfo{} }},
		{"TRACK_INFO prio 80, 30000 ms, 1e6/s", "DERIVED", "09 50 80 00 75 30 80 0f 42 40", -1,
			&TrackInfo{Priority: 80, MaxLatency: 30000, Timescale: 1000000}, func() versionedMessage { return &TrackInfo{} }},
		{"SUBSCRIBE id 0 bbb/video live", "DERIVED", "02 11 00 03 62 62 62 05 76 69 64 65 6f 00 00 00 00 00 00", StreamSubscribe,
			sub(0, "bbb", "video", SubscribeParams{}), func() versionedMessage { return &Subscribe{} }},
		{"SUBSCRIBE age 5000 ms", "DERIVED", "02 12 00 03 62 62 62 05 76 69 64 65 6f 00 53 88 00 00 00 00", StreamSubscribe,
			sub(0, "bbb", "video", SubscribeParams{MaxLatency: 5000}), func() versionedMessage { return &Subscribe{} }},
		{"SUBSCRIBE id 3 age 10000 ms", "DERIVED", "02 12 03 03 62 62 62 05 76 69 64 65 6f 00 67 10 00 00 00 00", StreamSubscribe,
			sub(3, "bbb", "video", SubscribeParams{MaxLatency: 10000}), func() versionedMessage { return &Subscribe{} }},
		{"SUBSCRIBE room/video prio 3, 250 ms, live, end 9", "DERIVED (inputs of a SOURCED test)",
			"13 01 04 72 6f 6f 6d 05 76 69 64 65 6f 03 40 fa 00 0a 00 00", -1,
			sub(1, "room", "video", SubscribeParams{Priority: 3, MaxLatency: 250, End: Some(9)}), func() versionedMessage { return &Subscribe{} }},
		{"SUBSCRIBE floor (7,4) end (9,2)", "DERIVED", "13 01 04 72 6f 6f 6d 05 76 69 64 65 6f 03 40 fa 07 0a 04 03", -1,
			sub(1, "room", "video", SubscribeParams{Priority: 3, MaxLatency: 250, Start: Some(7), FrameStart: 4, End: Some(9), FrameEnd: Some(2)}),
			func() versionedMessage { return &Subscribe{} }},
		{"SUBSCRIBE_UPDATE prio 1, 5000 ms, unbounded", "DERIVED", "07 01 53 88 00 00 00 00", -1,
			&SubscribeUpdate{SubscribeParams{Priority: 1, MaxLatency: 5000}}, func() versionedMessage { return &SubscribeUpdate{} }},
		{"SUBSCRIBE_UPDATE cap at group 20 frame 3", "DERIVED", "07 01 53 88 00 15 00 04", -1,
			&SubscribeUpdate{SubscribeParams{Priority: 1, MaxLatency: 5000, End: Some(20), FrameEnd: Some(3)}},
			func() versionedMessage { return &SubscribeUpdate{} }},
		{"FETCH room/video prio 3 group 7 whole", "DERIVED", "03 0f 04 72 6f 6f 6d 05 76 69 64 65 6f 03 07 00 00", StreamFetch,
			&Fetch{Broadcast: "room", Track: "video", Priority: 3, Group: 7}, func() versionedMessage { return &Fetch{} }},
		{"FETCH frames 2..6", "DERIVED", "03 0f 04 72 6f 6f 6d 05 76 69 64 65 6f 03 07 02 07", StreamFetch,
			&Fetch{Broadcast: "room", Track: "video", Priority: 3, Group: 7, FrameStart: 2, FrameEnd: Some(6)},
			func() versionedMessage { return &Fetch{} }},
		{"GROUP sub 0 seq 5", "DERIVED", "00 03 00 05 00", UniGroup,
			&Group{Sequence: 5}, func() versionedMessage { return &Group{} }},
		{"GROUP sub 1 seq 7 frame start 4", "DERIVED", "00 03 01 07 04", UniGroup,
			&Group{SubscribeID: 1, Sequence: 7, FrameStart: 4}, func() versionedMessage { return &Group{} }},
		{"GOAWAY empty URI", "DERIVED", "05 01 00", StreamGoaway,
			plain{&Goaway{}}, func() versionedMessage { return plain{&Goaway{}} }},
	}
	for _, tt := range vectors {
		t.Run(tt.name, func(t *testing.T) {
			want := unhex(t, tt.hex)
			var got []byte
			if tt.streamType >= 0 {
				got = varint.Append(got, uint64(tt.streamType))
			}
			got = tt.msg.AppendFor(got, Lite06)
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: encoded % x, sheet %s", tt.tag, got, tt.hex)
			}
			r := bufio.NewReader(bytes.NewReader(want))
			if tt.streamType >= 0 {
				if typ, err := varint.Read(r); err != nil || typ != uint64(tt.streamType) {
					t.Fatalf("stream type %d, %v", typ, err)
				}
			}
			body, err := ReadMessage(r, 0)
			if err != nil {
				t.Fatal(err)
			}
			m := tt.fresh()
			if err := m.DecodeFor(body, Lite06); err != nil {
				t.Fatalf("%s: %v", tt.tag, err)
			}
			if !reflect.DeepEqual(m, tt.msg) {
				t.Fatalf("%s: decoded %+v, want %+v", tt.tag, m, tt.msg)
			}
		})
	}
}

func TestLite06AnnouncementVectorsBothWays(t *testing.T) {
	for _, tt := range []struct {
		name, tag, hex string
		m              Announce
	}{
		{"START room/cam hops [7] 12/30", "DERIVED", "00 0d 08 72 6f 6f 6d 2f 63 61 6d 01 07 0c 1e",
			Announce{Type: AnnounceStart, Suffix: "room/cam", Hops: []uint64{7}, Warm: 12, Cold: 30}},
		{"START bbb, browser style cold 2^62-1", "DERIVED", "00 0e 03 62 62 62 00 00 ff ff ff ff ff ff ff ff",
			Announce{Type: AnnounceStart, Suffix: "bbb", Cold: MaxCost}},
		{"START bbb 0/0 (older JS)", "DERIVED", "00 07 03 62 62 62 00 00 00",
			Announce{Type: AnnounceStart, Suffix: "bbb"}},
		{"START clamped broader route (empty suffix)", "DERIVED", "00 04 00 00 00 00",
			Announce{Type: AnnounceStart}},
		{"UPDATE id 3 hops [7] 12/30", "DERIVED", "02 05 03 01 07 0c 1e",
			Announce{Type: AnnounceUpdate, ID: 3, Hops: []uint64{7}, Warm: 12, Cold: 30}},
		{"END id 0", "DERIVED", "01 01 00", Announce{Type: AnnounceEnd}},
		{"END id 42", "SOURCED (length asserted by the reference)", "01 01 2a", Announce{Type: AnnounceEnd, ID: 42}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m.AppendFor(nil, Lite06); !bytes.Equal(got, unhex(t, tt.hex)) {
				t.Fatalf("%s: encoded % x, sheet %s", tt.tag, got, tt.hex)
			}
			r := bufio.NewReader(bytes.NewReader(unhex(t, tt.hex)))
			got, err := ReadAnnounceFor(r, Lite06)
			if err != nil || !reflect.DeepEqual(got, tt.m) {
				t.Fatalf("%s: decoded %+v, %v; want %+v", tt.tag, got, err, tt.m)
			}
			if _, err := r.ReadByte(); err != io.EOF {
				t.Fatal("bytes left over")
			}
		})
	}
}

func TestLite06SubscribeResponsesKeepTheirBytes(t *testing.T) {
	for _, tt := range []struct {
		tag, hex string
		m        SubscribeResponse
	}{
		{"SOURCED", "00 01 04", SubscribeResponse{Type: RespOK, Group: 4}},
		{"SOURCED", "01 01 07", SubscribeResponse{Type: RespEnd, Group: 7}},
		{"DERIVED", "02 03 01 03 00", SubscribeResponse{Type: RespDrop, Start: 1, End: 3}},
	} {
		if got := tt.m.AppendFor(nil, Lite06); !bytes.Equal(got, unhex(t, tt.hex)) {
			t.Errorf("%s %s: encoded % x", tt.tag, tt.hex, got)
		}
		got, err := ReadSubscribeResponseFor(bufio.NewReader(bytes.NewReader(unhex(t, tt.hex))), Lite06)
		if err != nil || got != tt.m {
			t.Errorf("%s %s: decoded %+v, %v", tt.tag, tt.hex, got, err)
		}
	}
}

// The sheet's SOURCED reference vectors of TRACK_INFO and SUBSCRIBE on
// lite-05 and the rule relating them to lite-06: only the Ordered byte goes
// (and SUBSCRIBE gains the two frame fields).
func TestLite06DropsTheOrderedByte(t *testing.T) {
	info := TrackInfo{MaxLatency: NoMaxAge, Timescale: 1000}
	if got := hex.EncodeToString(info.AppendFor(nil, Lite05)); got != "0c0000c01fffffffffffff43e8" {
		t.Fatalf("lite-05 TRACK_INFO default: %s (SOURCED 0c 00 00 c0 1f ff ff ff ff ff ff 43 e8)", got)
	}
	info = TrackInfo{Priority: 80, MaxLatency: 30000, Timescale: 1000000}
	if got := hex.EncodeToString(info.AppendFor(nil, Lite05)); got != "0a500080007530800f4240" {
		t.Fatalf("lite-05 TRACK_INFO prio 80: %s", got)
	}
	m := Subscribe{ID: 1, Broadcast: "room", Track: "video", SubscribeParams: SubscribeParams{Priority: 3, MaxLatency: 250, End: Some(9)}}
	body05 := m.AppendFor(nil, Lite05)[1:]
	body06 := m.AppendFor(nil, Lite06)[1:]
	if want := unhex(t, "01 04 72 6f 6f 6d 05 76 69 64 65 6f 03 00 40 fa 00 0a"); !bytes.Equal(body05, want) {
		t.Fatalf("lite-05 body % x", body05)
	}
	ordered := len("\x01\x04room\x05video\x03")
	derived := append(append(append([]byte{}, body05[:ordered]...), body05[ordered+1:]...), 0, 0)
	if body05[ordered] != 0 || !bytes.Equal(body06, derived) {
		t.Fatalf("lite-06 body % x, want lite-05 without the Ordered byte plus 00 00: % x", body06, derived)
	}
}

func TestLite06ViolationsAreDecodeErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		msg  versionedMessage
		hex  string
		typ  uint64
	}{
		{"SUBSCRIBE frame end without group end", &Subscribe{}, "01 04 72 6f 6f 6d 05 76 69 64 65 6f 03 40 fa 07 00 04 03", 0},
		{"SUBSCRIBE_UPDATE frame end without group end", &SubscribeUpdate{}, "01 53 88 00 00 00 04", 0},
		{"FETCH frame end before frame start", &Fetch{}, "04 72 6f 6f 6d 05 76 69 64 65 6f 03 07 05 03", 0},
		{"ANNOUNCE_START hop repeated", &Announce{}, "03 62 62 62 02 07 07 00 00", AnnounceStart},
		{"ANNOUNCE_UPDATE hop count beyond its entries", &Announce{Type: AnnounceUpdate}, "03 02 07 00 00", AnnounceUpdate},
		{"ANNOUNCE_START 33 hops", &Announce{}, "00 21", AnnounceStart},
		{"ANNOUNCE_END trailing bytes", &Announce{Type: AnnounceEnd}, "03 00", AnnounceEnd},
		{"TRACK_INFO timescale 0", &TrackInfo{}, "00 00 00", 0},
		{"TRACK_INFO with the lite-05 Ordered byte", &TrackInfo{}, "00 00 00 43 e8 00", 0},
	} {
		if a, ok := tt.msg.(*Announce); ok {
			a.Type = tt.typ
		}
		if err := tt.msg.DecodeFor(unhex(t, tt.hex), Lite06); !errors.Is(err, ErrDecode) {
			t.Errorf("%s: %v, want a decode error", tt.name, err)
		}
	}
	// A repeated hop 0 (unknown) is allowed.
	var a Announce
	if err := a.DecodeFor(unhex(t, "03 62 62 62 02 00 00 00 00"), Lite06); err != nil {
		t.Errorf("hops [0 0]: %v", err)
	}
}

func TestUnknownAnnouncementTypesAreSkippedWhole(t *testing.T) {
	b := unhex(t, "07 02 aa bb 01 01 2a")
	r := bufio.NewReader(bytes.NewReader(b))
	if _, err := ReadAnnounceFor(r, Lite06); !errors.Is(err, ErrUnknownAnnounce) {
		t.Fatalf("type 7: %v, want ErrUnknownAnnounce", err)
	}
	m, err := ReadAnnounceFor(r, Lite06)
	if err != nil || m.Type != AnnounceEnd || m.ID != 42 {
		t.Fatalf("after the skipped one: %+v, %v", m, err)
	}
	if _, err := ReadAnnounceFor(r, Lite06); err != io.EOF {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
	if _, err := ReadAnnounceFor(bufio.NewReader(strings.NewReader("\x00")), Lite06); err != io.ErrUnexpectedEOF {
		t.Fatalf("type without body: %v", err)
	}
}

// Lite-06 is offered first, and only under its final name.
func TestLite06IsOfferedFirstUnderItsFinalName(t *testing.T) {
	if Versions[0] != Lite06 || Versions[0].ALPN() != "moq-lite-06" {
		t.Fatalf("first offered: %s", Versions[0].ALPN())
	}
	for _, bad := range []string{"moq-lite-06-wip", "moq-lite-07", "moq-lite-07-wip"} {
		if ByALPN(bad) != nil {
			t.Errorf("%s selects a version", bad)
		}
	}
	if len(Lite06.Lacks()) != 0 {
		t.Errorf("lite-06 lacks %v", Lite06.Lacks())
	}
}
