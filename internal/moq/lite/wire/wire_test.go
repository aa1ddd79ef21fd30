package wire

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/varint"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// message is what every length-prefixed message implements.
type message interface {
	Append([]byte) []byte
	Decode([]byte) error
}

func setupRawQUIC() *Setup {
	s := &Setup{}
	s.SetBytes(ParamPath, []byte("/anon"))
	s.SetVarint(ParamRole, RoleSubscriber)
	return s
}

func setupWebTransport() *Setup {
	s := &Setup{}
	s.SetVarint(ParamRole, RoleSubscriber)
	return s
}

// The byte examples of §4.9 of the wire sheet. prefix is the stream type
// the example starts with (-1: none).
func TestMessagesMatchReferenceBytes(t *testing.T) {
	tests := []struct {
		name   string
		prefix int
		msg    message
		fresh  func() message
		hex    string
	}{
		{"SetupRawQUICPathAnonSubscriber", UniSetup, setupRawQUIC(), func() message { return &Setup{} }, "01 0b 02 02 05 2f 61 6e 6f 6e 03 01 02"},
		{"SetupWebTransportSubscriberOnly", UniSetup, setupWebTransport(), func() message { return &Setup{} }, "01 04 01 03 01 02"},
		{"AnnounceRequestEmptyPrefix", StreamAnnounce, &AnnounceRequest{}, func() message { return &AnnounceRequest{} }, "01 02 00 00"},
		{"AnnounceOKHop12345OneActive", -1, &AnnounceOK{HopID: 12345, ActiveCount: 1}, func() message { return &AnnounceOK{} }, "03 70 39 01"},
		{"AnnounceActiveBBBOneHop", -1, &Announce{Status: StatusActive, Suffix: "bbb", Hops: []uint64{7}}, func() message { return &Announce{} }, "07 01 03 62 62 62 01 07"},
		{"TrackBBBVideo", StreamTrack, &TrackRequest{Broadcast: "bbb", Track: "video"}, func() message { return &TrackRequest{} }, "06 0a 03 62 62 62 05 76 69 64 65 6f"},
		{"TrackInfoDefaults", -1, &TrackInfo{MaxLatency: 5000, Timescale: 1000}, func() message { return &TrackInfo{} }, "06 00 00 53 88 43 e8"},
		{"SubscribeDefaults", StreamSubscribe, &Subscribe{Broadcast: "bbb", Track: "video"}, func() message { return &Subscribe{} }, "02 10 00 03 62 62 62 05 76 69 64 65 6f 00 00 00 00 00"},
		{"GroupSub0Seq5", UniGroup, &Group{Sequence: 5}, func() message { return &Group{} }, "00 02 00 05"},
		// Not in §4.9: laid out by hand from §4.6 (str, str, u8, vi).
		{"FetchBBBVideoGroup5", StreamFetch, &Fetch{Broadcast: "bbb", Track: "video", Group: 5}, func() message { return &Fetch{} }, "03 0c 03 62 62 62 05 76 69 64 65 6f 00 05"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := unhex(t, tt.hex)
			var got []byte
			if tt.prefix >= 0 {
				got = varint.Append(got, uint64(tt.prefix))
			}
			got = tt.msg.Append(got)
			if !bytes.Equal(got, want) {
				t.Fatalf("encoded % x, want % x", got, want)
			}
			r := bufio.NewReader(bytes.NewReader(want))
			if tt.prefix >= 0 {
				typ, err := varint.Read(r)
				if err != nil || typ != uint64(tt.prefix) {
					t.Fatalf("stream type %d, %v", typ, err)
				}
			}
			body, err := ReadMessage(r, 0)
			if err != nil {
				t.Fatal(err)
			}
			m := tt.fresh()
			if err := m.Decode(body); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(m, tt.msg) {
				t.Fatalf("decoded %+v, want %+v", m, tt.msg)
			}
			if _, err := r.ReadByte(); err != io.EOF {
				t.Fatal("bytes left after the message")
			}
		})
	}
}

// TestFetchReplyMatchesReferenceBytes decodes the FETCH reply observed from
// @moq/net (wire sheet, cross-check): bare frames, timestamps at 48 kHz as
// zigzag deltas from 0, then FIN; and encodes the same frames back.
func TestFetchReplyMatchesReferenceBytes(t *testing.T) {
	reply := unhex(t, "43 c0 01 01 47 80 01 02")
	fr := FrameReader{R: bufio.NewReader(bytes.NewReader(reply))}
	want := []struct {
		ts      int64
		payload byte
	}{{480, 1}, {1440, 2}}
	var enc []byte
	last := int64(0)
	for _, w := range want {
		p, err := fr.Next()
		if err != nil || fr.Timestamp != w.ts || !bytes.Equal(p, []byte{w.payload}) {
			t.Fatalf("frame at %d % x, %v; want %d %02x", fr.Timestamp, p, err, w.ts, w.payload)
		}
		enc = AppendFrame(enc, w.ts-last, []byte{w.payload})
		last = w.ts
	}
	if _, err := fr.Next(); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF (the FIN)", err)
	}
	if !bytes.Equal(enc, reply) {
		t.Fatalf("encoded % x, want % x", enc, reply)
	}
}

