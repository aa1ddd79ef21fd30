package export_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/flv"
	"github.com/moq-export/moq-export/mux/mkv"
)

func video(name, codec string, kind catalog.ContainerKind) catalog.Rendition {
	c := catalog.Common{Codec: codec}
	if kind != "" {
		c.Container = &catalog.Container{Kind: kind}
	}
	return catalog.Rendition{Name: name, Kind: catalog.KindVideo, Video: &catalog.VideoConfig{Common: c}}
}

func audio(name, codec string) catalog.Rendition {
	return catalog.Rendition{Name: name, Kind: catalog.KindAudio, Audio: &catalog.AudioConfig{Common: catalog.Common{Codec: codec}, SampleRate: 48000, NumberOfChannels: 2}}
}

func TestSelect(t *testing.T) {
	h264, vp8, opus := video("hd", "avc1.64001f", ""), video("vp8", "vp8", catalog.ContainerLOC), audio("a", "opus")
	future := video("future", "avc1.64001f", catalog.ContainerKind("future"))
	cmafNoInit := video("cmaf", "avc1.64001f", catalog.ContainerCMAF)
	one := map[mux.Kind]int{mux.Video: 1}
	for _, tc := range []struct {
		name  string
		r     catalog.Rendition
		opts  export.Options
		taken map[mux.Kind]int
		want  error // nil, or what the error wraps
	}{
		{"anything without caps", vp8, export.Options{}, one, nil},
		{"carried", h264, export.Options{Caps: flv.Caps}, nil, nil},
		{"codec not carried", vp8, export.Options{Caps: flv.Caps}, nil, mux.ErrUnsupportedCodec},
		{"webm refuses h264", h264, export.Options{Caps: mkv.WebMCaps}, nil, mux.ErrUnsupportedCodec},
		{"limit reached", h264, export.Options{Caps: flv.Caps}, one, mux.ErrTrackLimit},
		{"limit of the other kind", opus, export.Options{Caps: flv.Caps}, one, nil},
		{"no count, no limit", h264, export.Options{Caps: flv.Caps}, nil, nil},
		{"named ones pass the limit", h264, export.Options{Caps: flv.Caps, Video: []string{"hd"}}, one, nil},
		{"not named", h264, export.Options{Video: []string{"other"}}, nil, export.ErrNotSelected},
		{"none of the kind", opus, export.Options{Audio: []string{}}, nil, export.ErrNotSelected},
		{"other kind named", opus, export.Options{Video: []string{"hd"}}, nil, nil},
		{"unreadable input container", future, export.Options{}, nil, export.ErrInputContainer},
		{"cmaf without an init", cmafNoInit, export.Options{}, nil, catalog.ErrBadInit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := export.Select(tc.r, tc.opts, tc.taken)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Select = %v, want %v", err, tc.want)
			}
		})
	}
}

// Which renditions of a catalog an FLV recording takes, before any muxer
// exists: the first of each kind that FLV carries.
func ExampleSelect() {
	cat := &catalog.Catalog{}
	cat.Video.Renditions = map[string]catalog.VideoConfig{
		"1080p": {Common: catalog.Common{Codec: "avc1.640028"}},
		"720p":  {Common: catalog.Common{Codec: "avc1.64001f"}},
		"vp8":   {Common: catalog.Common{Codec: "vp8"}},
	}
	cat.Audio.Renditions = map[string]catalog.AudioConfig{"aac": {Common: catalog.Common{Codec: "mp4a.40.2"}, SampleRate: 48000, NumberOfChannels: 2}}
	opts := export.Options{Caps: flv.Caps}
	taken := map[mux.Kind]int{}
	for _, r := range cat.Renditions() {
		if err := export.Select(r, opts, taken); err != nil {
			fmt.Printf("%s: no (%v)\n", r.Name, err)
			continue
		}
		taken[export.TrackFromRendition(r, 0).Kind]++
		fmt.Printf("%s: yes\n", r.Name)
	}
	// Output:
	// 1080p: yes
	// 720p: no (flv carries at most 1 video track(s): track limit reached)
	// vp8: no (flv carries at most 1 video track(s): track limit reached)
	// aac: yes
}
