package layout

import (
	"bytes"
	"compress/flate"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTrackNamesEncodeAsTheSheetShows(t *testing.T) {
	for _, c := range []struct{ name, enc string }{
		// SOURCED (RS-path tests)
		{"catalog.json", "catalog%2Ejson"},
		{"AZaz09_-", "AZaz09_-"},
		{".hidden", "%2Ehidden"},
		{"a/b", "a%2Fb"},
		{" ", "%20"},
		{"é", "%C3%A9"},
		// DERIVED
		{"catalog.json.timeline.z", "catalog%2Ejson%2Etimeline%2Ez"},
		{"catalog.json.z", "catalog%2Ejson%2Ez"},
		{"catalog", "catalog"},
		{"0.flv-v", "0%2Eflv-v"},
		{"0.flv-a.timeline.z", "0%2Eflv-a%2Etimeline%2Ez"},
	} {
		if got := EncodeName(c.name); got != c.enc {
			t.Errorf("EncodeName(%q) = %q, want %q", c.name, got, c.enc)
		}
		if got, err := DecodeName(c.enc); err != nil || got != c.name {
			t.Errorf("DecodeName(%q) = %q, %v, want %q", c.enc, got, err, c.name)
		}
	}
}

func TestNonCanonicalNamesAreRefused(t *testing.T) {
	for _, enc := range []string{"catalog%2ejson", "%41", "a/b", ".info", "", "%2", "%", "a%zz"} {
		if _, err := DecodeName(enc); !errors.Is(err, ErrName) {
			t.Errorf("DecodeName(%q) = %v, want ErrName", enc, err)
		}
	}
}

func TestIDsAreNineteenDigits(t *testing.T) {
	if got := FormatID(0); got != "0000000000000000000" {
		t.Errorf("FormatID(0) = %q", got)
	}
	if got := FormatID(IDMax); got != "0009007199254740991" {
		t.Errorf("FormatID(max) = %q", got)
	}
	if v, err := ParseID("0009007199254740991"); err != nil || v != IDMax {
		t.Errorf("ParseID(max) = %d, %v", v, err)
	}
	for _, s := range []string{"5", "0009007199254740992", "000000000000000000a", "-000000000000000001"} {
		if _, err := ParseID(s); !errors.Is(err, ErrName) {
			t.Errorf("ParseID(%q) = %v, want ErrName", s, err)
		}
	}
}

func TestKeysFollowTheLayout(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		// SOURCED v1 keys (RS-path)
		{GroupsKey("rec", "v", IDMax, 0), "rec/v/groups/0009007199254740991.0000000000000000000"},
		{GroupsKey("", "catalog.json", 2, 1), "catalog%2Ejson/groups/0000000000000000002.0000000000000000001"},
		{InfoKey("rec", "catalog.json"), "rec/catalog%2Ejson/.info"},
		// DERIVED v2 keys
		{SegmentKey("rec", "audio", 3), "rec/audio/segments/0000000000000000003"},
		{SegmentKey("rec", TimelineOf("audio"), 3), "rec/audio%2Etimeline%2Ez/segments/0000000000000000003"},
		{SegmentsDir("rec/", "audio"), "rec/audio/segments/"},
		{SegmentKey("", "v", IDMax), "v/segments/0009007199254740991"},
		{KeyIn(SegmentsDir("rec", "audio"), 0), "rec/audio/segments/0000000000000000000"},
		{KeyIn(SegmentsDir("rec", "audio"), 1234567890123456789), "rec/audio/segments/1234567890123456789"},
	} {
		if c.got != c.want {
			t.Errorf("key %q, want %q", c.got, c.want)
		}
	}
	l, s, err := ParseGroupsName("0000000000000000002.0000000000000000001")
	if err != nil || l != 2 || s != 1 {
		t.Errorf("ParseGroupsName = %d, %d, %v", l, s, err)
	}
	if _, _, err := ParseGroupsName("0000000000000000001.0000000000000000002"); !errors.Is(err, ErrName) {
		t.Errorf("a reversed range = %v, want ErrName", err)
	}
}

