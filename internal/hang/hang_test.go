package hang

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/codec/h26x"
	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/model"
)

func TestDecoderReadsEachPackagingsTimestampAndPayload(t *testing.T) {
	tests := []struct {
		name      string
		kind      Kind
		obj       Object
		wantTS    int64
		wantBytes string
		ok        bool
		marker    bool
	}{
		{"LegacyTimestampWins", Legacy, Object{Payload: AppendLegacy(nil, 1_000_000, []byte("x")), Timestamp: 999, Timescale: 1000}, 1_000_000, "x", true, false},
		{"LegacyEmptyPayloadIsMarker", Legacy, Object{Payload: AppendLegacy(nil, 5, nil), Timescale: 1000}, 5, "", true, true},
		{"LOCEmptyPayloadIsMarker", LOC, Object{Payload: AppendLOC(nil, 7, nil), Timescale: 1000}, 7, "", true, true},
		{"RawEmptyPayloadIsData", Raw, Object{Timestamp: 3, Timescale: 1000}, 3000, "", true, false},
		{"LOC", LOC, Object{Payload: AppendLOC(nil, 42, []byte("y")), Timescale: 1000}, 42, "y", true, false},
		// The LOC draft on moq-transport: the bare codec payload, its
		// time in the object's extension.
		{"LOCDraftLayoutTakesTheExtension", LOC, Object{Payload: []byte{0xff, 0xff}, Timestamp: 90_000, Timescale: 90_000, HasTimestamp: true}, 1_000_000, "\xff\xff", true, false},
		{"RawUsesWireTimescale", Raw, Object{Payload: []byte("{}"), Timestamp: 48000, Timescale: 48000}, 1_000_000, "{}", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := NewTrack(tt.kind, nil)
			if err != nil {
				t.Fatal(err)
			}
			dec := tr.Decoder()
			defer dec.Close()
			if err := dec.Decode(tt.obj); err != nil {
				t.Fatal(err)
			}
			f, ok := dec.Next()
			if ok != tt.ok || (ok && (f.Timestamp != tt.wantTS || string(f.Payload) != tt.wantBytes || f.Marker != tt.marker)) {
				t.Fatalf("%+v %v", f, ok)
			}
			if _, more := dec.Next(); more {
				t.Fatal("a second frame from one object")
			}
		})
	}
}

func TestDecoderRefusesWhatItsPackagingDoesNotSay(t *testing.T) {
	for _, tt := range []struct {
		name string
		kind Kind
		obj  Object
	}{
		{"TruncatedLegacyTimestamp", Legacy, Object{Payload: []byte{0x80}}},
		{"LOCWithoutTimestampOrExtension", LOC, Object{Payload: []byte{0x00, 0xff}}},
		{"RawTimestampBeyondInt64", Raw, Object{Timestamp: 1 << 62, Timescale: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr, _ := NewTrack(tt.kind, nil)
			dec := tr.Decoder()
			if err := dec.Decode(tt.obj); !errors.Is(err, ErrMalformed) || errors.Is(err, ErrSkipped) {
				t.Fatalf("got %v, want ErrMalformed", err)
			}
		})
	}
}

func TestACMAFTrackNeedsItsInit(t *testing.T) {
	if _, err := NewTrack(CMAF, nil); !errors.Is(err, ErrNoInit) {
		t.Fatalf("no container: %v", err)
	}
	if _, err := NewTrack(CMAF, &catalog.Container{Kind: catalog.ContainerCMAF, Init: "AAAA"}); !errors.Is(err, catalog.ErrBadInit) {
		t.Fatalf("bad init: %v", err)
	}
	if _, err := NewTrack("mp3", nil); err == nil {
		t.Fatal("unknown packaging accepted")
	}
}

