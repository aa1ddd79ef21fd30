package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// TrackFor returns the catalog track to read first for a broadcast: the
// MSF "catalog" track when the name ends in ".msf", else "catalog.json"
// (the reference picks the same by name; catalog.json.z is used only when
// asked for).
func TrackFor(broadcast string) string { return TracksFor(broadcast)[0] }

// TracksFor returns the catalog tracks to try for a broadcast, in order,
// each when the one before ended before its first snapshot:
//
//   - "catalog.json", ".catalog", "catalog": hang's catalog (every hang
//     publisher; the Rust ones publish an MSF "catalog" beside it), then
//     MSF draft 00's as MediaMTX serves it, then MSF draft 01's;
//   - for a name ending in ".msf": "catalog", ".catalog", "catalog.json".
//
// ".catalog" comes before "catalog" because a server that does not know a
// track may close the whole session (MediaMTX does): the name a publisher
// of MSF alone is likeliest to use is asked first.
func TracksFor(broadcast string) []string {
	if strings.HasSuffix(broadcast, ".msf") {
		return []string{MSFTrackName, MSF00TrackName, TrackName}
	}
	return []string{TrackName, MSF00TrackName, MSFTrackName}
}

// Reader turns the frames of a catalog track into snapshots. Frame 0 of a
// group is a full document; later frames of the same group are JSON merge
// patches (RFC 7396), which hang's publisher does not send today but may.
// The compressed track is inflated and the MSF track converted to the hang
// shape, according to the track name.
//
// Between frames it holds the group's document as JSON text, not decoded:
// a recorder keeps one Reader per broadcast for as long as the broadcast
// lives, and a decoded document costs several times its text. A patch
// decodes it again (numbers kept exact), applies itself and encodes it.
type Reader struct {
	track    string
	group    uint64
	inGroup  bool
	doc      json.RawMessage // the group's document so far
	inflater *Inflater
}

// NewReader returns a Reader for the catalog track named track
// (TrackName, CompressedTrackName, MSFTrackName or MSF00TrackName).
func NewReader(track string) *Reader { return &Reader{track: track} }

// Reset forgets the current group, after a discontinuity of the track.
func (r *Reader) Reset() { r.inGroup, r.doc, r.inflater = false, nil, nil }

// Frame applies the next frame of the track; first says it is the first
// frame of group. It returns the snapshot the frame makes. On error the
// previous snapshot stays the latest; a broken group is skipped until the
// next one starts.
func (r *Reader) Frame(group uint64, first bool, payload []byte) (*Catalog, error) {
	start := first || !r.inGroup || group != r.group
	if start {
		r.group, r.inGroup, r.doc, r.inflater = group, true, nil, nil
	}
	data := payload
	if r.track == CompressedTrackName {
		if r.inflater == nil {
			r.inflater = &Inflater{}
		}
		var err error
		if data, err = r.inflater.Frame(data); err != nil {
			r.inGroup = false
			return nil, err
		}
	}
	var doc json.RawMessage
	if start {
		// Checked whole, and copied: payload belongs to the track.
		if err := json.Unmarshal(data, &doc); err != nil {
			r.inGroup = false
			return nil, &SyntaxError{Err: err}
		}
		if doc = bytes.TrimSpace(doc); len(doc) == 0 || doc[0] != '{' {
			r.inGroup = false
			return nil, &SyntaxError{Err: errors.New("catalog is not a JSON object")}
		}
	} else {
		patch, err := decodeExact(data)
		if err != nil {
			return nil, &SyntaxError{Err: err}
		}
		target, err := decodeExact(r.doc)
		if err != nil {
			return nil, &SyntaxError{Err: err}
		}
		m, ok := mergePatch(target, patch).(map[string]any)
		if !ok {
			return nil, &SyntaxError{Err: errors.New("patch made the catalog a non-object")}
		}
		if doc, err = json.Marshal(m); err != nil {
			return nil, err
		}
	}
	// A document the schema refuses stays the base of the group's next
	// patch, which may mend it.
	r.doc = doc
	if IsMSFTrackName(r.track) {
		return ParseMSF(doc)
	}
	return Parse(doc)
}

// decodeExact decodes a JSON value with numbers kept as their text, so that
// encoding it again changes none.
func decodeExact(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("invalid character after top-level value")
	}
	return v, nil
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
