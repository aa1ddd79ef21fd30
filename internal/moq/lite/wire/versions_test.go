package wire

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/moq/transport/alpn"
	"github.com/moq-export/moq-export/internal/varint"
)

// referenceLayout is one line of the module's testdata/reference-layouts.jsonl: the
// bytes @moq/net 0.3.4's own encoders write for a message in a version
// (interop/src/layouts.ts generates the file; TestReferenceLayoutsAreCurrent
// in package interop checks it is still what the package writes).
type referenceLayout struct {
	Version string `json:"version"`
	Message string `json:"message"`
	Hex     string `json:"hex"`
}

func readReferenceLayouts(t testing.TB) []referenceLayout {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "testdata", "reference-layouts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []referenceLayout
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var l referenceLayout
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		out = append(out, l)
	}
	return out
}

// versionedMessage is a message with per-version layouts.
type versionedMessage interface {
	AppendFor([]byte, *Version) []byte
	DecodeFor([]byte, *Version) error
}

// plain adapts a message with one layout.
type plain struct{ message }

func (p plain) AppendFor(b []byte, _ *Version) []byte { return p.Append(b) }
func (p plain) DecodeFor(b []byte, _ *Version) error  { return p.Decode(b) }

// expectedLayout returns the message the generator encoded (its values are
// fixed in layouts.ts) as it reads in version v, and a fresh one to decode
// into.
func expectedLayout(t *testing.T, name string, v *Version) (want, fresh versionedMessage) {
	switch name {
	case "AnnounceRequest":
		m := &AnnounceRequest{Prefix: "room"}
		if v.ExcludeHop {
			m.ExcludeHop = 7
		}
		return m, &AnnounceRequest{}
	case "AnnounceActive":
		m := &Announce{Status: StatusActive, Suffix: "alice"}
		switch {
		case v.HopIDs:
			m.Hops = []uint64{7, 300}
		case v.HopCount:
			m.Hops = []uint64{0, 0}
		}
		return m, &Announce{}
	case "AnnounceEnded":
		return &Announce{Status: StatusEnded, Suffix: "alice"}, &Announce{}
	case "AnnounceInit":
		return plain{&AnnounceInit{Suffixes: []string{"alice", "bob"}}}, plain{&AnnounceInit{}}
	case "AnnounceOK":
		return plain{&AnnounceOK{HopID: 12345, ActiveCount: 2}}, plain{&AnnounceOK{}}
	case "Subscribe":
		m := &Subscribe{ID: 3, Broadcast: "room/alice", Track: "video", SubscribeParams: SubscribeParams{Priority: 60}}
		if v.SubscribeRange {
			m.Ordered, m.MaxLatency, m.Start, m.End = true, 500, Some(5), Some(9)
		}
		return m, &Subscribe{}
	case "SubscribeUpdate":
		m := &SubscribeUpdate{SubscribeParams{Priority: 80}}
		if v.SubscribeRange {
			m.Start = Some(7)
		}
		return m, &SubscribeUpdate{}
	case "Group":
		return plain{&Group{SubscribeID: 3, Sequence: 5}}, plain{&Group{}}
	case "Probe":
		m := &Probe{Bitrate: 5000000}
		if v.ProbeRTT {
			m.RTT = 12
		}
		return m, &Probe{}
	case "Goaway":
		return plain{&Goaway{URI: "https://b.example/x"}}, plain{&Goaway{}}
	case "Track":
		return plain{&TrackRequest{Broadcast: "room/alice", Track: "video"}}, plain{&TrackRequest{}}
	case "TrackInfo":
		return plain{&TrackInfo{Priority: 1, Ordered: true, MaxLatency: 5000, Timescale: 1000000}}, plain{&TrackInfo{}}
	case "Fetch":
		return plain{&Fetch{Broadcast: "room/alice", Track: "audio", Priority: 80, Group: 41}}, plain{&Fetch{}}
	case "Setup":
		m := &Setup{}
		m.SetVarint(ParamProbe, 1)
		m.SetBytes(ParamPath, []byte("/anon?jwt=x"))
		m.SetVarint(ParamRole, RoleSubscriber)
		m.SetVarint(ParamOrigin, 99)
		return plain{m}, plain{&Setup{}}
	case "SessionInfo":
		return plain{&SessionInfo{Bitrate: 64000}}, plain{&SessionInfo{}}
	}
	t.Fatalf("no expectation for message %q", name)
	return nil, nil
}