func TestSubscribeResponsesMatchReferenceBytes(t *testing.T) {
	tests := []struct {
		name string
		msg  SubscribeResponse
		hex  string
	}{
		{"OKGroup5", SubscribeResponse{Type: RespOK, Group: 5}, "00 01 05"},
		{"EndGroup9", SubscribeResponse{Type: RespEnd, Group: 9}, "01 01 09"},
		{"EndAfterGroups0And1", SubscribeResponse{Type: RespEnd, Group: 2}, "01 01 02"},
		{"Drop", SubscribeResponse{Type: RespDrop, Start: 1, End: 3, Code: 2}, "02 03 01 03 02"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := unhex(t, tt.hex)
			if got := tt.msg.Append(nil); !bytes.Equal(got, want) {
				t.Fatalf("encoded % x, want % x", got, want)
			}
			got, err := ReadSubscribeResponse(bufio.NewReader(bytes.NewReader(want)))
			if err != nil || got != tt.msg {
				t.Fatalf("decoded %+v, %v", got, err)
			}
		})
	}
}

func TestFramesMatchReferenceBytes(t *testing.T) {
	want := unhex(t, "47 d0 03 61 62 63 40 42 02 68 69")
	got := AppendFrame(nil, 1000, []byte("abc"))
	got = AppendFrame(got, 33, []byte("hi"))
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded % x, want % x", got, want)
	}
	fr := FrameReader{R: bufio.NewReader(bytes.NewReader(want))}
	for _, w := range []struct {
		ts      int64
		payload string
	}{{1000, "abc"}, {1033, "hi"}} {
		p, err := fr.Next()
		if err != nil || string(p) != w.payload || fr.Timestamp != w.ts {
			t.Fatalf("frame %q at %d, %v; want %q at %d", p, fr.Timestamp, err, w.payload, w.ts)
		}
	}
	if _, err := fr.Next(); err != io.EOF {
		t.Fatalf("end of stream: %v, want io.EOF", err)
	}
}

func TestNegativeDeltaMatchesMoqNetBytes(t *testing.T) {
	// @moq/net: a frame at 1033 ms then one at 1020 ms encode as 48 12, 19.
	got := AppendFrame(nil, 1033, nil)
	got = AppendFrame(got, -13, nil)
	if want := unhex(t, "48 12 00 19 00"); !bytes.Equal(got, want) {
		t.Fatalf("encoded % x, want % x", got, want)
	}
}

func TestFrameCutMidPayloadIsUnexpectedEOF(t *testing.T) {
	fr := FrameReader{R: bufio.NewReader(bytes.NewReader(unhex(t, "00 05 61 62")))}
	if _, err := fr.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v", err)
	}
}

func TestVarintAcceptsNonMinimalForms(t *testing.T) {
	for _, h := range []string{"25", "40 25", "80 00 00 25", "c0 00 00 00 00 00 00 25"} {
		v, n, err := ParseVarint(unhex(t, h))
		if err != nil || v != 37 || n != len(unhex(t, h)) {
			t.Errorf("%s: %d %d %v", h, v, n, err)
		}
	}
}

func TestVarintRoundTripsAtBoundaries(t *testing.T) {
	for _, v := range []uint64{0, 63, 64, 16383, 16384, 1<<30 - 1, 1 << 30, varint.Max} {
		b := varint.Append(nil, v)
		got, n, err := ParseVarint(b)
		if err != nil || got != v || n != len(b) || n != varint.Len(v) {
			t.Errorf("%d: % x -> %d %d %v", v, b, got, n, err)
		}
	}
}

func TestZigzagRoundTrips(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 1000, -13, 1<<61 - 1, -(1 << 61)} {
		if got := Unzigzag(Zigzag(v)); got != v {
			t.Errorf("%d -> %d", v, got)
		}
	}
	if Zigzag(-1) != 1 || Zigzag(1) != 2 {
		t.Fatal("zigzag mapping")
	}
}

