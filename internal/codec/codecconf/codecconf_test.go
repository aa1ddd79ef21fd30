package codecconf_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/opus"

	"github.com/moq-export/moq-export/internal/codec/codecconf"
	"github.com/moq-export/moq-export/internal/samples"
)

func TestAACObjectTypeReadsTheCodecString(t *testing.T) {
	for codec, want := range map[string]mpeg4audio.ObjectType{
		"mp4a.40.2":  mpeg4audio.ObjectTypeAACLC,
		"MP4A.40.5":  mpeg4audio.ObjectTypeSBR,
		"mp4a.40.29": mpeg4audio.ObjectTypePS,
		"mp4a.40.42": 42,
		"mp4a.67":    mpeg4audio.ObjectTypeAACLC,
		"aac":        mpeg4audio.ObjectTypeAACLC,
		"mp4a.40.x":  mpeg4audio.ObjectTypeAACLC,
	} {
		if got := codecconf.AACObjectType(codec); got != want {
			t.Errorf("AACObjectType(%q) = %d, want %d", codec, got, want)
		}
	}
}

func TestAACConfigMatchesTheEncodersAndRefusesWhatItCannotSay(t *testing.T) {
	aac := samples.MustLoadSample("aac")
	got, err := codecconf.AACConfig("mp4a.40.2", 48000, 2)
	if err != nil || !bytes.Equal(got, aac.Description[:2]) {
		t.Errorf("ASC %x (%v), encoder wrote %x", got, err, aac.Description)
	}
	for _, tc := range []struct {
		codec          string
		rate, channels int
		cc             uint8 // 0: refused
	}{
		{"mp4a.40.5", 48000, 2, 2},
		{"mp4a.40.29", 44100, 1, 1},
		{"mp4a.40.2", 48000, 8, 7},
		{"mp4a.40.2", 48000, 7, 0},
		{"mp4a.40.2", 48000, 0, 0},
		{"mp4a.40.2", 0, 2, 0},
	} {
		b, err := codecconf.AACConfig(tc.codec, tc.rate, tc.channels)
		if tc.cc == 0 {
			if !errors.Is(err, codecconf.ErrMissingFields) {
				t.Errorf("%s %d Hz %d ch: %x, %v; want ErrMissingFields", tc.codec, tc.rate, tc.channels, b, err)
			}
			continue
		}
		var asc mpeg4audio.AudioSpecificConfig
		if err == nil {
			err = asc.Unmarshal(b)
		}
		if err != nil || asc.Type != mpeg4audio.ObjectTypeAACLC || asc.SampleRate != tc.rate || asc.ChannelConfig != tc.cc {
			t.Errorf("%s %d Hz %d ch: %x (%+v, %v), want AAC-LC core, channelConfiguration %d", tc.codec, tc.rate, tc.channels, b, asc, err, tc.cc)
		}
	}
}

func TestAACRecordKeepsTheDescriptionOrBuildsOneAndParsesIt(t *testing.T) {
	given := []byte{0x11, 0x90} // AAC-LC, 48 kHz, stereo
	built, err := codecconf.AACConfig("mp4a.40.2", 44100, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		desc        []byte
		rate, chans int
		want        []byte
		wantRate    int
		wantMissing bool
		wantErr     bool
	}{
		{name: "description kept", desc: given, rate: 44100, chans: 1, want: given, wantRate: 48000},
		{name: "built from the fields", rate: 44100, chans: 1, want: built, wantRate: 44100},
		{name: "no description, no fields", wantMissing: true, wantErr: true},
		{name: "bad description", desc: []byte{0xff}, rate: 48000, chans: 2, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, asc, err := codecconf.AACRecord("mp4a.40.2", tc.desc, tc.rate, tc.chans)
			if (err != nil) != tc.wantErr || errors.Is(err, codecconf.ErrMissingFields) != tc.wantMissing {
				t.Fatalf("err = %v, want error %v (missing fields %v)", err, tc.wantErr, tc.wantMissing)
			}
			if err != nil {
				return
			}
			if !bytes.Equal(rec, tc.want) || asc.SampleRate != tc.wantRate {
				t.Errorf("record %x at %d Hz, want %x at %d Hz", rec, asc.SampleRate, tc.want, tc.wantRate)
			}
		})
	}
}

func TestOpusHeadMatchesLibopusAndLaysOutSurround(t *testing.T) {
	// The embedded Opus sample's OpusHead comes from libopus via ffmpeg.
	want := samples.MustLoadSample("opus").Description
	if got, err := codecconf.OpusHead(2, 312, 48000); err != nil || !bytes.Equal(got, want) {
		t.Errorf("OpusHead %x (%v), libopus wrote %x", got, err, want)
	}
	for ch := 1; ch <= 8; ch++ {
		b, err := codecconf.OpusHead(ch, 0, 0)
		var h opus.IDHeader
		if err == nil {
			err = h.Unmarshal(b)
		}
		family := uint8(0)
		if ch > 2 {
			family = 1
		}
		if err != nil || int(h.ChannelCount) != ch || h.ChannelMappingFamily != family {
			t.Errorf("%d channels: %x (%+v, %v)", ch, b, h, err)
		}
		if family == 1 && len(h.ChannelMappingTable) != 2+ch {
			t.Errorf("%d channels: mapping table %x, want stream counts and %d entries", ch, h.ChannelMappingTable, ch)
		}
	}
	for _, ch := range []int{-1, 0, 9} {
		if b, err := codecconf.OpusHead(ch, 0, 0); !errors.Is(err, codecconf.ErrMissingFields) {
			t.Errorf("%d channels: %x, %v; want ErrMissingFields", ch, b, err)
		}
	}
}
