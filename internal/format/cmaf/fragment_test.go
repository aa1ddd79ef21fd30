package cmaf

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
)

func mkbox(typ string, parts ...[]byte) []byte {
	n := 8
	for _, p := range parts {
		n += len(p)
	}
	out := binary.BigEndian.AppendUint32(nil, uint32(n))
	out = append(out, typ...)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func u32(vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	return b
}

// entry is one trun entry; fields the run's flags leave out are ignored.
type entry struct {
	dur, size, flags uint32
	cts              int32
}

// frag describes one test fragment.
type frag struct {
	trackID     uint32
	tfhdFlags   uint32
	base        uint64 // with tfhdBaseDataOffset
	defDur      uint32
	defSize     uint32
	defFlags    uint32
	tfdtVersion int // 0, 1, or -1 for no tfdt
	dts         uint64
	trunVersion byte
	trunFlags   uint32
	firstFlags  uint32
	entries     []entry
	count       uint32 // sample_count when not len(entries)
	mdat        []byte
	other       []byte // a traf to put before ours
	dataShift   int32  // added to the data offset
}

func (f frag) traf(moofLen int) []byte {
	th := u32(f.tfhdFlags, f.trackID)
	if f.tfhdFlags&tfhdBaseDataOffset != 0 {
		th = binary.BigEndian.AppendUint64(th, f.base)
	}
	if f.tfhdFlags&tfhdDefaultDuration != 0 {
		th = append(th, u32(f.defDur)...)
	}
	if f.tfhdFlags&tfhdDefaultSize != 0 {
		th = append(th, u32(f.defSize)...)
	}
	if f.tfhdFlags&tfhdDefaultFlags != 0 {
		th = append(th, u32(f.defFlags)...)
	}
	parts := [][]byte{mkbox("tfhd", th)}
	switch f.tfdtVersion {
	case 0:
		parts = append(parts, mkbox("tfdt", u32(0, uint32(f.dts))))
	case 1:
		parts = append(parts, mkbox("tfdt", u32(1<<24), binary.BigEndian.AppendUint64(nil, f.dts)))
	}
	count := f.count
	if count == 0 {
		count = uint32(len(f.entries))
	}
	tr := u32(uint32(f.trunVersion)<<24|f.trunFlags, count)
	if f.trunFlags&trunDataOffset != 0 {
		tr = append(tr, u32(uint32(int32(moofLen+8)+f.dataShift))...)
	}
	if f.trunFlags&trunFirstSampleFlags != 0 {
		tr = append(tr, u32(f.firstFlags)...)
	}
	for _, e := range f.entries {
		if f.trunFlags&trunDuration != 0 {
			tr = append(tr, u32(e.dur)...)
		}
		if f.trunFlags&trunSize != 0 {
			tr = append(tr, u32(e.size)...)
		}
		if f.trunFlags&trunFlags != 0 {
			tr = append(tr, u32(e.flags)...)
		}
		if f.trunFlags&trunCTS != 0 {
			tr = append(tr, u32(uint32(e.cts))...)
		}
	}
	parts = append(parts, mkbox("trun", tr))
	return mkbox("traf", parts...)
}

func (f frag) bytes() []byte {
	build := func(n int) []byte {
		return mkbox("moof", mkbox("mfhd", u32(0, 1)), f.other, f.traf(n))
	}
	m := build(0)
	m = build(len(m))
	return append(m, mkbox("mdat", f.mdat)...)
}

// audioInit is an init for the fragment tests: audio, so that every sample
// is a keyframe and only timing and data are under test.
func audioInit(ts uint32) *Init {
	return &Init{TrackID: 1, Timescale: ts, Family: "aac"}
}

const allEntries = trunDataOffset | trunDuration | trunSize | trunFlags | trunCTS

func TestFragmentTiming(t *testing.T) {
	data := []byte("aaabbbbcc")
	tests := []struct {
		name string
		init *Init
		f    frag
		want []int64 // µs
		pay  []string
	}{
		{"PerSampleFieldsVersion1NegativeOffsets", audioInit(1000),
			frag{trackID: 1, tfhdFlags: tfhdDefaultBaseIsMoof, tfdtVersion: 1, dts: 2000, trunVersion: 1, trunFlags: allEntries,
				entries: []entry{{10, 3, 0, 20}, {10, 4, 0, -10}, {10, 2, 0, 0}}, mdat: data},
			[]int64{2_020_000, 2_000_000, 2_020_000}, []string{"aaa", "bbbb", "cc"}},
		{"Version0OffsetsReadSigned", audioInit(1000),
			frag{trackID: 1, tfhdFlags: tfhdDefaultBaseIsMoof, tfdtVersion: 0, dts: 5, trunVersion: 0, trunFlags: allEntries,
				entries: []entry{{1, 3, 0, -5}, {1, 6, 0, 0}}, mdat: data},
			[]int64{0, 6000}, []string{"aaa", "bbbbcc"}},
		{"TfhdDefaults", audioInit(48000),
			frag{trackID: 1, tfhdFlags: tfhdDefaultBaseIsMoof | tfhdDefaultDuration | tfhdDefaultSize, defDur: 1024, defSize: 3,
				tfdtVersion: 1, dts: 48000, trunFlags: trunDataOffset, count: 3, mdat: data},
			[]int64{1_000_000, 1_021_333, 1_042_667}, []string{"aaa", "bbb", "bcc"}},
		{"TrexDefaultsWhenTheFragmentHasNone", &Init{TrackID: 1, Timescale: 1000, Family: "aac", DefaultDuration: 20, DefaultSize: 9},
			frag{trackID: 1, tfdtVersion: 1, dts: 100, trunFlags: trunDataOffset, count: 1, mdat: data},
			[]int64{100_000}, []string{"aaabbbbcc"}},
		{"ClearedBaseDataOffsetCountsFromTheMoof", audioInit(1000),
			frag{trackID: 1, tfdtVersion: 1, trunFlags: trunDataOffset | trunSize, entries: []entry{{size: 4}, {size: 5}}, mdat: data},
			[]int64{0, 0}, []string{"aaab", "bbbcc"}},
		{"ExplicitBaseDataOffsetCountsFromTheFrame", audioInit(1000),
			frag{trackID: 1, tfhdFlags: tfhdBaseDataOffset, base: 0, tfdtVersion: 1, trunFlags: trunDataOffset | trunSize, entries: []entry{{size: 2}}, mdat: data, dataShift: 1},
			[]int64{0}, []string{"aa"}},
		{"NoDataOffsetStartsWithTheMdat", audioInit(1000),
			frag{trackID: 1, tfdtVersion: 1, trunFlags: trunSize, entries: []entry{{size: 9}}, mdat: data},
			[]int64{0}, []string{"aaabbbbcc"}},
		{"OtherTrackIDWhenItIsTheOnlyTrackFragment", audioInit(1000),
			frag{trackID: 7, tfdtVersion: 1, trunFlags: trunDataOffset | trunSize, entries: []entry{{size: 9}}, mdat: data},
			[]int64{0}, []string{"aaabbbbcc"}},
		{"OursAmongOthers", audioInit(1000),
			frag{trackID: 1, tfdtVersion: 1, trunFlags: trunDataOffset | trunSize, entries: []entry{{size: 9}}, mdat: data,
				other: mkbox("traf", mkbox("tfhd", u32(0, 2)))},
			[]int64{0}, []string{"aaabbbbcc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewDemuxer(tt.init).Fragment(tt.f.bytes())
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%d samples, want %d", len(got), len(tt.want))
			}
			for i, s := range got {
				if s.Timestamp != tt.want[i] || string(s.Payload) != tt.pay[i] {
					t.Errorf("sample %d: %d %q, want %d %q", i, s.Timestamp, s.Payload, tt.want[i], tt.pay[i])
				}
			}
		})
	}
}

