package catalog

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4/seekablebuffer"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mp4/codecs"
)

// testInit is an H.264 init segment (640x480) as mediacommon writes it.
func testInit(t *testing.T, c codecs.Codec) string {
	t.Helper()
	var buf seekablebuffer.Buffer
	in := fmp4.Init{Tracks: []*fmp4.InitTrack{{ID: 1, TimeScale: 90000, Codec: c}}}
	if err := in.Marshal(&buf); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

var testH264 = &codecs.H264{
	SPS: []byte{0x67, 0x64, 0x00, 0x1e, 0xac, 0xd9, 0x40, 0xa0, 0x3d, 0xa1, 0x00, 0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x03, 0x00, 0x3c, 0x0f, 0x16, 0x2d, 0x96},
	PPS: []byte{0x68, 0xeb, 0xec, 0xb2, 0x2c},
}

func TestCMAFRenditionsTakeTheirCodecRecordFromTheInit(t *testing.T) {
	doc := fmt.Sprintf(`{"video":{"renditions":{
		"0.m4s":{"codec":"avc1.64001e","container":{"kind":"cmaf","init":%q}},
		"bad.m4s":{"codec":"avc1.64001e","container":{"kind":"cmaf","init":"AAAA"}},
		"none.m4s":{"codec":"avc1.64001e","container":{"kind":"cmaf"}},
		"legacy":{"codec":"avc1.64001e"}}},
		"audio":{"renditions":{"1.m4s":{"codec":"opus","sampleRate":48000,"numberOfChannels":2,"container":{"kind":"cmaf","init":%q}}}}}`,
		testInit(t, testH264), testInit(t, &codecs.Opus{ChannelCount: 2}))
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	v := c.Video.Renditions["0.m4s"]
	if v.InitErr() != nil || len(v.Description) < 8 || v.Description[0] != 1 || !bytes.Contains(v.Description, testH264.SPS) {
		t.Fatalf("description %x, err %v", v.Description, v.InitErr())
	}
	if v.CodedWidth == nil || *v.CodedWidth != 640 || *v.CodedHeight != 480 {
		t.Fatalf("size %v %v", v.CodedWidth, v.CodedHeight)
	}
	if a := c.Audio.Renditions["1.m4s"]; a.InitErr() != nil || !bytes.HasPrefix(a.Description, []byte("OpusHead")) {
		t.Fatalf("opus description %q, err %v", a.Description, a.InitErr())
	}
	for _, name := range []string{"bad.m4s", "none.m4s"} {
		if err := c.Video.Renditions[name].InitErr(); !errors.Is(err, ErrBadInit) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := c.Video.Renditions["legacy"].InitErr(); err != nil || c.Video.Renditions["legacy"].Description != nil {
		t.Errorf("legacy: %v", err)
	}
}

func TestMSFCMAFAudioTakesRateAndChannelsFromTheInit(t *testing.T) {
	doc := fmt.Sprintf(`{"version":"draft-01","tracks":[{"name":"a.m4s","packaging":"cmaf","role":"audio","codec":"opus","initData":%q}]}`,
		testInit(t, &codecs.Opus{ChannelCount: 2}))
	c, err := ParseMSF([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	a, ok := c.Audio.Renditions["a.m4s"]
	if !ok || a.SampleRate != 48000 || a.NumberOfChannels != 2 {
		t.Fatalf("%+v", a)
	}
}
