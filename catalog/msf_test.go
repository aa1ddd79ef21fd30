package catalog

import (
	"encoding/base64"
	"testing"
)

// mediamtxCatalog is an MSF draft-00 catalog as MediaMTX 1.20 serves it on
// ".catalog" for an RTMP stream of H.264 and AAC (tracks named by index,
// no role, channels instead of channelConfig, the AAC config as initData,
// fields this package does not know).
const mediamtxCatalog = `{"version":1,"tracks":[` +
	`{"name":"0","packaging":"loc","isLive":true,"codec":"avc3.640028","width":1280,"height":720,"framerate":30},` +
	`{"name":"1","packaging":"loc","isLive":true,"codec":"mp4a.40.2","samplerate":44100,"channels":2,"initData":"EhA="},` +
	`{"name":"2","packaging":"loc","isLive":true,"codec":"opus","samplerate":48000,"channels":2,"clockrate":48000,"futureField":{"x":1}},` +
	`{"name":"3","packaging":"loc","isLive":true,"codec":"hev1.1.6.L93.B0","clockrate":1000},` +
	`{"name":"4","packaging":"loc","isLive":true,"codec":"x-unknown"}]}`

// TestParseMSFReadsCatalogsAsWrittenInTheField: MSF-00 as MediaMTX writes
// it (no role: taken from the codec; channels; samplerate; initData;
// clockrate; unknown fields and codecs ignored) and MSF-01's spellings
// (role, channelConfig as a string or a number, timescale) give the same
// renditions, with the timescale of loc timestamps: the clockrate or
// timescale when given, else in an MSF-00 catalog MediaMTX's clocks (90
// kHz video, the sample rate for audio), else none (microseconds).
func TestParseMSFReadsCatalogsAsWrittenInTheField(t *testing.T) {
	c, err := ParseMSF([]byte(mediamtxCatalog))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Video.Renditions) != 2 || len(c.Audio.Renditions) != 2 {
		t.Fatalf("renditions %+v", c.Renditions())
	}
	scale := func(cm Common) uint64 {
		if cm.Timescale == nil {
			return 0
		}
		return *cm.Timescale
	}
	v := c.Video.Renditions["0"]
	if v.Codec != "avc3.640028" || *v.CodedWidth != 1280 || *v.CodedHeight != 720 || *v.Framerate != 30 ||
		v.ContainerKind() != ContainerLOC || scale(v.Common) != 90_000 || v.Description != nil {
		t.Errorf("H.264 %+v (timescale %d)", v, scale(v.Common))
	}
	a := c.Audio.Renditions["1"]
	if a.Codec != "mp4a.40.2" || a.SampleRate != 44100 || a.NumberOfChannels != 2 || scale(a.Common) != 44100 ||
		base64.StdEncoding.EncodeToString(a.Description) != "EhA=" {
		t.Errorf("AAC %+v (timescale %d)", a, scale(a.Common))
	}
	if o := c.Audio.Renditions["2"]; o.NumberOfChannels != 2 || scale(o.Common) != 48000 {
		t.Errorf("Opus %+v", o)
	}
	if h := c.Video.Renditions["3"]; scale(h.Common) != 1000 {
		t.Errorf("H.265's clockrate: timescale %d, want 1000", scale(h.Common))
	}

	for _, tc := range []struct {
		name, doc string
		channels  uint32
		timescale uint64
	}{
		{"MSF-01 channelConfig string", `{"version":"draft-01","tracks":[{"name":"a","packaging":"loc","role":"audio","codec":"opus","samplerate":48000,"channelConfig":"2"}]}`, 2, 0},
		{"MSF-01 channelConfig number", `{"version":"draft-01","tracks":[{"name":"a","packaging":"loc","role":"audio","codec":"opus","samplerate":48000,"channelConfig":1,"timescale":1000}]}`, 1, 1000},
		{"role given, codec unknown", `{"tracks":[{"name":"a","packaging":"legacy","role":"audio","codec":"x","samplerate":8000,"channels":1}]}`, 1, 0},
		{"no numeric version: no MediaMTX clocks", `{"version":"1","tracks":[{"name":"a","packaging":"loc","codec":"opus","samplerate":48000,"channels":2}]}`, 2, 0},
	} {
		c, err := ParseMSF([]byte(tc.doc))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		a, ok := c.Audio.Renditions["a"]
		if !ok || a.NumberOfChannels != tc.channels || scale(a.Common) != tc.timescale {
			t.Errorf("%s: %+v (timescale %d), want %d channels, timescale %d", tc.name, a, scale(a.Common), tc.channels, tc.timescale)
		}
	}
	// Audio without a sample rate or channels cannot be described.
	if c, err := ParseMSF([]byte(`{"version":1,"tracks":[{"name":"a","packaging":"loc","codec":"opus","channels":2}]}`)); err != nil || len(c.Renditions()) != 0 {
		t.Errorf("audio without samplerate: %v %+v", err, c)
	}
}

