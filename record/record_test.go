package record

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
)

// TestPlanBlamesWhatLeavesNothingToRecord: before any file is created, a
// recording with nothing it can record says why: the input container, the
// output format (naming one that carries it) or the selection.
func TestPlanBlamesWhatLeavesNothingToRecord(t *testing.T) {
	h264 := catalog.Common{Codec: "avc1.64001f"}
	opus := catalog.Common{Codec: "opus"}
	unreadable := catalog.Common{Codec: "avc1.64001f", Container: &catalog.Container{Kind: "no-such-container"}}
	catOf := func(video, audio *catalog.Common) *catalog.Catalog {
		c := &catalog.Catalog{}
		if video != nil {
			c.Video.Renditions = map[string]catalog.VideoConfig{"v": {Common: *video}}
		}
		if audio != nil {
			c.Audio.Renditions = map[string]catalog.AudioConfig{"a": {Common: *audio, SampleRate: 48000, NumberOfChannels: 2}}
		}
		return c
	}
	for _, tc := range []struct {
		name         string
		cat          *catalog.Catalog
		format       Format
		video, audio []string
		want         string // "" for nil
		usage        bool
	}{
		{"fits", catOf(&h264, &opus), MKV, nil, nil, "", false},
		{"input container", catOf(&unreadable, nil), MKV, nil, nil, `uses an input container this build does not read`, false},
		{"output format", catOf(&h264, nil), WebM, nil, nil, "webm cannot carry any selected rendition", false},
		{"named but not carried", catOf(&h264, &opus), WebM, []string{"v"}, nil, "video v:", false},
		{"nothing selected", catOf(&h264, nil), MKV, []string{}, nil, "the selection leaves nothing", true},
		{"no renditions", catOf(nil, nil), MKV, nil, nil, "no renditions", false},
	} {
		out, _ := Files("x"+tc.format.Ext(), FileOptions{})
		r, err := New(Options{Output: out, Format: tc.format, Video: tc.video, Audio: tc.audio})
		if err != nil {
			t.Fatal(err)
		}
		err = r.Plan("b", tc.cat)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrSelection) != tc.usage):
			t.Errorf("%s: %v; want %q (selection error: %v)", tc.name, err, tc.want, tc.usage)
		}
		if strings.Contains(fmt.Sprint(err), "--") {
			t.Errorf("%s: %v names a flag: the library leaves that to the command", tc.name, err)
		}
	}
}

// TestPlanErrorsCarryTheirFacts: the typed errors of Plan hold what the
// command needs to say what to do (the formats that would carry it, the
// renditions there are).
func TestPlanErrorsCarryTheirFacts(t *testing.T) {
	h264 := catalog.Common{Codec: "avc1.64001f"}
	cat := &catalog.Catalog{}
	cat.Video.Renditions = map[string]catalog.VideoConfig{"v": {Common: h264}}
	out, _ := Files("x.webm", FileOptions{})
	r, _ := New(Options{Output: out})
	fe, ok := errors.AsType[*FormatError](r.Plan("b", cat))
	if !ok || fe.Format != WebM || fe.Broadcast != "b" || !slices.Contains(fe.Others, MKV) || slices.Contains(fe.Others, WebM) {
		t.Errorf("FormatError %+v: want webm, b, and mkv among the others", fe)
	}
	r, _ = New(Options{Output: out, Video: []string{"w"}})
	se, ok := errors.AsType[*SelectionError](r.Plan("b", cat))
	if !ok || se.Name != "w" || se.Kind != catalog.KindVideo || !slices.Equal(se.Video, []string{"v"}) {
		t.Errorf("SelectionError %+v: want w, video, and v among the renditions", se)
	}
	r, _ = New(Options{Output: out, Video: []string{"v"}})
	re, ok := errors.AsType[*RenditionError](r.Plan("b", cat))
	if !ok || re.Name != "v" || re.Format != WebM || !errors.Is(re, mux.ErrUnsupportedCodec) {
		t.Errorf("RenditionError %+v: want v in webm, wrapping ErrUnsupportedCodec", re)
	}
}

// TestCatalogWithoutRenditionsIsWaitedFor: a browser publisher's first
// catalog lists nothing (its encoders are not running yet); the recorder
// says so and takes the next snapshot, the one with the renditions.
func TestCatalogWithoutRenditionsIsWaitedFor(t *testing.T) {
	b := model.NewBroadcast("room/alice")
	tr := b.CreateTrack(catalog.TrackName)
	publish := func(js string) {
		g, err := tr.AppendGroup()
		if err != nil {
			t.Fatal(err)
		}
		if err := g.WriteFrame(model.Frame{Payload: []byte(js)}); err != nil {
			t.Fatal(err)
		}
		g.Close(nil)
	}
	publish(`{}`)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	said := make(chan struct{})
	type result struct {
		cat *catalog.Catalog
		err error
	}
	got := make(chan result, 1)
	go func() {
		cat, err := firstCatalogWithRenditions(ctx, b, func() { close(said) })
		got <- result{cat, err}
	}()
	select {
	case <-said:
	case <-ctx.Done():
		t.Fatal("the empty catalog was not reported")
	}
	publish(`{"video":{"renditions":{"v":{"codec":"vp8"}}}}`)
	r := <-got
	if r.err != nil || len(r.cat.Renditions()) != 1 {
		t.Fatalf("catalog %v, %v; want the one with rendition v", r.cat, r.err)
	}
}