func TestInfoObjectsMatchTheReference(t *testing.T) {
	for _, c := range []struct {
		in   Info
		json string
	}{
		{Info{Version: 2, Timescale: 1000000}, `{"version":2,"priority":0,"timescale":1000000}`},
		{Info{Version: 2, Timescale: 1000, Epoch: "01900000-0000-7000-8000-000000000001"},
			`{"version":2,"priority":0,"timescale":1000,"epoch":"01900000-0000-7000-8000-000000000001"}`},
		{Info{Version: 1, Priority: 7, Timescale: 1000}, `{"version":1,"priority":7,"timescale":1000}`},
	} {
		b, err := MarshalInfo(c.in)
		if err != nil || string(b) != c.json {
			t.Errorf("MarshalInfo(%+v) = %s, %v, want %s", c.in, b, err, c.json)
		}
		got, err := ParseInfo([]byte(c.json))
		if err != nil || got != c.in {
			t.Errorf("ParseInfo(%s) = %+v, %v", c.json, got, err)
		}
	}
	a, errA := ParseInfo([]byte(`{ "version": 2, "priority": 7, "timescale": 1000 }`))
	b, errB := ParseInfo([]byte(`{"timescale":1000,"priority":7,"version":2}`))
	if errA != nil || errB != nil || !SameTrack(a, b) {
		t.Errorf("whitespace and member order changed the .info: %+v %v, %+v %v", a, errA, b, errB)
	}
	if SameTrack(a, Info{Version: 2, Priority: 7, Timescale: 1000, Epoch: "01900000-0000-7000-8000-000000000001"}) {
		t.Error("an epoch matched an absent one")
	}
	for _, bad := range []string{
		`{"version":3,"priority":0,"timescale":1000}`,
		`{"version":2,"priority":0,"timescale":1000,"epoch":"not-a-uuid"}`,
		`{"version":2,"priority":0,"timescale":1000,"extra":1}`,
		`{"version":2,"priority":0}`,
		`{"version":2,"priority":0,"timescale":0}`,
		`{"version":2,"priority":256,"timescale":1000}`,
		`{"version":1,"priority":0,"timescale":1000,"epoch":"01900000-0000-7000-8000-000000000001"}`,
		`{"version":2,"priority":0,"timescale":1000}{}`,
		`[`,
	} {
		if _, err := ParseInfo([]byte(bad)); err == nil {
			t.Errorf("ParseInfo(%s) accepted it", bad)
		}
	}
}

// xyz is the structure of RS-seg2's first_id_is_absolute_then_minus_one_deltas.
func xyz(version int) Segment {
	return Segment{Version: version, Groups: []Group{
		{Sequence: 5, Frames: []Frame{{0, []byte("x")}}},
		{Sequence: 6, Frames: []Frame{{1, []byte("y")}}},
		{Sequence: 10, Frames: []Frame{{2, []byte("z")}}},
	}}
}

// audio is the sheet's worked example: track audio, record 3, groups 40-41.
func audio(version int) Segment {
	return Segment{Version: version, Groups: []Group{
		{Sequence: 40, Frames: []Frame{{2000000, []byte{0x80, 0x1e, 0x84, 0x80, 0xfc, 0xff, 0xfe}}}},
		{Sequence: 41, Frames: []Frame{
			{2020000, []byte{0x80, 0x1e, 0xd2, 0xa0, 0xfc, 0x01}},
			{2040000, []byte{0x80, 0x1f, 0x20, 0xc0, 0xfc, 0x02}},
		}},
	}}
}