func TestFragmentWithoutTfdtContinuesThePreviousOne(t *testing.T) {
	d := NewDemuxer(audioInit(1000))
	f := frag{trackID: 1, tfdtVersion: 1, dts: 500, trunFlags: trunDataOffset | trunSize | trunDuration, entries: []entry{{dur: 30, size: 9}}, mdat: []byte("123456789")}
	if _, err := d.Fragment(f.bytes()); err != nil {
		t.Fatal(err)
	}
	f.tfdtVersion = -1
	got, err := d.Fragment(f.bytes())
	if err != nil || got[0].Timestamp != 530_000 {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := NewDemuxer(audioInit(1000)).Fragment(f.bytes()); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a first fragment without tfdt: %v", err)
	}
}

// TestSampleTimesDoNotDriftOverHours converts every sample time from its
// own tick count: ten hours of 29.97 fps frames, fragment by fragment, land
// exactly where a single conversion of the total puts them.
func TestSampleTimesDoNotDriftOverHours(t *testing.T) {
	d := NewDemuxer(audioInit(30000))
	const frames = 10 * 3600 * 30000 / 1001
	for _, n := range []uint64{1, 1000, frames / 2, frames} {
		f := frag{trackID: 1, tfdtVersion: 1, dts: n * 1001, trunFlags: trunDataOffset | trunSize | trunDuration,
			entries: []entry{{dur: 1001, size: 1}, {dur: 1001, size: 1}}, mdat: []byte("ab")}
		got, err := d.Fragment(f.bytes())
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range got {
			ticks := (n + uint64(i)) * 1001
			if want := int64((ticks*1_000_000 + 15000) / 30000); s.Timestamp != want {
				t.Errorf("frame %d: %d µs, want %d", n+uint64(i), s.Timestamp, want)
			}
		}
	}
}

