package catalog

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// referenceExample is the catalog of the reference sheet (§1.4): an RTMP
// ingest of H.264 + AAC into the legacy container.
const referenceExample = `{
  "video": {
    "renditions": {
      "0.flv-v": {
        "codec": "avc1.64001f",
        "description": "0164001fffe1001a6764001facd9405005bb0110000003001000000303c0f183196001000668ebe3cb22c0fdf8f800",
        "codedWidth": 1280,
        "codedHeight": 720,
        "bitrate": 2500000,
        "framerate": 30.0,
        "container": { "kind": "legacy" },
        "jitter": 67,
        "timeline": { "track": "0.flv-v.timeline.z", "timescale": 1000 }
      }
    }
  },
  "audio": {
    "renditions": {
      "0.flv-a": {
        "codec": "mp4a.40.2",
        "sampleRate": 48000,
        "numberOfChannels": 2,
        "bitrate": 128000,
        "description": "1190",
        "container": { "kind": "legacy" },
        "jitter": 21,
        "timeline": { "track": "0.flv-a.timeline.z", "timescale": 1000 }
      }
    }
  },
  "mpegts": { "program": { "pmtPid": 4096 } }
}`

func TestParseReferenceExample(t *testing.T) {
	c, err := Parse([]byte(referenceExample))
	if err != nil {
		t.Fatal(err)
	}
	v := c.Video.Renditions["0.flv-v"]
	if v.Codec != "avc1.64001f" || len(v.Description) != 47 || v.Description[0] != 1 ||
		*v.CodedWidth != 1280 || *v.CodedHeight != 720 || *v.Bitrate != 2500000 || *v.Framerate != 30 ||
		v.ContainerKind() != "legacy" || *v.Jitter != 67 || v.Timeline.Track != "0.flv-v.timeline.z" || v.Timeline.Timescale != 1000 {
		t.Fatalf("video rendition decoded wrong: %+v", v)
	}
	a := c.Audio.Renditions["0.flv-a"]
	if a.Codec != "mp4a.40.2" || a.SampleRate != 48000 || a.NumberOfChannels != 2 || !bytes.Equal(a.Description, []byte{0x11, 0x90}) || *a.Jitter != 21 {
		t.Fatalf("audio rendition decoded wrong: %+v", a)
	}
	rs := c.Renditions()
	if len(rs) != 2 || rs[0].Name != "0.flv-v" || rs[0].Kind != KindVideo || rs[1].Kind != KindAudio || rs[1].Common().Codec != "mp4a.40.2" {
		t.Fatalf("renditions %+v", rs)
	}
	// Round trip through Marshal keeps everything.
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(data)
	if err != nil || again.Video.Renditions["0.flv-v"].Description == nil || *again.Video.Renditions["0.flv-v"].Framerate != 30 {
		t.Fatalf("round trip: %v %+v", err, again)
	}
}

