package ietf

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"reflect"
	"testing"
)

// Bytes captured off @moq/net 0.3.4: its own encoders, driven by
// interop/tools/ietf-vectors.mjs (run it with node from interop/ after
// scripts/interop-setup.sh to regenerate).
var capturedMessages = []struct {
	name string
	v    Version
	typ  uint64
	hex  string
	want Message
}{
	{"client_setup_14", Draft14, TypeClientSetup,
		"20002c03c0000000ff0dad02c0000000ff0dad01c0000000ff00000e02028000a455070b6d6f712d6c6974652d6a73",
		&ClientSetup{Versions: []Version{0xff0dad02, 0xff0dad01, Draft14}, Params: Params{
			{ID: SetupMaxRequestID, Value: 42069}, {ID: SetupImplementation, Bytes: []byte("moq-lite-js")}}}},
	{"server_setup_14", Draft14, TypeServerSetup,
		"21001bc0000000ff00000e02028000a455070b6d6f712d6c6974652d6a73",
		&ServerSetup{Version: Draft14, Params: Params{
			{ID: SetupMaxRequestID, Value: 42069}, {ID: SetupImplementation, Bytes: []byte("moq-lite-js")}}}},
	{"subscribe_14", Draft14, TypeSubscribe,
		"03001f020207696e7465726f70096469616c2e68616e6705766964656f3c02010200",
		&Subscribe{RequestID: 2, Namespace: "interop/dial.hang", Track: "video", Priority: 60,
			GroupOrder: GroupOrderDescending, Forward: true, Filter: Filter{Type: FilterLargestObject}}},
	{"subscribe_ok_14", Draft14, TypeSubscribeOK, "040006020200020000",
		&SubscribeOK{RequestID: 2, TrackAlias: 2, GroupOrder: GroupOrderDescending}},
	{"publish_namespace_14", Draft14, TypePublishNamespace,
		"060015010207696e7465726f70096469616c2e68616e6700",
		&PublishNamespace{RequestID: 1, Namespace: "interop/dial.hang"}},
	{"publish_done_14", Draft14, TypePublishDone, "0b000f0202000b747261636b20656e646564",
		&PublishDone{RequestID: 2, Status: DoneTrackEnded, Reason: "track ended"}},
	{"request_error_14", Draft14, TypeRequestError,
		"0500170241941342726f616463617374206e6f7420666f756e64",
		&RequestError{RequestID: 2, Code: 404, Reason: "Broadcast not found"}},
	{"goaway_14", Draft14, TypeGoAway, "10000a096d6f71743a2f2f622f", &GoAway{URI: "moqt://b/"}},
	{"max_request_id_14", Draft14, TypeMaxRequestID, "1500024064", &RequestID{ID: 100}},
	{"subscribe_namespace_14", Draft14, TypeSubscribeNamespace14, "11000b040107696e7465726f7000",
		&SubscribeNamespace{RequestID: 4, Prefix: "interop"}},
	{"subscribe_namespace_ok_14", Draft14, TypeSubscribeNamespaceOK, "12000104", &RequestOK{RequestID: 4}},
	{"publish_namespace_ok_14", Draft14, TypeRequestOK, "07000101", &RequestOK{RequestID: 1}},
	{"publish_namespace_done_14", Draft14, TypePublishNamespaceDone,
		"0900130207696e7465726f70096469616c2e68616e67", &PublishNamespaceDone{Namespace: "interop/dial.hang"}},

	{"client_setup_16", Draft16, TypeClientSetup, "20001302028000a455050b6d6f712d6c6974652d6a73",
		&ClientSetup{Versions: []Version{Draft16}, Params: Params{
			{ID: SetupMaxRequestID, Value: 42069}, {ID: SetupImplementation, Bytes: []byte("moq-lite-js")}}}},
	{"subscribe_16", Draft16, TypeSubscribe,
		"030024020207696e7465726f70096469616c2e68616e6705766964656f041001103c0101020102",
		&Subscribe{RequestID: 2, Namespace: "interop/dial.hang", Track: "video", Priority: 60,
			GroupOrder: GroupOrderDescending, Forward: true, Filter: Filter{Type: FilterLargestObject},
			Params: Params{{ID: ParamForward, Value: 1}, {ID: ParamSubscriberPriority, Value: 60},
				{ID: ParamSubscriptionFilter, Bytes: []byte{2}}, {ID: ParamGroupOrder, Value: 2}}}},
	{"subscribe_ok_16", Draft16, TypeSubscribeOK, "040003020200",
		&SubscribeOK{RequestID: 2, TrackAlias: 2}},
	{"request_error_16", Draft16, TypeRequestError,
		"050018024194001342726f616463617374206e6f7420666f756e64",
		&RequestError{RequestID: 2, Code: 404, Reason: "Broadcast not found"}},

	{"subscribe_20", Draft20, TypeSubscribe,
		"030024020207696e7465726f70096469616c2e68616e6705766964656f041001103c0101010102",
		&Subscribe{RequestID: 2, Namespace: "interop/dial.hang", Track: "video", Priority: 60,
			GroupOrder: GroupOrderDescending, Forward: true, Filter: Filter{Type: FilterRelative, Groups: 1},
			Params: Params{{ID: ParamForward, Value: 1}, {ID: ParamSubscriberPriority, Value: 60},
				{ID: ParamSubscriptionFilter, Bytes: []byte{1}}, {ID: ParamGroupOrder, Value: 2}}}},
	{"subscribe_ok_20", Draft20, TypeSubscribeOK, "040008020008cf42401a02",
		&SubscribeOK{TrackAlias: 2, Timescale: 1000000, GroupOrder: GroupOrderDescending}},
	{"publish_done_20", Draft20, TypePublishDone, "0b000e02000b747261636b20656e646564",
		&PublishDone{Status: DoneTrackEnded, Reason: "track ended"}},
	{"request_error_20", Draft20, TypeRequestError, "0500178194001342726f616463617374206e6f7420666f756e64",
		&RequestError{Code: 404, Reason: "Broadcast not found"}},
	{"goaway_20", Draft20, TypeGoAway, "10000b096d6f71743a2f2f622f00", &GoAway{URI: "moqt://b/"}},
	{"subscribe_namespace_20", Draft20, TypeSubscribeNamespace, "50000b040107696e7465726f7000",
		&SubscribeNamespace{RequestID: 4, Prefix: "interop"}},
	{"namespace_20", Draft20, TypeNamespace, "08000b01096469616c2e68616e67", &Namespace{Suffix: "dial.hang"}},
	{"request_ok_20", Draft20, TypeRequestOK, "07000100", &RequestOK{}},
}