func TestBadFragmentsAreErrors(t *testing.T) {
	good := frag{trackID: 1, tfdtVersion: 1, trunFlags: trunDataOffset | trunSize, entries: []entry{{size: 9}}, mdat: []byte("aaabbbbcc")}
	gb := good.bytes()
	tests := []struct {
		name  string
		init  *Init
		frame []byte
		msg   string
	}{
		{"Empty", audioInit(1000), nil, "without samples"},
		{"TruncatedBox", audioInit(1000), gb[:len(gb)-3], "box"},
		{"TruncatedHeader", audioInit(1000), gb[:5], "truncated"},
		{"MdatOnly", audioInit(1000), mkbox("mdat", []byte("x")), "mdat without moof"},
		{"MoofOnly", audioInit(1000), gb[:len(gb)-17], "moof without mdat"},
		{"SampleBeyondTheMdat", audioInit(1000), frag{trackID: 1, tfdtVersion: 1, trunFlags: trunDataOffset | trunSize, entries: []entry{{size: 10}}, mdat: []byte("aaabbbbcc")}.bytes(), "beyond the mdat"},
		{"AbsurdSampleCount", audioInit(1000), frag{trackID: 1, tfdtVersion: 1, trunFlags: trunDataOffset | trunSize, count: 1 << 30, entries: []entry{{size: 1}}, mdat: []byte("a")}.bytes(), "samples in"},
		{"AbsurdDefaultSizedCount", audioInit(1000), frag{trackID: 1, tfhdFlags: tfhdDefaultSize, defSize: 1, tfdtVersion: 1, trunFlags: trunDataOffset, count: 1 << 30, mdat: []byte("a")}.bytes(), "samples for"},
		{"DataOutsideTheMdat", audioInit(1000), frag{trackID: 1, tfdtVersion: 1, trunFlags: trunDataOffset | trunSize, entries: []entry{{size: 1}}, mdat: []byte("a"), dataShift: -20}.bytes(), "outside the mdat"},
		{"AnotherTracksFragment", audioInit(1000), frag{trackID: 3, tfdtVersion: 1, trunFlags: trunDataOffset | trunSize, entries: []entry{{size: 1}}, mdat: []byte("a"),
			other: mkbox("traf", mkbox("tfhd", u32(0, 2)))}.bytes(), "none of track 1"},
		{"NoTfhd", audioInit(1000), append(mkbox("moof", mkbox("traf", mkbox("trun", u32(0, 0)))), mkbox("mdat", []byte("a"))...), "without tfhd"},
		{"DecodeTimeOutOfRange", audioInit(1000), frag{trackID: 1, tfdtVersion: 1, dts: math.MaxUint64 - 5, trunFlags: trunDataOffset | trunSize, entries: []entry{{size: 1}}, mdat: []byte("a")}.bytes(), "out of range"},
		{"TimescaleZero", audioInit(0), gb, "timescale 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewDemuxer(tt.init).Fragment(tt.frame)
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("got %v, want ErrMalformed with %q", err, tt.msg)
			}
		})
	}
}

