package catalog

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestTheRootClockGivesTheWallTimeOfAMediaTime(t *testing.T) {
	oct1 := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		json string
		pts  int64 // µs
		want time.Time
	}{
		// The sheet's derived vector: PTS 0 at 2026-10-01T00:00:00Z.
		{"MicrosecondsByDefault", `{"clock":{"wall":212976000000000}}`, 0, oct1},
		{"AMediaTimeAddsToIt", `{"clock":{"wall":212976000000000}}`, 90_500_000, oct1.Add(90500 * time.Millisecond)},
		{"InItsTimescale", `{"clock":{"wall":212976000000,"timescale":1000}}`, 1_000, oct1.Add(time.Millisecond)},
		{"BeforeTheEpoch", `{"clock":{"wall":-1000,"timescale":1000}}`, 0, Epoch.Add(-time.Second)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			if c.Clock == nil || c.ClockErr() != nil {
				t.Fatalf("clock %v, err %v", c.Clock, c.ClockErr())
			}
			if got := c.Clock.At(tt.pts); !got.Equal(tt.want) {
				t.Fatalf("At(%d) = %v, want %v", tt.pts, got, tt.want)
			}
		})
	}
}

func TestAClockHangRefusesIsLeftOutAndSaysWhy(t *testing.T) {
	for _, tt := range []struct{ name, json string }{
		{"ZeroTimescale", `{"clock":{"wall":5,"timescale":0}}`},
		{"WallPastTheSafeIntegers", `{"clock":{"wall":9007199254740992}}`},
		{"NotAnObject", `{"clock":"noon"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(`{"video":{"renditions":{"v":{"codec":"vp09.00.10.08"}}},` + tt.json[1:]))
			if err != nil {
				t.Fatalf("the catalog itself is refused: %v", err)
			}
			if c.Clock != nil || !errors.Is(c.ClockErr(), ErrClock) {
				t.Fatalf("clock %v, err %v; want none and ErrClock", c.Clock, c.ClockErr())
			}
			if len(c.Renditions()) != 1 {
				t.Fatal("the renditions were lost with the clock")
			}
		})
	}
}

func TestEnabledFalseDisablesARenditionAndStalledDoesNot(t *testing.T) {
	c, err := Parse([]byte(`{"video":{"renditions":{
		"off":{"codec":"avc1.64001f","enabled":false},
		"on":{"codec":"avc1.64001f","enabled":true},
		"plain":{"codec":"avc1.64001f"},
		"stalled":{"codec":"avc1.64001f","stalled":true}}},
		"audio":{"renditions":{"mute":{"codec":"opus","sampleRate":48000,"numberOfChannels":2,"enabled":false}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var disabled []string
	for _, r := range c.Renditions() {
		if r.Common().Disabled() {
			disabled = append(disabled, r.Name)
		}
	}
	if !slices.Equal(disabled, []string{"off", "mute"}) {
		t.Fatalf("disabled %v, want [off mute]", disabled)
	}
}

func TestArchiveAndDataSectionsAreReadAndAreNoRenditions(t *testing.T) {
	c, err := Parse([]byte(`{
		"video":{"renditions":{"video":{"codec":"vp09.00.10.08"}}},
		"archive":{"timelines":{"catalog.json":"catalog.json.timeline.z","video":"video.timeline.z"},"timescale":1000,"durationMax":10000},
		"json":{"tracks":{"chat":{"mode":"stream","schema":"https://example/chat.json"}}},
		"binary":{"tracks":{"thumb":{"mode":"snapshot","mime":"image/jpeg"}}},
		"com.example.telemetry":{"anything":[1,2]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Archive == nil || c.Archive.Timelines["video"] != "video.timeline.z" || *c.Archive.DurationMax != 10000 {
		t.Fatalf("archive %+v", c.Archive)
	}
	if got := c.DataTracks(); !slices.Equal(got, []string{"chat", "thumb"}) {
		t.Fatalf("data tracks %v", got)
	}
	if rs := c.Renditions(); len(rs) != 1 || rs[0].Name != "video" {
		t.Fatalf("renditions %v: data tracks are no media", rs)
	}
	// v1's one timeline.
	c, err = Parse([]byte(`{"archive":{"track":"timeline.z","timescale":1000,"replay":"recordings/clip","store":"https://objects.example/rec/","version":1}}`))
	if err != nil || c.Archive == nil || c.Archive.Track != "timeline.z" || *c.Archive.Version != 1 {
		t.Fatalf("v1 archive %+v, %v", c.Archive, err)
	}
}

func TestTheRootSectionsRoundTrip(t *testing.T) {
	in := `{"video":{},"audio":{},"clock":{"wall":212976000000000},"json":{"tracks":{"chat":{"mode":"stream"}}}}`
	c, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Fatalf("marshalled %s\nwant        %s", out, in)
	}
}