// TestReaderReadsMSF00OnItsTrack: the ".catalog" track's frames are MSF.
func TestReaderReadsMSF00OnItsTrack(t *testing.T) {
	c, err := NewReader(MSF00TrackName).Frame(0, true, []byte(mediamtxCatalog))
	if err != nil || len(c.Renditions()) != 4 {
		t.Fatalf("%v %+v", err, c)
	}
	if !IsTrackName(MSF00TrackName) || !IsMSFTrackName(MSF00TrackName) || IsMSFTrackName(TrackName) {
		t.Fatal("the catalog track names are not told apart")
	}
}

func TestRoleOfCodec(t *testing.T) {
	for codec, want := range map[string]string{
		"avc3.640028": "video", "avc1.42E01E": "video", "hev1.1.6.L93.B0": "video", "hvc1.1.6.L93.B0": "video",
		"av01.0.04M.08": "video", "vp8": "video", "vp09.00.10.08": "video",
		"mp4a.40.2": "audio", "opus": "audio", "flac": "audio", "pcm-s16": "audio", "Opus": "audio",
		"": "", "wvtt": "", "x": "",
	} {
		if got := RoleOfCodec(codec); got != want {
			t.Errorf("RoleOfCodec(%q) = %q, want %q", codec, got, want)
		}
	}
}

// FuzzParseMSF: any bytes give a catalog or an error, never a panic; a
// catalog has only renditions of known roles, audio ones described, and
// marshals.
func FuzzParseMSF(f *testing.F) {
	f.Add([]byte(mediamtxCatalog))
	f.Add([]byte(`{"version":"draft-01","tracks":[{"name":"a","packaging":"legacy","role":"audio","codec":"opus","samplerate":48000,"channelConfig":"2","initData":"T3B1cw=="}]}`))
	f.Add([]byte(`{"version":1,"tracks":[{"name":"v","packaging":"cmaf","codec":"avc1","initData":"AAAA"}],"initDataList":[{"id":"x","data":"zz"}]}`))
	f.Add([]byte(`{"tracks":[{"name":"a","packaging":"loc","codec":"mp4a","samplerate":1,"channels":"9999999999999999999999","clockrate":-1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseMSF(data)
		if err != nil {
			return
		}
		for _, r := range c.Renditions() {
			if r.Kind == KindAudio && (r.Audio.SampleRate == 0 || r.Audio.NumberOfChannels == 0) {
				t.Fatalf("audio rendition %q undescribed: %+v", r.Name, r.Audio)
			}
			if ts := r.Common().Timescale; ts != nil && *ts == 0 {
				t.Fatalf("rendition %q has timescale 0", r.Name)
			}
		}
		if _, err := c.Marshal(); err != nil {
			t.Fatalf("a parsed catalog does not marshal: %v", err)
		}
	})
}