func TestParseAcceptsVariants(t *testing.T) {
	tests := []struct {
		name  string
		json  string
		check func(*Catalog) bool
	}{
		{"uppercase hex", `{"audio":{"renditions":{"a":{"codec":"opus","sampleRate":48000,"numberOfChannels":2,"description":"4F707573"}}}}`,
			func(c *Catalog) bool { return string(c.Audio.Renditions["a"].Description) == "Opus" }},
		{"old display ratio names", `{"video":{"renditions":{"v":{"codec":"vp8","displayRatioWidth":16,"displayRatioHeight":9}}}}`,
			func(c *Catalog) bool {
				v := c.Video.Renditions["v"]
				return *v.DisplayAspectWidth == 16 && *v.DisplayAspectHeight == 9
			}},
		{"old array form", `{"video":[{"track":{"name":"v0"},"config":{"codec":"avc1.42e01e","codedWidth":640}}]}`,
			func(c *Catalog) bool { return *c.Video.Renditions["v0"].CodedWidth == 640 }},
		{"unknown sections and fields", `{"chat":{"x":1},"video":{"renditions":{"v":{"codec":"vp8","future":true}},"display":{"width":1,"height":2},"rotation":90,"flip":true}}`,
			func(c *Catalog) bool {
				return c.Video.Renditions["v"].Codec == "vp8" && c.Video.Display.Height == 2 && *c.Video.Rotation == 90
			}},
		// The newest hang draft's root sections and rendition fields this
		// package does not use yet: a root clock, an archive section, text
		// renditions and data tracks, enabled instead of stalled.
		{"newest hang root sections", `{"clock":1764547200000,"archive":{"track":"archive","retention":3600},` +
			`"text":{"renditions":{"en":{"format":"vtt","role":"caption","lang":"en","label":"SDH"}}},"json":{"tracks":["chat"]},"binary":{"tracks":["x"]},` +
			`"video":{"renditions":{"v":{"codec":"vp8","enabled":false,"stalled":true}}},` +
			`"audio":{"renditions":{"a":{"codec":"opus","sampleRate":48000,"numberOfChannels":2,"enabled":true}}}}`,
			func(c *Catalog) bool {
				rs := c.Renditions()
				return len(rs) == 3 && c.Video.Renditions["v"].Codec == "vp8" && c.Audio.Renditions["a"].SampleRate == 48000 &&
					rs[2].Kind == KindText && *rs[2].Text == TextConfig{Format: TextVTT, Role: "caption", Lang: "en", Label: "SDH"} && rs[2].Common().Codec == TextVTT
			}},
		{"unknown container kind is kept", `{"video":{"renditions":{"v":{"codec":"vp8","container":{"kind":"future"}}}}}`,
			func(c *Catalog) bool { return c.Video.Renditions["v"].ContainerKind() == "future" }},
		{"empty", `{}`, func(c *Catalog) bool { return len(c.Renditions()) == 0 }},
		{"cross-broadcast rendition", `{"audio":{"renditions":{"a":{"codec":"opus","sampleRate":48000,"numberOfChannels":1,"broadcast":"./source"}}}}`,
			func(c *Catalog) bool { return *c.Audio.Renditions["a"].Broadcast == "./source" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.json))
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Fatalf("decoded wrong: %+v", c)
			}
		})
	}
}

