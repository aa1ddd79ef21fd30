package cmaf

import (
	"bytes"
	"testing"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4/seekablebuffer"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mp4/codecs"
)

var fuzzFamilies = []string{"aac", "h264", "h265", "av1", "vp8", "vp9", ""}

// FuzzFragment feeds arbitrary frames to the demuxer, under each codec's
// keyframe reader: it must return samples inside the frame or an error,
// never panic.
func FuzzFragment(f *testing.F) {
	seeds := []frag{
		{trackID: 1, tfhdFlags: tfhdDefaultBaseIsMoof, tfdtVersion: 1, dts: 2000, trunVersion: 1, trunFlags: allEntries,
			entries: []entry{{10, 3, 0, 20}, {10, 4, 0, -10}, {10, 2, 0, 0}}, mdat: []byte("aaabbbbcc")},
		{trackID: 1, tfhdFlags: tfhdDefaultBaseIsMoof | tfhdDefaultDuration | tfhdDefaultSize, defDur: 1024, defSize: 3,
			tfdtVersion: 0, dts: 48000, trunFlags: trunDataOffset | trunFirstSampleFlags, firstFlags: 0x02000000, count: 3, mdat: []byte("aaabbbbcc")},
		{trackID: 1, tfdtVersion: 1, trunFlags: trunSize, entries: []entry{{size: 9}}, mdat: []byte{0, 0, 0, 5, 0x65, 1, 2, 3, 4}},
	}
	for _, s := range seeds {
		for i := range fuzzFamilies {
			f.Add(byte(i), s.bytes())
		}
	}
	f.Fuzz(func(t *testing.T, fam byte, frame []byte) {
		family := fuzzFamilies[int(fam)%len(fuzzFamilies)]
		in := &Init{TrackID: 1, Timescale: 90000, Family: family, Video: family != "aac", NALLength: 1 + int(fam>>4)%4,
			DefaultDuration: 3000, DefaultSize: uint32(fam)}
		d := NewDemuxer(in)
		for range 2 { // the second run continues the first one's timeline
			ss, err := d.Fragment(frame)
			if err != nil {
				continue
			}
			total := 0
			for _, s := range ss {
				total += len(s.Payload)
				if len(s.Payload) == 0 || !within(frame, s.Payload) {
					t.Fatalf("sample payload outside the frame")
				}
			}
			if total > len(frame) {
				t.Fatalf("%d bytes of samples in a %d-byte frame", total, len(frame))
			}
		}
	})
}

func within(outer, inner []byte) bool {
	if len(inner) == 0 || len(outer) == 0 {
		return false
	}

	for i := range outer {
		if &outer[i] == &inner[0] {
			return len(outer)-i >= len(inner)
		}
	}

	return false
}

// FuzzParseInit feeds arbitrary init segments to ParseInit: an Init or an
// error, never a panic.
func FuzzParseInit(f *testing.F) {
	for _, c := range []codecs.Codec{
		&codecs.H264{SPS: []byte{0x67, 0x42, 0xc0, 0x1f, 0xd9, 0x00, 0xa0, 0x47, 0xfe, 0xc8}, PPS: []byte{0x68, 0xce, 0x3c, 0x80}},
		&codecs.Opus{ChannelCount: 2},
		&codecs.VP9{Width: 320, Height: 240, Profile: 0, BitDepth: 8},
	} {
		var buf seekablebuffer.Buffer
		init := fmp4.Init{Tracks: []*fmp4.InitTrack{{ID: 1, TimeScale: 90000, Codec: c}}}
		if err := init.Marshal(&buf); err == nil {
			f.Add(buf.Bytes())
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := ParseInit(b)
		if err != nil {
			return
		}
		if in.Timescale == 0 || in.Family == "" {
			t.Fatalf("accepted %+v", in)
		}
		if len(in.Description) > len(b)+32 && !bytes.HasPrefix(in.Description, []byte("fLaC")) {
			t.Fatalf("description of %d bytes from a %d-byte init", len(in.Description), len(b))
		}
	})
}