func TestCapturedMessagesDecodeAndReencodeByteForByte(t *testing.T) {
	for _, tc := range capturedMessages {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := hex.DecodeString(tc.hex)
			if err != nil {
				t.Fatal(err)
			}
			typ, body, err := ReadMessage(bufio.NewReader(bytes.NewReader(raw)), tc.v)
			if err != nil {
				t.Fatalf("ReadMessage: %v", err)
			}
			if typ != tc.typ {
				t.Fatalf("type %#x, want %#x", typ, tc.typ)
			}
			got := reflect.New(reflect.TypeOf(tc.want).Elem()).Interface().(Message)
			if err := Decode(body, got, tc.v); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("decoded\n %+v\nwant\n %+v", got, tc.want)
			}
			if re := Append(nil, typ, got, tc.v); !bytes.Equal(re, raw) {
				t.Fatalf("re-encoded\n %x\nwant\n %x", re, raw)
			}
		})
	}
}

// The draft 17+ SETUP stream and subgroup streams as @moq/net writes them.
func TestCapturedSetupStreamDraft20(t *testing.T) {
	raw, _ := hex.DecodeString("af00001102c0a455050b6d6f712d6c6974652d6a73")
	r := bufio.NewReader(bytes.NewReader(raw))
	typ, body, err := ReadMessage(r, Draft20)
	if err != nil || typ != TypeSetupStream {
		t.Fatalf("ReadMessage: %#x, %v", typ, err)
	}
	var m Setup
	if err := Decode(body, &m, Draft20); err != nil {
		t.Fatal(err)
	}
	want := Params{{ID: SetupMaxRequestID, Value: 42069}, {ID: SetupImplementation, Bytes: []byte("moq-lite-js")}}
	if !reflect.DeepEqual(m.Params, want) {
		t.Fatalf("params %+v, want %+v", m.Params, want)
	}
	if re := AppendSetupStream(nil, &m, Draft20); !bytes.Equal(re, raw) {
		t.Fatalf("re-encoded %x, want %x", re, raw)
	}
}

