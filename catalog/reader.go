package catalog

import (
	"encoding/json"
	"errors"
	"strings"
)

// TrackFor returns the catalog track to read for a broadcast: the MSF
// "catalog" track when the name ends in ".msf", else "catalog.json" (the
// reference picks the same by name; catalog.json.z is used only when asked
// for).
func TrackFor(broadcast string) string {
	if strings.HasSuffix(broadcast, ".msf") {
		return MSFTrackName
	}
	return TrackName
}

// Reader turns the frames of a catalog track into snapshots. Frame 0 of a
// group is a full document; later frames of the same group are JSON merge
// patches (RFC 7396), which hang's publisher does not send today but may.
// The compressed track is inflated and the MSF track converted to the hang
// shape, according to the track name.
type Reader struct {
	track    string
	group    uint64
	inGroup  bool
	doc      map[string]any
	inflater *Inflater
}

// NewReader returns a Reader for the catalog track named track
// (TrackName, CompressedTrackName or MSFTrackName).
func NewReader(track string) *Reader { return &Reader{track: track} }

// Reset forgets the current group, after a discontinuity of the track.
func (r *Reader) Reset() { r.inGroup = false }

// Frame applies the next frame of the track; first says it is the first
// frame of group. It returns the snapshot the frame makes. On error the
// previous snapshot stays the latest; a broken group is skipped until the
// next one starts.
func (r *Reader) Frame(group uint64, first bool, payload []byte) (*Catalog, error) {
	start := first || !r.inGroup || group != r.group
	if start {
		r.group, r.inGroup, r.doc = group, true, nil
		r.inflater = &Inflater{}
	}
	data := payload
	if r.track == CompressedTrackName {
		var err error
		if data, err = r.inflater.Frame(data); err != nil {
			r.inGroup = false
			return nil, err
		}
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		if start {
			r.inGroup = false
		}
		return nil, &SyntaxError{Err: err}
	}
	if start {
		m, ok := v.(map[string]any)
		if !ok {
			r.inGroup = false
			return nil, &SyntaxError{Err: errors.New("catalog is not a JSON object")}
		}
		r.doc = m
	} else {
		m, ok := mergePatch(r.doc, v).(map[string]any)
		if !ok {
			return nil, &SyntaxError{Err: errors.New("patch made the catalog a non-object")}
		}
		r.doc = m
	}
	raw, err := json.Marshal(r.doc)
	if err != nil {
		return nil, err
	}
	if r.track == MSFTrackName {
		return ParseMSF(raw)
	}
	return Parse(raw)
}

// mergePatch applies an RFC 7396 JSON merge patch without modifying target.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, _ := target.(map[string]any)
	out := make(map[string]any, len(t)+len(p))
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
