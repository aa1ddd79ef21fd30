package export

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/mux"
)

// catalogReader turns the frames of a catalog track into snapshots: frame 0
// of a group is a full document, later frames are JSON merge patches (RFC
// 7396), which hang's publisher does not send today but may.
type catalogReader struct {
	compressed bool
	group      uint64
	inflater   *catalog.Inflater
	doc        map[string]any
	started    bool
}

// frame consumes one catalog frame; it returns the raw JSON of the new
// snapshot.
func (r *catalogReader) frame(group uint64, keyframe bool, payload []byte) ([]byte, error) {
	if !r.started || group != r.group || keyframe {
		r.started, r.group, r.doc = true, group, nil
		r.inflater = &catalog.Inflater{}
	}
	if r.compressed {
		var err error
		if payload, err = r.inflater.Frame(payload); err != nil {
			return nil, err
		}
	}
	if r.doc == nil {
		if err := json.Unmarshal(payload, &r.doc); err != nil {
			return nil, &catalog.SyntaxError{Err: err}
		}
		return payload, nil
	}
	var patch any
	if err := json.Unmarshal(payload, &patch); err != nil {
		return nil, &catalog.SyntaxError{Err: fmt.Errorf("merge patch: %w", err)}
	}
	merged, _ := mergePatch(r.doc, patch).(map[string]any)
	if merged == nil {
		return nil, &catalog.SyntaxError{Err: fmt.Errorf("merge patch replaced the catalog root")}
	}
	r.doc = merged
	return json.Marshal(merged)
}

// mergePatch applies an RFC 7396 JSON merge patch.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	out := make(map[string]any, len(t))
	for k, v := range t {
		out[k] = v
	}
	for k, v := range p {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = mergePatch(out[k], v)
	}
	return out
}

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
	} else {
		t.Kind = mux.Audio
		t.SampleRate = int(r.Audio.SampleRate)
		t.Channels = int(r.Audio.NumberOfChannels)
	}
	return t
}

// sameRendition reports whether two snapshots describe a rendition the same
// way as far as the muxer is concerned.
func sameRendition(a, b mux.Track) bool {
	return a.Kind == b.Kind && strings.EqualFold(a.Codec, b.Codec) && string(a.Description) == string(b.Description) &&
		a.SampleRate == b.SampleRate && a.Channels == b.Channels
}