func TestCapturedSubgroupStreams(t *testing.T) {
	payload200 := make([]byte, 200)
	const tail = "0000000003" // 200 zero bytes end the second payload, then the end-of-group object
	for _, tc := range []struct {
		name    string
		v       Version
		hexHead string
		header  SubgroupHeader
	}{
		{"subgroup_14", Draft14, "1902412c000005108016e3600568656c6c6f0005108017659540c8",
			SubgroupHeader{TrackAlias: 2, Group: 300, HasPriority: true, Extensions: true, EndOfGroup: true, FirstObject: true}},
		{"subgroup_20", Draft20, "5902812c00000410d6e3600568656c6c6f000410d7659580c8",
			SubgroupHeader{TrackAlias: 2, Group: 300, HasPriority: true, Extensions: true, EndOfGroup: true, FirstObject: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head, _ := hex.DecodeString(tc.hexHead)
			end, _ := hex.DecodeString(tail)
			raw := append(append(append([]byte(nil), head...), payload200[:len(payload200)-1]...), end...)
			r := bufio.NewReader(bytes.NewReader(raw))
			typ, err := ReadVarint(r, tc.v)
			if err != nil || !IsSubgroupType(typ, tc.v) {
				t.Fatalf("stream type %#x: %v", typ, err)
			}
			h, err := ReadSubgroupHeader(r, typ, tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if h != tc.header {
				t.Fatalf("header %+v, want %+v", h, tc.header)
			}
			or := ObjectReader{R: r, V: tc.v, Header: h}
			var got []Object
			for {
				o, err := or.Next()
				if err != nil {
					if err.Error() != "EOF" {
						t.Fatalf("object %d: %v", len(got), err)
					}
					break
				}
				got = append(got, o)
			}
			if len(got) != 3 {
				t.Fatalf("%d objects, want 3", len(got))
			}
			wantTS := []uint64{1500000, 1533333}
			for i, o := range got[:2] {
				ts, scale, ok, err := ObjectTimestamp(o.Extensions, 1000000, tc.v)
				if err != nil || !ok || ts != wantTS[i] || scale != 1000000 || o.ID != uint64(i) || o.Group != 300 {
					t.Errorf("object %d: id %d group %d ts %d/%d ok %v err %v", i, o.ID, o.Group, ts, scale, ok, err)
				}
			}
			if string(got[0].Payload) != "hello" || len(got[1].Payload) != 200 {
				t.Errorf("payloads %q, %d bytes", got[0].Payload, len(got[1].Payload))
			}
			if got[2].ID != 2 || len(got[2].Payload) != 0 || got[2].Status != StatusEndOfGroup {
				t.Errorf("end of group object %+v", got[2])
			}
			// Our encoder writes the same bytes.
			b := AppendSubgroupHeader(nil, h, tc.v)
			b = AppendObject(b, h, 0, AppendTimestampExt(nil, 1500000, tc.v), []byte("hello"), 0, tc.v)
			b = AppendObject(b, h, 0, AppendTimestampExt(nil, 1533333, tc.v), payload200, 0, tc.v)
			b = AppendObject(b, h, 0, nil, nil, StatusEndOfGroup, tc.v)
			if !bytes.Equal(b, raw) {
				t.Fatalf("encoded\n %x\nwant\n %x", b, raw)
			}
		})
	}
}