func TestSegmentObjectsMatchTheSheetBytes(t *testing.T) {
	const audioPayload = "80 1e 84 80 fc ff fe  80 1e d2 a0 fc 01  80 1f 20 c0 fc 02"
	for _, c := range []struct {
		name string
		seg  Segment
		hex  string
	}{
		{"v2 deltas", xyz(2), "02 00 03  05 01 00 00 01  00 01 01 01 01  03 01 02 02 01  78 79 7a"},
		{"v1 deltas", xyz(1), "01 03  05 01 00 00 01  00 01 01 01 01  03 01 02 02 01  78 79 7a"},
		{"v2 worked example", audio(2), "02 00 02 28 01 80 1e 84 80 00 07 00 02 80 1e d2 a0 07 06 80 1f 20 c0 0d 06" + audioPayload},
		{"v1 worked example", audio(1), "01 02 28 01 80 1e 84 80 00 07 00 02 80 1e d2 a0 07 06 80 1f 20 c0 0d 06" + audioPayload},
		{"v2 split group", Segment{Version: 2, FrameStart: 3, Groups: []Group{
			{Sequence: 7, Frames: []Frame{{1100, []byte("A")}, {1133, []byte("BB")}}},
			{Sequence: 8, Frames: []Frame{{1166, []byte("C")}}},
		}}, "02 03 02 07 02 44 4c 00 01 44 6d 01 02 00 01 44 8e 03 01 41 42 42 43"},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := unhex(t, c.hex)
			got, err := AppendSegment(nil, c.seg)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("AppendSegment = % x, %v\nwant          % x", got, err, want)
			}
			back, err := ParseSegment(want)
			if err != nil {
				t.Fatal(err)
			}
			if c.seg.Version == 0 {
				c.seg.Version = 2
			}
			if !equalSegments(back, c.seg) {
				t.Errorf("ParseSegment = %+v, want %+v", back, c.seg)
			}
		})
	}
	if b, _ := AppendSegment(nil, audio(2)); len(b) != 44 {
		t.Errorf("the worked example is %d bytes, the sheet says 44", len(b))
	}
}

func equalSegments(a, b Segment) bool {
	if a.Version != b.Version || a.FrameStart != b.FrameStart || len(a.Groups) != len(b.Groups) {
		return false
	}
	for i := range a.Groups {
		ga, gb := a.Groups[i], b.Groups[i]
		if ga.Sequence != gb.Sequence || len(ga.Frames) != len(gb.Frames) {
			return false
		}
		for j := range ga.Frames {
			if ga.Frames[j].Timestamp != gb.Frames[j].Timestamp || !bytes.Equal(ga.Frames[j].Payload, gb.Frames[j].Payload) {
				return false
			}
		}
	}
	return true
}

func TestFrameStartThreeHundredRoundTrips(t *testing.T) {
	s := Segment{Version: 2, FrameStart: 300, Groups: []Group{{Sequence: 1, Frames: []Frame{{5, []byte("p")}}}}}
	b, err := AppendSegment(nil, s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseSegment(b)
	if err != nil || got.FrameStart != 300 {
		t.Fatalf("FrameStart = %d, %v", got.FrameStart, err)
	}
}

func TestBadSegmentObjectsAreRefusedWithTheirReason(t *testing.T) {
	for _, c := range []struct {
		name, hex string
		want      error
	}{
		{"zero groups", "02 00 00", ErrEmpty},
		{"a single version byte", "02", ErrMalformed},
		{"version 3", "03 00 01 00 00", ErrVersion},
		{"version 0 (a v0 FRAME-encoded object)", "00 01", ErrVersion},
		{"a v0 object starting with group 40", "28 0c 80 3d 09 00 07", ErrVersion},
		{"a truncated varint", "02 00 01 40", ErrMalformed},
		{"more groups than bytes", "02 00 80 00 ff ff 00", ErrMalformed},
		{"more frames than bytes", "02 00 01 00 80 00 10 00 00 00 00", ErrMalformed},
		{"an offset that leaves a hole", "02 00 01 00 01 00 01 01 78 79", ErrMalformed},
		{"a length past the end", "02 00 01 00 01 00 00 09 78", ErrMalformed},
		{"trailing payload bytes", "02 00 01 00 01 00 00 01 78 79", ErrMalformed},
		{"a timestamp above 2^53-1", "02 00 01 00 01 c0 20 00 00 00 00 00 00 00 01 78", ErrMalformed},
		{"a frame start above 2^53-1", "02 c0 20 00 00 00 00 00 00 01 00 01 00 00 01 78", ErrMalformed},
		{"a sequence that overflows after a delta", "02 00 02 c0 1f ff ff ff ff ff ff 00 c0 1f ff ff ff ff ff ff 00", ErrMalformed},
		{"a huge length that would overflow", "02 00 01 00 01 00 00 ff ff ff ff ff ff ff ff", ErrMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ParseSegment(unhex(t, c.hex)); !errors.Is(err, c.want) {
				t.Errorf("ParseSegment = %v, want %v", err, c.want)
			}
		})
	}
}