// TestEveryPackagingRoundTripsTheDemoFrameForFrame publishes the demo in
// each packaging, encodes every published frame as a publisher does
// (AppendPayload, the wire timestamp at the track's timescale) and decodes
// it as a subscriber does: the frames are the samples', timestamps, bytes
// and keyframes.
func TestEveryPackagingRoundTripsTheDemoFrameForFrame(t *testing.T) {
	for _, kind := range []Kind{Legacy, LOC, CMAF} {
		t.Run(string(kind), func(t *testing.T) {
			b := model.NewBroadcast("demo")
			cat, err := demo.CatalogIn(nil, catalog.ContainerKind(kind))
			if err != nil {
				t.Fatal(err)
			}
			var cons []*model.Consumer
			for _, r := range cat.Renditions() {
				cons = append(cons, b.CreateTrack(r.Name).Subscribe(0))
			}
			if err := demo.Publish(context.Background(), b, demo.Options{Container: catalog.ContainerKind(kind), Loops: 1, KeepGroups: 1 << 20}); err != nil {
				t.Fatal(err)
			}
			for i, r := range cat.Renditions() {
				pub := ForRendition(cat, r.Name)
				if pub.Kind() != kind {
					t.Fatalf("%s: published as %s", r.Name, pub.Kind())
				}
				sub, err := NewTrack(kind, r.Common().Container)
				if err != nil {
					t.Fatal(err)
				}
				var sample *samples.Sample
				for _, n := range demo.DefaultRenditions {
					if s := samples.MustLoadSample(n); s.Codec == r.Common().Codec {
						sample = s
					}
				}
				var got []model.Frame
				var dec Decoder
				first := true
				for {
					ev, ok := cons[i].Next()
					if !ok || ev.Kind == model.EventEnd {
						break
					}
					if ev.Kind != model.EventFrame {
						continue
					}
					if ev.Keyframe || first {
						dec.Close()
						dec, first = sub.Decoder(), false
					}
					payload := pub.AppendPayload(nil, ev.Frame)
					if len(payload) != pub.PayloadLen(ev.Frame) {
						t.Fatalf("PayloadLen %d, AppendPayload %d bytes", pub.PayloadLen(ev.Frame), len(payload))
					}
					if err := dec.Decode(Object{Payload: payload, Timestamp: pub.WireTimestamp(ev.Frame.Timestamp), Timescale: pub.Timescale()}); err != nil {
						t.Fatal(err)
					}
					for f, ok := dec.Next(); ok; f, ok = dec.Next() {
						got = append(got, f)
					}
				}
				dec.Close()
				if len(got) != len(sample.Frames) {
					t.Fatalf("%s: %d frames, sample has %d", r.Name, len(got), len(sample.Frames))
				}
				shift := got[0].Timestamp - sample.Frames[0].Timestamp
				for j, f := range got {
					sf := sample.Frames[j]
					if d := f.Timestamp - shift - sf.Timestamp; d < -1 || d > 1 {
						t.Errorf("%s frame %d: at %d µs, sample %d (+%d)", r.Name, j, f.Timestamp, sf.Timestamp, shift)
					}
					if !bytes.Equal(f.Payload, sf.Payload) {
						t.Errorf("%s frame %d: payload differs", r.Name, j)
					}
					if key := f.Sync == model.SyncKey; kind == CMAF && key != sf.Keyframe {
						t.Errorf("%s frame %d: keyframe %v, sample %v", r.Name, j, key, sf.Keyframe)
					}
				}
			}
		})
	}
}

func TestABadCMAFFragmentIsSkippedUpToTheNextKeyframe(t *testing.T) {
	cat, err := demo.CatalogIn([]string{"h264"}, catalog.ContainerCMAF)
	if err != nil {
		t.Fatal(err)
	}
	r := cat.Renditions()[0]
	tr, err := NewTrack(CMAF, r.Common().Container)
	if err != nil {
		t.Fatal(err)
	}
	dec := tr.Decoder()
	defer dec.Close()
	err = dec.Decode(Object{Payload: []byte("not a fragment")})
	if !errors.Is(err, ErrSkipped) || !errors.Is(err, ErrMalformed) {
		t.Fatalf("got %v, want ErrSkipped and ErrMalformed", err)
	}
}