func TestDecodersRejectMalformedBodies(t *testing.T) {
	tests := []struct {
		name string
		msg  message
		body string
	}{
		{"TrackInfoOrderedTwo", &TrackInfo{}, "00 02 00 01"},
		{"TrackInfoTimescaleZero", &TrackInfo{}, "00 00 00 00"},
		{"AnnounceStatusThree", &Announce{}, "03 00 00"},
		{"AnnounceTooManyHops", &Announce{}, "01 00 21"},
		{"SetupDuplicateParam", &Setup{}, "02 03 01 02 03 01 02"},
		{"SetupTooManyParams", &Setup{}, "41 00"},
		{"TrackLeftoverBytes", &TrackRequest{}, "00 00 00"},
		{"TrackStringBeyondBody", &TrackRequest{}, "05 61"},
		{"TrackInvalidUTF8", &TrackRequest{}, "01 ff 00"},
		{"GroupTruncated", &Group{}, "00"},
		{"SubscribeHugeLength", &Subscribe{}, "00 c0 ff ff ff ff ff ff ff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.msg.Decode(unhex(t, tt.body)); !errors.Is(err, ErrDecode) {
				t.Fatalf("got %v, want ErrDecode", err)
			}
		})
	}
}

func TestReadMessageRejectsHugeLengthWithoutAllocating(t *testing.T) {
	r := bufio.NewReader(bytes.NewReader(unhex(t, "c0 00 00 01 00 00 00 00")))
	if _, err := ReadMessage(r, 0); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v", err)
	}
}

func TestHugeFrameSizeWithLittleDataAllocatesLittle(t *testing.T) {
	// A 32 MiB size field followed by ten bytes.
	in := append(unhex(t, "00 82 00 00 00"), make([]byte, 10)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fr := FrameReader{R: bufio.NewReader(bytes.NewReader(in))}
	if _, err := fr.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v", err)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("allocated %d bytes for a truncated 32 MiB frame", grew)
	}
}

func TestSetupVarintParamMustBeOneVarint(t *testing.T) {
	s := Setup{Params: []Param{{ID: ParamRole, Value: []byte{2, 0}}}}
	if _, _, err := s.Varint(ParamRole); !errors.Is(err, ErrDecode) {
		t.Fatalf("got %v", err)
	}
	s = *setupRawQUIC()
	if v, ok, err := s.Varint(ParamRole); v != 2 || !ok || err != nil {
		t.Fatalf("role %d %v %v", v, ok, err)
	}
	if _, ok, _ := s.Varint(ParamOrigin); ok {
		t.Fatal("absent origin reported present")
	}
}

func TestRoundTripsOfEveryMessage(t *testing.T) {
	msgs := []struct {
		msg   message
		fresh message
	}{
		{&Subscribe{ID: 1 << 40, Broadcast: "a/b", Track: "t", SubscribeParams: SubscribeParams{Priority: 100, Ordered: true, MaxLatency: 30000, Start: Some(0), End: Some(7)}}, &Subscribe{}},
		{&SubscribeUpdate{SubscribeParams{Priority: 3, Ordered: true, MaxLatency: 1, Start: Some(4)}}, &SubscribeUpdate{}},
		{&Fetch{Broadcast: "b", Track: "t", Priority: 9, Group: 77}, &Fetch{}},
		{&Probe{Bitrate: 5_000_000, RTT: 12}, &Probe{}},
		{&Goaway{URI: "https://x/y"}, &Goaway{}},
		{&Announce{Status: StatusEnded, Suffix: "x"}, &Announce{}},
		{&AnnounceRequest{Prefix: "room", ExcludeHop: 1<<53 - 1}, &AnnounceRequest{}},
	}
	for _, m := range msgs {
		b := m.msg.Append(nil)
		body, err := ReadMessage(bufio.NewReader(bytes.NewReader(b)), 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.fresh.Decode(body); err != nil {
			t.Fatalf("%T: %v", m.msg, err)
		}
		if !reflect.DeepEqual(m.fresh, m.msg) {
			t.Fatalf("%+v != %+v", m.fresh, m.msg)
		}
	}
}

func BenchmarkFrameReader(b *testing.B) {
	payload := bytes.Repeat([]byte{7}, 1200)
	var stream []byte
	for i := range 100 {
		stream = AppendFrame(stream, int64(i*33), payload)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	br := bufio.NewReader(nil)
	for b.Loop() {
		br.Reset(bytes.NewReader(stream))
		fr := FrameReader{R: br}
		for {
			if _, err := fr.Next(); err != nil {
				break
			}
		}
	}
}

func BenchmarkSubscribeAppend(b *testing.B) {
	m := Subscribe{ID: 3, Broadcast: "room/bbb.hang", Track: "video", SubscribeParams: SubscribeParams{Priority: 60}}
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = m.Append(buf[:0])
	}
}