func TestSpansAreCheckedAgainstTheirRecord(t *testing.T) {
	split := Segment{Version: 2, FrameStart: 3, Groups: []Group{
		{Sequence: 7, Frames: []Frame{{1100, []byte("A")}, {1133, []byte("BB")}}},
		{Sequence: 8, Frames: []Frame{{1166, []byte("C")}}},
	}}
	for _, c := range []struct {
		name       string
		seg        Segment
		start, end Position
		ok         bool
	}{
		{"the worked example's span", audio(2), Position{40, 0}, Position{42, 0}, true},
		{"the split example's span", split, Position{7, 3}, Position{9, 0}, true},
		{"ending inside the last group", audio(2), Position{40, 0}, Position{41, 2}, true},
		{"a wrong start group", audio(2), Position{39, 0}, Position{42, 0}, false},
		{"a wrong frame start", split, Position{7, 0}, Position{9, 0}, false},
		{"ending early", audio(2), Position{40, 0}, Position{41, 0}, false},
		{"ending at a wrong frame", audio(2), Position{40, 0}, Position{41, 1}, false},
		{"a hole inside", xyz(2), Position{5, 0}, Position{11, 0}, false},
	} {
		err := CheckSpan(c.seg, c.start, c.end)
		if (err == nil) != c.ok {
			t.Errorf("%s: CheckSpan = %v", c.name, err)
		}
	}
}

func TestASegmentContinuesTheRecordBeforeOnlyWhereItsSpanWouldStart(t *testing.T) {
	split := Segment{Version: 2, FrameStart: 3, Groups: []Group{
		{Sequence: 7, Frames: []Frame{{1100, []byte("A")}, {1133, []byte("BB")}}},
		{Sequence: 8, Frames: []Frame{{1166, []byte("C")}}},
	}}
	alone := Segment{Version: 2, FrameStart: 3, Groups: []Group{{Sequence: 7, Frames: []Frame{{1100, []byte("A")}}}}}
	if got, want := Last(split), (Position{8, 1}); got != want {
		t.Errorf("Last of the split example = %v, want %v", got, want)
	}
	if got, want := Last(alone), (Position{7, 4}); got != want {
		t.Errorf("Last of a group split at both ends = %v, want %v", got, want)
	}
	for _, c := range []struct {
		name string
		seg  Segment
		prev Position
		ok   bool
	}{
		{"the next group from its first frame", audio(2), Position{39, 5}, true},
		{"the rest of the group the record before ended in", split, Position{7, 3}, true},
		{"a group later: a hole", audio(2), Position{38, 5}, false},
		{"the same group again from its start", audio(2), Position{40, 5}, false},
		{"the rest of a group from the wrong frame", split, Position{7, 2}, false},
		{"the next group from a later frame", split, Position{6, 9}, false},
		{"an earlier group", audio(2), Position{41, 0}, false},
		{"a hole inside", xyz(2), Position{4, 1}, false},
	} {
		if got := Continues(c.seg, c.prev); got != c.ok {
			t.Errorf("%s: Continues = %v, want %v", c.name, got, c.ok)
		}
	}
}