// expectedResponse is the subscribe response the generator encoded.
func expectedResponse(t *testing.T, name string, v *Version) SubscribeResponse {
	switch name {
	case "SubscribeOK":
		r := SubscribeResponse{Type: RespAck}
		switch {
		case v.SubscribeRange:
			r.Ack = SubscribeParams{Priority: 60, Ordered: true, MaxLatency: 500, Start: Some(5)}
		case v.SubscribeOKPriority:
			r.Ack.Priority = 60
		}
		return r
	case "SubscribeStart":
		return SubscribeResponse{Type: RespOK, Group: 5}
	case "SubscribeEnd":
		return SubscribeResponse{Type: RespEnd, Group: 9}
	case "SubscribeDrop":
		return SubscribeResponse{Type: RespDrop, Start: 1, End: 2, Code: 13}
	}
	t.Fatalf("no expectation for response %q", name)
	return SubscribeResponse{}
}

// TestReferenceLayouts checks every message of every version against the
// bytes @moq/net writes for it: ours encode to exactly those bytes, and
// those bytes decode to the values the reference encoded.
func TestReferenceLayouts(t *testing.T) {
	seen := map[string]bool{}
	for _, l := range readReferenceLayouts(t) {
		t.Run(l.Version+"/"+l.Message, func(t *testing.T) {
			ref, err := hex.DecodeString(l.Hex)
			if err != nil {
				t.Fatal(err)
			}
			if l.Version == alpn.Legacy {
				checkLegacySetup(t, l.Message, ref)
				return
			}
			v := ByName(l.Version)
			if v == nil {
				t.Fatalf("version %q not in the table", l.Version)
			}
			seen[v.Name] = true
			if strings.HasPrefix(l.Message, "Subscribe") && l.Message != "Subscribe" && l.Message != "SubscribeUpdate" {
				want := expectedResponse(t, l.Message, v)
				if got := want.AppendFor(nil, v); !bytes.Equal(got, ref) {
					t.Fatalf("encoded % x, reference % x", got, ref)
				}
				r := bufio.NewReader(bytes.NewReader(ref))
				got, err := ReadSubscribeResponseFor(r, v)
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("decoded %+v, %v; want %+v", got, err, want)
				}
				if _, err := r.ReadByte(); err != io.EOF {
					t.Fatal("bytes left over")
				}
				return
			}
			want, fresh := expectedLayout(t, l.Message, v)
			if got := want.AppendFor(nil, v); !bytes.Equal(got, ref) {
				t.Fatalf("encoded % x, reference % x", got, ref)
			}
			body, err := ReadMessage(bufio.NewReader(bytes.NewReader(ref)), 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := fresh.DecodeFor(body, v); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fresh, want) {
				t.Fatalf("decoded %+v, want %+v", fresh, want)
			}
		})
	}
	for _, v := range liteVersions() {
		// No reference package here speaks final lite-06: its bytes are
		// the published text's (lite06_test.go).
		if !seen[v.Name] && v != Lite06 {
			t.Errorf("no reference layouts for %s", v.Name)
		}
	}
}

func checkLegacySetup(t *testing.T, name string, ref []byte) {
	r := bufio.NewReader(bytes.NewReader(ref))
	typ, err := varint.Read(r)
	if err != nil {
		t.Fatal(err)
	}
	body, err := ReadLegacyMessage(r)
	if err != nil {
		t.Fatal(err)
	}
	params := []Param{
		LegacyVarintParam(LegacyParamMaxRequestID, 42069),
		LegacyVarintParam(0x40b5a, 1),
		{ID: LegacyParamImplementation, Value: []byte("moq-lite-js")},
	}
	var got []byte
	switch name {
	case "ClientSetup":
		var m ClientSetup
		if typ != StreamClientSetup || m.Decode(body) != nil {
			t.Fatalf("type %#x, %v", typ, m.Decode(body))
		}
		want := ClientSetup{Versions: []uint64{Lite02.Code, Lite01.Code, 0xff00000e}, Params: params}
		if !reflect.DeepEqual(m, want) {
			t.Fatalf("decoded %+v, want %+v", m, want)
		}
		got = want.Append(varint.Append(nil, StreamClientSetup))
	case "ServerSetup":
		var m ServerSetup
		if typ != StreamServerSetup || m.Decode(body) != nil {
			t.Fatalf("type %#x, %v", typ, m.Decode(body))
		}
		want := ServerSetup{Version: Lite02.Code, Params: params}
		if !reflect.DeepEqual(m, want) {
			t.Fatalf("decoded %+v, want %+v", m, want)
		}
		got = want.Append(varint.Append(nil, StreamServerSetup))
	default:
		t.Fatalf("unknown legacy message %q", name)
	}
	if !bytes.Equal(got, ref) {
		t.Fatalf("encoded % x, reference % x", got, ref)
	}
}

