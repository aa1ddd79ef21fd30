package export

import (
	"strings"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/mux"
)

// TrackFromRendition converts a catalog rendition into the muxer's track
// description.
func TrackFromRendition(r catalog.Rendition, id int) mux.Track {
	c := r.Common()
	t := mux.Track{ID: id, Name: r.Name, Codec: c.Codec, Description: c.Description}
	if c.Jitter != nil && *c.Jitter > 0 {
		t.Jitter = time.Duration(*c.Jitter * float64(time.Millisecond))
	}
	if r.Video != nil {
		t.Kind = mux.Video
		if r.Video.CodedWidth != nil {
			t.Width = int(*r.Video.CodedWidth)
		}
		if r.Video.CodedHeight != nil {
			t.Height = int(*r.Video.CodedHeight)
		}
		if r.Video.Framerate != nil {
			t.Framerate = *r.Video.Framerate
		}
	} else if r.Text != nil {
		t.Kind = mux.Text
		t.Language, t.Label, t.Role = r.Text.Lang, r.Text.Label, r.Text.Role
		if plainText(r) {
			// Its cues become WebVTT ones (text.go): a muxer takes them
			// as WebVTT.
			t.Codec = catalog.TextVTT
		}
	} else {
		t.Kind = mux.Audio
		t.SampleRate = int(r.Audio.SampleRate)
		t.Channels = int(r.Audio.NumberOfChannels)
		t.Language, t.Label = r.Audio.Lang, r.Audio.Label
	}
	return t
}

// sameRendition reports whether two snapshots describe a rendition the same
// way as far as the muxer is concerned.
func sameRendition(a, b mux.Track) bool {
	return a.Kind == b.Kind && strings.EqualFold(a.Codec, b.Codec) && string(a.Description) == string(b.Description) &&
		a.SampleRate == b.SampleRate && a.Channels == b.Channels
}