func TestRecordsMatchTheSheet(t *testing.T) {
	const derived = `{"sequence":3,"pts":2000,"duration":60,"start":{"group":40},"end":{"group":42}}`
	r := Record{Sequence: 3, PTS: 2000, Duration: 60, Start: Position{40, 0}, End: Position{42, 0}, Keyframe: true}
	b, err := json.Marshal(r)
	if err != nil || string(b) != derived {
		t.Fatalf("Marshal = %s, %v, want %s", b, err, derived)
	}
	var back Record
	if err := json.Unmarshal([]byte(derived), &back); err != nil || back.PTS != 2000 || back.End.Group != 42 || !back.Keyframe {
		t.Fatalf("Unmarshal = %+v, %v", back, err)
	}
	var zero Record
	if err := json.Unmarshal([]byte(`{"sequence":3,"pts":2000,"duration":60,"start":{"group":40,"frame":0},"end":{"group":41,"frame":2},"keyframe":false,"future":{"x":1}}`), &zero); err != nil {
		t.Fatal(err)
	}
	if zero.Start != (Position{40, 0}) || zero.End != (Position{41, 2}) || zero.Keyframe {
		t.Errorf("positions or keyframe: %+v", zero)
	}
	out, _ := json.Marshal(zero)
	if !strings.Contains(string(out), `"future":{"x":1}`) {
		t.Errorf("an unknown member was not preserved: %s", out)
	}
	for _, bad := range []string{`{"pts":1}`, `{"sequence":1,"pts":-1,"duration":1,"start":{"group":1},"end":{"group":2}}`,
		`{"sequence":1,"pts":1,"duration":1,"start":{"group":2},"end":{"group":1}}`,
		`{"sequence":9007199254740992,"pts":1,"duration":1,"start":{"group":1},"end":{"group":2}}`} {
		if err := json.Unmarshal([]byte(bad), new(Record)); !errors.Is(err, ErrMalformed) {
			t.Errorf("Unmarshal(%s) = %v", bad, err)
		}
	}
}

func TestVersionOneRecordsParse(t *testing.T) {
	for _, s := range []string{ // SOURCED (RS-tl tests)
		`{"segment":3,"pts":84000,"duration":6000,"tracks":{"audio":[{"start":512,"end":540},{"start":550,"end":560}],"video":[{"start":42,"end":42}]}}`,
		`{"segment":1,"pts":1000,"duration":500}`,
		`{"segment":0,"pts":0,"duration":2000,"tracks":{"video":[{"start":7,"end":9,"keyframe":false}]}}`,
	} {
		r, err := ParseRecordV1([]byte(s))
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		out, _ := json.Marshal(r)
		if string(out) != s {
			t.Errorf("round trip %s, want %s", out, s)
		}
	}
	if _, err := ParseRecordV1([]byte(`{"segment":1,"pts":0,"duration":1,"tracks":{"v":[{"start":9,"end":7}]}}`)); err == nil {
		t.Error("a reversed range was accepted")
	}
}

func TestTimelineFramesAreSyncFlushedWithoutTrailer(t *testing.T) {
	vals := [][]byte{MarshalCheckpoint(0, 0), []byte(`{"push":{"n":1}}`), []byte(`{"pop":1}`)}
	frames, err := EncodeGroup(vals...)
	if err != nil {
		t.Fatal(err)
	}
	// An independent inflate of every frame with the trailer appended
	// gives back the values in order.
	var in bytes.Buffer
	for _, f := range frames {
		if bytes.HasSuffix(f, syncTrailer) {
			t.Errorf("frame ends with the trailer: % x", f)
		}
		in.Write(f)
		in.Write([]byte{0, 0, 0xff, 0xff})
	}
	out, _ := io.ReadAll(flate.NewReader(&in))
	if want := string(bytes.Join(vals, nil)); string(out) != want {
		t.Errorf("inflated %q, want %q", out, want)
	}
	got, err := DecodeGroup(frames)
	if err != nil || len(got) != 3 || string(got[1]) != string(vals[1]) {
		t.Errorf("DecodeGroup = %q, %v", got, err)
	}
	if _, err := DecodeGroup([][]byte{{0xff, 0xff, 0xff}}); !errors.Is(err, ErrMalformed) {
		t.Errorf("garbage = %v, want ErrMalformed", err)
	}
}