// Frames: lite-05 puts the zigzag timestamp delta first (the sheet's §4.9
// examples); earlier versions carry size and payload only (§4.11), as the
// reference's group writer does when the version has no track stream.
func TestFrameLayoutsPerVersion(t *testing.T) {
	for _, v := range liteVersions() {
		want := "47 d0 03 61 62 63 40 42 02 68 69"
		if !v.FrameTimestamps {
			want = "03 61 62 63 02 68 69"
		}
		b := AppendFrameFor(nil, v, 1000, []byte("abc"))
		b = AppendFrameFor(b, v, 33, []byte("hi"))
		if got := hex.EncodeToString(b); got != strings.ReplaceAll(want, " ", "") {
			t.Errorf("%s: % x, want %s", v, b, want)
		}
		fr := NewFrameReader(bufio.NewReader(bytes.NewReader(b)), v)
		for i, w := range []string{"abc", "hi"} {
			p, err := fr.Next()
			if err != nil || string(p) != w {
				t.Fatalf("%s frame %d: %q, %v", v, i, p, err)
			}
		}
		if _, err := fr.Next(); err != io.EOF {
			t.Fatalf("%s: %v after the last frame, want io.EOF", v, err)
		}
		if v.FrameTimestamps && fr.Timestamp != 1033 {
			t.Fatalf("%s: timestamp %d, want 1033", v, fr.Timestamp)
		}
	}
}

func TestResponsesAVersionLacksAppendNothing(t *testing.T) {
	for _, tt := range []struct {
		v    *Version
		resp SubscribeResponse
	}{
		{Lite04, SubscribeResponse{Type: RespEnd, Group: 3}},
		{Lite04, SubscribeResponse{Type: RespOK, Group: 3}},
		{Lite05, SubscribeResponse{Type: RespAck}},
		{Lite02, SubscribeResponse{Type: RespDrop}},
	} {
		if b := tt.resp.AppendFor(nil, tt.v); len(b) != 0 {
			t.Errorf("%s type %d: % x", tt.v, tt.resp.Type, b)
		}
	}
}

func TestRestartStatusOnlyWhereTheVersionHasIt(t *testing.T) {
	body := unhex(t, "02 01 78 00")
	var m Announce
	if err := m.DecodeFor(body, Lite05); err != nil {
		t.Fatalf("lite-05: %v", err)
	}
	if err := m.DecodeFor(body, Lite04); err == nil {
		t.Fatal("lite-04 accepted status 2")
	}
}

func TestVersionLookups(t *testing.T) {
	for _, tt := range []struct {
		name string
		want *Version
	}{{"moq-lite-04", Lite04}, {"lite-03", Lite03}, {"05", Lite05}, {" MOQ-LITE-02 ", Lite02}, {"moq-lite-09", nil}} {
		if got := ByName(tt.name); got != tt.want {
			t.Errorf("ByName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
	if ByALPN("moq-lite-04") != Lite04 || ByALPN(alpn.Legacy) != nil || ByALPN("h3") != nil {
		t.Fatal("ByALPN")
	}
	if ByCode(0xff0dad03) != Lite03 || ByCode(1) != nil {
		t.Fatal("ByCode")
	}
	// moq-lite's part of the ALPN table, in its order: the versions' own
	// tokens, and moql where the first legacy one stands.
	var got, table []string
	for _, v := range Versions {
		toks := []string{v.ALPN()}
		if v.LegacySetup {
			toks = append(toks, alpn.Legacy)
		}
		for _, tok := range toks {
			if tok != "" && !slices.Contains(got, tok) {
				got = append(got, tok)
			}
		}
	}
	for _, tok := range alpn.Table {
		if tok.Code == 0 || alpn.FamilyOf(tok.Code) == alpn.Lite {
			table = append(table, tok.Name)
		}
	}
	if !reflect.DeepEqual(got, table) {
		t.Fatalf("the version table offers %q, the transport's ALPN table %q", got, table)
	}
	for _, v := range Versions {
		if v.LegacySetup {
			continue // reached only through alpn.Legacy
		}
		if ByALPN(v.ALPN()) != v {
			t.Errorf("%s: ALPN %q selects %v", v, v.ALPN(), ByALPN(v.ALPN()))
		}
	}
	if got := LegacyCodes(Versions); !reflect.DeepEqual(got, []uint64{Lite02.Code, Lite01.Code}) {
		t.Fatalf("LegacyCodes = %x", got)
	}
}

// The version table and the ALPN table agree: every version is in
// moq-lite's code space, and the legacy SETUP can choose exactly the
// moq-lite versions the ALPN table says it can, in the same order.
func TestEachVersionsFamilyAndLegacySetupAreTheALPNTables(t *testing.T) {
	var legacy, want []uint64
	for _, v := range Versions {
		if got := alpn.FamilyOf(v.Code); got != alpn.Lite {
			t.Errorf("%s: family %v in the ALPN table, not moq-lite", v.Name, got)
		}
		if v.LegacySetup {
			legacy = append(legacy, v.Code)
		}
	}
	for _, code := range alpn.UnderLegacy {
		if alpn.FamilyOf(code) == alpn.Lite {
			want = append(want, code)
		}
	}
	if !slices.Equal(legacy, want) {
		t.Errorf("legacy SETUP chooses %#x here, %#x in the ALPN table", legacy, want)
	}
}