func FuzzDecoder(f *testing.F) {
	f.Add(uint8(0), AppendLegacy(nil, 1_000_000, []byte{0xaa}), int64(0), uint64(0), false)
	f.Add(uint8(1), AppendLOC(nil, 42, []byte("y")), int64(5), uint64(90_000), true)
	f.Add(uint8(2), []byte("{}"), int64(1)<<62, uint64(1), true)
	kinds := []Kind{Legacy, LOC, Raw}
	f.Fuzz(func(t *testing.T, k uint8, payload []byte, ts int64, scale uint64, has bool) {
		tr, err := NewTrack(kinds[int(k)%len(kinds)], nil)
		if err != nil {
			t.Fatal(err)
		}
		dec := tr.Decoder()
		defer dec.Close()
		if err := dec.Decode(Object{Payload: payload, Timestamp: ts, Timescale: scale, HasTimestamp: has}); err != nil {
			return
		}
		for fr, ok := dec.Next(); ok; fr, ok = dec.Next() {
			if len(fr.Payload) > len(payload) {
				t.Fatal("frame payload longer than the object's")
			}
		}
	})
}

func TestVerbatimKeepsTheObjectAtItsMediaTime(t *testing.T) {
	legacy, _ := NewTrack(Legacy, nil)
	marker := AppendLegacy(nil, 7, nil)
	for _, tt := range []struct {
		name   string
		tr     Track
		obj    Object
		wantTS int64
	}{
		{"LegacyOwnTime", legacy, Object{Payload: AppendLegacy(nil, 1_000_000, []byte("x")), Timestamp: 5, Timescale: Timescale}, 1_000_000},
		{"LegacyMarkerIsAFrameToo", legacy, Object{Payload: marker, Timescale: Timescale}, 7},
		{"RawWireTime", Track{kind: Raw}, Object{Payload: []byte("{}"), Timestamp: 48000, Timescale: 48000}, 1_000_000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dec := tt.tr.Decoder()
			dec.Verbatim = true
			defer dec.Close()
			if err := dec.Decode(tt.obj); err != nil {
				t.Fatal(err)
			}
			f, ok := dec.Next()
			if !ok || f.Timestamp != tt.wantTS || !bytes.Equal(f.Payload, tt.obj.Payload) {
				t.Fatalf("%+v %v", f, ok)
			}
			if _, more := dec.Next(); more {
				t.Fatal("a second frame")
			}
		})
	}
}