func TestParseRejectsMalformedCatalogs(t *testing.T) {
	tests := []struct{ name, json, want string }{
		{"not json", `{"video":`, "unexpected end"},
		{"base64 description", `{"audio":{"renditions":{"a":{"codec":"opus","sampleRate":48000,"numberOfChannels":2,"description":"T3B1cw=="}}}}`, "expected hex"},
		{"audio without sample rate", `{"audio":{"renditions":{"a":{"codec":"opus","numberOfChannels":2}}}}`, "sampleRate"},
		{"half aspect pair", `{"video":{"renditions":{"v":{"codec":"vp8","displayAspectWidth":4}}}}`, "together"},
		{"wrong type", `{"video":{"renditions":{"v":{"codec":7}}}}`, "cannot unmarshal"},
		{"root is an array", `[]`, "cannot unmarshal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.json))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a *SyntaxError", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestCompressedCatalogGroupRoundTrip(t *testing.T) {
	var d Deflater
	var z Inflater
	docs := []string{`{"video":{}}`, `{"audio":{"renditions":{}}}`, strings.Repeat(`{"x":"aaaa"}`, 1)}
	for i, doc := range docs {
		frame, err := d.Frame([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.HasSuffix(frame, syncFlushTail) {
			t.Fatalf("frame %d keeps the sync-flush tail", i)
		}
		got, err := z.Frame(frame)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if string(got) != doc {
			t.Fatalf("frame %d inflated to %q, want %q", i, got, doc)
		}
	}
}

func TestInflaterRejectsGarbageAndBombs(t *testing.T) {
	var z Inflater
	if _, err := z.Frame([]byte{0xff, 0xff, 0xff}); err == nil {
		t.Fatal("garbage inflated without error")
	}
	var d Deflater
	bomb, _ := d.Frame(make([]byte, maxInflated+10))
	var z2 Inflater
	if _, err := z2.Frame(bomb); err == nil {
		t.Fatal("oversized catalog accepted")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(referenceExample))
	f.Add([]byte(`{"video":[{"track":{"name":"v"},"config":{"codec":"vp8"}}]}`))
	f.Add([]byte(`{"audio":{"renditions":{"a":{"codec":"opus","sampleRate":1,"numberOfChannels":1,"description":"zz"}}}}`))
	f.Add([]byte(`{"text":{"renditions":{"s":{"format":"vtt","lang":"en","container":{"kind":"loc"}}}},"audio":{"renditions":{"a":{"codec":"opus","sampleRate":1,"numberOfChannels":1,"lang":"de"}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		for _, r := range c.Renditions() {
			_ = r.Common().ContainerKind()
		}
		if _, err := c.Marshal(); err != nil {
			t.Fatalf("a parsed catalog does not marshal: %v", err)
		}
	})
}

func FuzzInflater(f *testing.F) {
	var d Deflater
	frame, _ := d.Frame([]byte(referenceExample))
	f.Add(frame, []byte{0x00})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var z Inflater
		if _, err := z.Frame(a); err != nil {
			return
		}
		_, _ = z.Frame(b)
	})
}

func FuzzReader(f *testing.F) {
	f.Add([]byte(referenceExample), []byte(`{"video":null}`))
	f.Add([]byte(`{"version":"draft-01","tracks":[{"name":"a","packaging":"legacy","role":"audio","codec":"opus","samplerate":48000,"channelConfig":"2","initData":"T3B1cw=="}]}`), []byte(`[]`))
	f.Fuzz(func(t *testing.T, snapshot, patch []byte) {
		for _, track := range []string{TrackName, MSFTrackName, MSF00TrackName, CompressedTrackName} {
			r := NewReader(track)
			_, _ = r.Frame(0, true, snapshot)
			_, _ = r.Frame(0, false, patch)
		}
	})
}

func TestReaderAppliesMergePatchesWithinAGroup(t *testing.T) {
	r := NewReader(TrackName)
	c, err := r.Frame(4, true, []byte(`{"video":{"renditions":{"v":{"codec":"vp8"}}}}`))
	if err != nil || len(c.Video.Renditions) != 1 {
		t.Fatalf("%v %+v", err, c)
	}
	c, err = r.Frame(4, false, []byte(`{"audio":{"renditions":{"a":{"codec":"opus","sampleRate":48000,"numberOfChannels":2}}},"video":{"renditions":{"v":null}}}`))
	if err != nil || len(c.Video.Renditions) != 0 || len(c.Audio.Renditions) != 1 {
		t.Fatalf("%v %+v", err, c)
	}
	// A new group is a new snapshot.
	c, err = r.Frame(5, true, []byte(`{}`))
	if err != nil || len(c.Renditions()) != 0 {
		t.Fatalf("%v %+v", err, c)
	}
	if TrackFor("room/cam.msf") != MSFTrackName || TrackFor("room/cam.hang") != TrackName || TrackFor("x") != TrackName {
		t.Fatal("TrackFor picks the wrong catalog track")
	}
}

// TestReaderPatchesKeepTheDocumentExact: between frames the reader holds
// the document as text; a patch applied to it changes only what it names,
// numbers included (a 64-bit bitrate stays exact, not rounded through a
// float), and a frame that breaks the group leaves the previous snapshot.
func TestReaderPatchesKeepTheDocumentExact(t *testing.T) {
	r := NewReader(TrackName)
	c, err := r.Frame(1, true, []byte(` {"video":{"renditions":{"v":{"codec":"avc1.64001f","bitrate":18446744073709551615}}}} `))
	if err != nil {
		t.Fatal(err)
	}
	if b := c.Video.Renditions["v"].Bitrate; b == nil || *b != 18446744073709551615 {
		t.Fatalf("bitrate %v", b)
	}
	steps := []struct {
		patch   string
		wantErr bool
		check   func(*Catalog) bool
	}{
		{`{"video":{"renditions":{"v":{"codedWidth":1280}}}}`, false, func(c *Catalog) bool {
			v := c.Video.Renditions["v"]
			return v.Bitrate != nil && *v.Bitrate == 18446744073709551615 && v.CodedWidth != nil && *v.CodedWidth == 1280 && v.Codec == "avc1.64001f"
		}},
		{`{"video":`, true, nil},
		{`[1]`, true, nil},
		{`{"audio":{"renditions":{"a":{"codec":"opus","sampleRate":48000,"numberOfChannels":2}}}}`, false, func(c *Catalog) bool {
			return len(c.Audio.Renditions) == 1 && c.Video.Renditions["v"].CodedWidth != nil
		}},
	}
	for i, st := range steps {
		c, err := r.Frame(1, false, []byte(st.patch))
		if (err != nil) != st.wantErr {
			t.Fatalf("patch %d %s: err %v, want error %v", i, st.patch, err, st.wantErr)
		}
		if st.check != nil && !st.check(c) {
			t.Fatalf("patch %d %s: snapshot %+v", i, st.patch, c)
		}
	}
	if _, err := r.Frame(2, true, []byte(`"not an object"`)); err == nil {
		t.Fatal("a document that is not an object was accepted")
	}
}