func TestWindowAppliesCheckpointsPushesAndPops(t *testing.T) {
	rec := func(i int) []byte { return []byte(`{"sequence":` + string(rune('0'+i)) + `}`) }
	var w Window
	steps := []struct {
		values              [][]byte
		offset, first, next uint64
	}{
		{[][]byte{MarshalCheckpoint(0, 0, rec(0)), []byte(`{"push":` + string(rec(1)) + `}`)}, 0, 0, 2},
		// A checkpoint restating only the newest record keeps the older
		// ones this reader already has.
		{[][]byte{MarshalCheckpoint(0, 2, rec(2))}, 0, 0, 3},
		{[][]byte{MarshalCheckpoint(1, 3, rec(3)), []byte(`{"pop":1}`)}, 2, 2, 4},
	}
	for i, s := range steps {
		vals := make([]json.RawMessage, len(s.values))
		for j, v := range s.values {
			vals[j] = v
		}
		if err := w.ApplyGroup(vals); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if w.Offset != s.offset || w.First != s.first || w.Next() != s.next {
			t.Fatalf("step %d: offset %d first %d next %d, want %d %d %d", i, w.Offset, w.First, w.Next(), s.offset, s.first, s.next)
		}
	}
	if r, ok := w.Record(3); !ok || string(r) != string(rec(3)) {
		t.Errorf("record 3 = %s, %v", r, ok)
	}
	if len(w.Skipped) != 0 {
		t.Errorf("skipped %v, want none", w.Skipped)
	}
	var fresh Window
	if err := fresh.ApplyGroup([]json.RawMessage{MarshalCheckpoint(0, 5, rec(5))}); err != nil {
		t.Fatal(err)
	}
	if len(fresh.Skipped) != 1 || fresh.Skipped[0] != [2]uint64{0, 5} {
		t.Errorf("a reader that joined at a suffix skipped %v, want [0 5)", fresh.Skipped)
	}
	for _, bad := range [][]json.RawMessage{
		{json.RawMessage(`{"push":{}}`)},
		{MarshalCheckpoint(0, 0), json.RawMessage(`{"pop":5}`)},
		{MarshalCheckpoint(0, 0), json.RawMessage(`{"nothing":1}`)},
		{json.RawMessage(`{"offset":5,"start":2,"records":[]}`)},
	} {
		var w Window
		if err := w.ApplyGroup(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("ApplyGroup(%s) = %v, want ErrMalformed", bad, err)
		}
	}
}

func TestCatalogSectionsAreFoundInEveryVersion(t *testing.T) {
	v2 := `{"archive": { "timelines": { "catalog.json": "catalog.json.timeline.z", "video": "video.timeline.z",
             "audio": "audio.timeline.z" }, "timescale": 1000, "durationMax": 10000 }}`
	a, ok := ParseArchiveSection([]byte(v2))
	if !ok || a.Timelines["video"] != "video.timeline.z" || a.DurationMax != 10000 || a.Timescale != 1000 {
		t.Errorf("v2 section = %+v, %v", a, ok)
	}
	a, ok = ParseArchiveSection([]byte(`{"archive":{"track":"timeline.z","timescale":1000,"replay":"recordings/clip","store":"https://objects.example/rec/","version":1}}`))
	if !ok || a.Track != "timeline.z" || a.Version != 1 {
		t.Errorf("v1 section = %+v, %v", a, ok)
	}
	a, ok = ParseArchiveSection([]byte(`{"timeline":{"track":"timeline.z","wall":5}}`))
	if !ok || a.Track != "timeline.z" || a.Timescale != ArchiveTimescale {
		t.Errorf("root timeline = %+v, %v", a, ok)
	}
	if _, ok := ParseArchiveSection([]byte(`{"video":{}}`)); ok {
		t.Error("a catalog without a section had one")
	}
}

func TestClockMapsMediaTimeToWallTime(t *testing.T) {
	c, ok := ParseClock([]byte(`{"clock":{"wall":212976000000000}}`))
	if !ok || c.Timescale != 1_000_000 {
		t.Fatalf("ParseClock = %+v, %v", c, ok)
	}
	want := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	if got := c.Time(0); !got.Equal(want) {
		t.Errorf("pts 0 at %v, want %v", got, want)
	}
	if got := c.Media(want.Add(90 * time.Second)); got != 90_000_000 {
		t.Errorf("media time %d, want 90 s", got)
	}
	ms, _ := ParseClock([]byte(`{"clock":{"wall":212976000000,"timescale":1000}}`))
	if !ms.Time(0).Equal(want) {
		t.Errorf("a ms clock: %v", ms.Time(0))
	}
	for _, bad := range []string{`{"clock":{"wall":1,"timescale":0}}`, `{"clock":{"wall":9007199254740992}}`, `{}`} {
		if _, ok := ParseClock([]byte(bad)); ok {
			t.Errorf("ParseClock(%s) accepted it", bad)
		}
	}
}