// demoCMAF returns the packaging and the published frames (one moof+mdat
// each, at their frame time) of one loop of the demo's cmaf h264 track.
func demoCMAF(t *testing.T) (Track, []model.Frame) {
	t.Helper()
	cat, err := demo.CatalogIn([]string{"h264"}, catalog.ContainerCMAF)
	if err != nil {
		t.Fatal(err)
	}
	r := cat.Renditions()[0]
	tr, err := NewTrack(CMAF, r.Common().Container)
	if err != nil {
		t.Fatal(err)
	}
	b := model.NewBroadcast("demo")
	cons := b.CreateTrack(r.Name).Subscribe(0)
	if err := demo.Publish(context.Background(), b, demo.Options{Renditions: []string{"h264"}, Container: catalog.ContainerCMAF, Loops: 1, KeepGroups: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	var frames []model.Frame
	for ev, ok := cons.Next(); ok && ev.Kind != model.EventEnd; ev, ok = cons.Next() {
		if ev.Kind == model.EventFrame {
			frames = append(frames, ev.Frame)
		}
	}
	if len(frames) < 2 {
		t.Fatalf("%d demo frames", len(frames))
	}
	return tr, frames
}

func TestACMAFFramesTimestampWinsOverItsTfdt(t *testing.T) {
	tr, frames := demoCMAF(t)
	const moved = 3_000_000 // the frame times say 3 s later than the tfdt
	for _, tt := range []struct {
		name      string
		frameTime bool
		shift     int64
	}{
		{"WithAFrameTime", true, moved},
		// A moq-lite version without frame timestamps, or moq-transport:
		// the fragment's own times.
		{"WithoutOne", false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dec := tr.Decoder()
			defer dec.Close()
			var base int64
			for i, f := range frames {
				o := Object{Payload: f.Payload, Timestamp: tr.WireTimestamp(f.Timestamp + moved), Timescale: tr.Timescale(), FrameTime: tt.frameTime}
				if err := dec.Decode(o); err != nil {
					t.Fatal(err)
				}
				got, ok := dec.Next()
				if !ok {
					t.Fatalf("frame %d: no sample", i)
				}
				if i == 0 {
					base = got.Timestamp - f.Timestamp // the tfdt's origin against the frame time
					if tt.frameTime {
						base = 0
					}
				}
				if d := got.Timestamp - (f.Timestamp + tt.shift + base); d < -1 || d > 1 {
					t.Fatalf("frame %d at %d µs, want %d", i, got.Timestamp, f.Timestamp+tt.shift+base)
				}
			}
		})
	}
}

func TestAnEmptyCMAFPayloadIsAMarkerAtItsFrameTime(t *testing.T) {
	tr, _ := demoCMAF(t)
	dec := tr.Decoder()
	defer dec.Close()
	if err := dec.Decode(Object{Timestamp: 90_000, Timescale: 90_000, FrameTime: true}); err != nil {
		t.Fatal(err)
	}
	f, ok := dec.Next()
	if !ok || !f.Marker || f.Timestamp != 1_000_000 || len(f.Payload) != 0 {
		t.Fatalf("%+v %v, want a marker at 1 s", f, ok)
	}
	if _, more := dec.Next(); more {
		t.Fatal("a second frame")
	}
}

func TestAMarkerIsPublishedAsAnEmptyCodecPayload(t *testing.T) {
	cmaf, _ := demoCMAF(t)
	for _, tr := range []Track{{kind: Legacy}, {kind: LOC}, cmaf} {
		t.Run(string(tr.Kind()), func(t *testing.T) {
			m := model.Frame{Timestamp: 2_000_000, Marker: true}
			p := tr.AppendPayload(nil, m)
			if len(p) != tr.PayloadLen(m) {
				t.Fatalf("PayloadLen %d, AppendPayload %d bytes", tr.PayloadLen(m), len(p))
			}
			dec := tr.Decoder()
			defer dec.Close()
			if err := dec.Decode(Object{Payload: p, Timestamp: tr.WireTimestamp(m.Timestamp), Timescale: tr.Timescale(), FrameTime: true}); err != nil {
				t.Fatal(err)
			}
			if f, ok := dec.Next(); !ok || !f.Marker || f.Timestamp != m.Timestamp {
				t.Fatalf("%+v %v", f, ok)
			}
		})
	}
}

// FuzzKeyframer: the key flag of any payload, in any codec the keyframer
// reads, is SyncKey or SyncDelta, without a panic.
func FuzzKeyframer(f *testing.F) {
	f.Add(uint8(0), []byte{0, 0, 0, 1, 0x65, 0x88})
	f.Add(uint8(1), []byte{0, 0, 0, 2, 0x65, 0x88})
	f.Add(uint8(3), []byte{0x0a, 0x0b, 0, 0, 0, 0x24, 0xc4, 0xff, 0xdf, 0x3f, 0xe0, 0x12, 0x12, 0x00})
	f.Add(uint8(5), []byte{0x82, 0x49, 0x83, 0x42, 0x00})
	ks := []*keyframer{{codec: h26x.H264}, {codec: h26x.H264, lengthSize: 4}, {codec: h26x.H265, lengthSize: 2},
		{family: "av1"}, {family: "vp8"}, {family: "vp9"}}
	f.Fuzz(func(t *testing.T, k uint8, p []byte) {
		if s := ks[int(k)%len(ks)].sync(p); s != model.SyncKey && s != model.SyncDelta {
			t.Fatalf("sync %d", s)
		}
	})
}