func TestAbsurdSampleCountAllocatesNothing(t *testing.T) {
	frame := frag{trackID: 1, tfdtVersion: 1, trunFlags: trunDataOffset | trunSize, count: 1 << 30, entries: []entry{{size: 1}}, mdat: []byte("a")}.bytes()
	d := NewDemuxer(audioInit(1000))
	allocs := testing.AllocsPerRun(100, func() { _, _ = d.Fragment(frame) })
	if allocs > 4 { // the error value only
		t.Fatalf("%v allocations for a bad fragment", allocs)
	}
}

func TestGoodFragmentAllocatesNothing(t *testing.T) {
	frame := frag{trackID: 1, tfdtVersion: 1, trunFlags: trunDataOffset | trunSize, entries: []entry{{size: 4}, {size: 5}}, mdat: []byte("aaabbbbcc")}.bytes()
	d := NewDemuxer(audioInit(1000))
	if _, err := d.Fragment(frame); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, func() { _, _ = d.Fragment(frame) }); allocs != 0 {
		t.Fatalf("%v allocations per fragment", allocs)
	}
}

func TestKeyframesComeFromTheBitstream(t *testing.T) {
	nal := func(n ...[]byte) []byte {
		var b []byte
		for _, u := range n {
			b = binary.BigEndian.AppendUint32(b, uint32(len(u)))
			b = append(b, u...)
		}
		return b
	}
	sync, nonSync := uint32(0x02000000), uint32(0x01010000)
	tests := []struct {
		name   string
		init   *Init
		sample []byte
		flags  uint32
		want   bool
	}{
		{"H264IDRFlaggedNonSync", &Init{Family: "h264", Video: true, NALLength: 4}, nal([]byte{0x06, 1}, []byte{0x65, 1, 2}), nonSync, true},
		{"H264PFlaggedSync", &Init{Family: "h264", Video: true, NALLength: 4}, nal([]byte{0x41, 1, 2}), sync, false},
		{"H264TwoByteLengths", &Init{Family: "h264", Video: true, NALLength: 2}, []byte{0, 2, 0x65, 0}, nonSync, true},
		{"H265CRA", &Init{Family: "h265", Video: true, NALLength: 4}, nal([]byte{21 << 1, 1, 0}), nonSync, true},
		{"H265TrailR", &Init{Family: "h265", Video: true, NALLength: 4}, nal([]byte{1 << 1, 1, 0}), sync, false},
		// sequence header (type 1, has size) then a frame (type 6) whose
		// first byte says show_existing_frame 0, frame_type KEY.
		{"AV1Key", &Init{Family: "av1", Video: true}, []byte{0x0a, 1, 0x00, 0x32, 2, 0x10, 0}, nonSync, true},
		{"AV1InterFrameFlaggedSync", &Init{Family: "av1", Video: true}, []byte{0x32, 2, 0x30, 0}, sync, false},
		{"VP8Key", &Init{Family: "vp8", Video: true}, []byte{0x10, 0, 0}, nonSync, true},
		{"VP8Inter", &Init{Family: "vp8", Video: true}, []byte{0x11, 0, 0}, sync, false},
		{"UnknownVideoFollowsTheFlags", &Init{Family: "", Video: true}, []byte{1}, nonSync, false},
		{"AudioAlwaysKey", &Init{Family: "aac"}, []byte{1}, nonSync, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NewDemuxer(tt.init).isKey(tt.sample, tt.flags); got != tt.want {
				t.Fatalf("got %v", got)
			}
		})
	}
}

func TestRescale(t *testing.T) {
	tests := []struct {
		ticks int64
		ts    uint32
		want  int64
		ok    bool
	}{
		{48000, 48000, 1_000_000, true},
		{1, 3, 333_333, true},
		{-1, 3, -333_333, true},
		{2, 3, 666_667, true},
		{6000, 90000, 66_667, true},
		{math.MaxInt64, 1, 0, false},
		{5, 0, 0, false},
	}
	for _, tt := range tests {
		if got, ok := rescale(tt.ticks, tt.ts); got != tt.want || ok != tt.ok {
			t.Errorf("rescale(%d, %d) = %d %v", tt.ticks, tt.ts, got, ok)
		}
	}
}
