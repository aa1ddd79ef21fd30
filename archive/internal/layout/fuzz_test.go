package layout

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// Every reader of archive bytes gets arbitrary input: it returns an error
// or a value, never panics, and what it accepts survives a round trip.

func FuzzParseSegment(f *testing.F) {
	for _, s := range []Segment{xyz(2), xyz(1), audio(2)} {
		b, _ := AppendSegment(nil, s)
		f.Add(b)
	}
	f.Add([]byte{2, 0, 0})
	f.Add([]byte{2, 0, 0x80, 0, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSegment(b)
		if err != nil {
			return
		}
		out, err := AppendSegment(nil, s)
		if err != nil {
			t.Fatalf("an accepted segment does not encode: %v", err)
		}
		again, err := ParseSegment(out)
		if err != nil || !equalSegments(s, again) {
			t.Fatalf("round trip changed the segment: %v", err)
		}
	})
}

func FuzzParseInfo(f *testing.F) {
	f.Add([]byte(`{"version":2,"priority":0,"timescale":1000000}`))
	f.Add([]byte(`{"version":2,"priority":0,"timescale":1000,"epoch":"01900000-0000-7000-8000-000000000001"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := ParseInfo(b)
		if err != nil {
			return
		}
		out, err := MarshalInfo(in)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := ParseInfo(out); err != nil || back != in {
			t.Fatalf("round trip %+v -> %s -> %+v, %v", in, out, back, err)
		}
	})
}

func FuzzTimelineGroup(f *testing.F) {
	frames, _ := EncodeGroup(MarshalCheckpoint(0, 0, []byte(`{"sequence":0,"pts":0,"duration":1,"start":{"group":0},"end":{"group":1}}`)), []byte(`{"pop":1}`))
	f.Add(frames[0], frames[1])
	f.Add([]byte{0xff}, []byte{})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		vals, err := DecodeGroup([][]byte{a, b})
		if err != nil {
			return
		}
		var w Window
		if w.ApplyGroup(vals) != nil {
			return
		}
		for i := w.First; i < w.Next(); i++ {
			r, _ := w.Record(i)
			var rec Record
			_ = json.Unmarshal(r, &rec)
			_, _ = ParseRecordV1(r)
		}
	})
}

func FuzzRecord(f *testing.F) {
	f.Add([]byte(`{"sequence":3,"pts":2000,"duration":60,"start":{"group":40},"end":{"group":42}}`))
	f.Add([]byte(`{"sequence":3,"pts":2000,"duration":60,"start":{"group":40,"frame":1},"end":{"group":42},"keyframe":false,"x":[1]}`))
	f.Add([]byte(`{"sequence":3,"pts":2000,"duration":60,"start":{"group":40,"frame":0},"end":{"group":40,"frame":7},"keyframe":false}`))
	f.Add([]byte(`{"sequence":03,"pts":2000,"duration":60,"start":{"group":40},"end":{"group":42}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		// The compact form's fast path reads what the general one does.
		if c, ok := parseCompactRecord(b); ok {
			var any Record
			if err := any.unmarshalAny(b); err != nil || !reflect.DeepEqual(c, any) {
				t.Fatalf("%s: compact %+v, general %+v, %v", b, c, any, err)
			}
		}
		var r Record
		if json.Unmarshal(b, &r) != nil {
			return
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back Record
		if err := json.Unmarshal(out, &back); err != nil || back.Sequence != r.Sequence || back.Start != r.Start || back.End != r.End || back.Keyframe != r.Keyframe {
			t.Fatalf("round trip %s: %+v, %v", out, back, err)
		}
	})
}

func FuzzNames(f *testing.F) {
	f.Add("catalog%2Ejson", "0009007199254740991", "0000000000000000002.0000000000000000001")
	f.Fuzz(func(t *testing.T, enc, id, groups string) {
		if name, err := DecodeName(enc); err == nil && EncodeName(name) != enc {
			t.Fatalf("%q decoded to %q, which encodes to %q", enc, name, EncodeName(name))
		}
		if v, err := ParseID(id); err == nil && FormatID(v) != id {
			t.Fatalf("id %q read as %d", id, v)
		}
		_, _, _ = ParseGroupsName(groups)
		_, _ = ParseArchiveSection([]byte(enc))
		_, _ = ParseClock([]byte(enc))
	})
}

func FuzzCheckpoint(f *testing.F) {
	rec := []byte(`{"sequence":183,"pts":486999,"duration":3000,"start":{"group":487},"end":{"group":490}}`)
	f.Add(MarshalCheckpoint(0, 183, rec))
	f.Add(MarshalCheckpoint(5, 5, rec, []byte(`{"sequence":184,"pts":489999,"duration":3000,"start":{"group":490,"frame":2},"end":{"group":493},"keyframe":false}`)))
	f.Add(MarshalCheckpoint(0, 0))
	f.Add([]byte(`{"offset":0,"start":01,"records":[]}`))
	f.Add([]byte(` {"offset":0,"records":[{}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		// The writer's form's fast path reads what encoding/json does.
		if c, ok := parseCompactCheckpoint(b); ok {
			var g Checkpoint
			if err := json.Unmarshal(b, &g); err != nil || g.Records == nil {
				t.Fatalf("%s: the fast path took what encoding/json refuses: %v", b, err)
			}
			if c.Offset != g.Offset || (c.Start == nil) != (g.Start == nil) || c.Start != nil && *c.Start != *g.Start || len(c.Records) != len(g.Records) {
				t.Fatalf("%s: fast %+v, general %+v", b, c, g)
			}
			for i := range c.Records {
				if !bytes.Equal(c.Records[i], g.Records[i]) {
					t.Fatalf("%s: record %d: fast %s, general %s", b, i, c.Records[i], g.Records[i])
				}
			}
		}
		// One frame's value, as the decoder splits it.
		if v := trimJSONSpace(b); json.Valid(v) {
			vals, err := splitValues(b, 1)
			if err != nil || len(vals) != 1 || !bytes.Equal(vals[0], v) {
				t.Fatalf("%q: one value %q, the decoder %q, %v", b, v, vals, err)
			}
		}
	})
}
