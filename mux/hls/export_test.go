package hls

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"time"

	"github.com/bluenviron/gohlslib/v2/pkg/playlist"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4"
)

// Counters and Writer.Counters give the tests the detailed counters.
type Counters = counters

func (w *Writer) Counters() Counters { return w.detail() }

// Created is how many files WriteFile created: each name's first version
// and the spares its swaps go through.
func (s *DirStore) Created() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.created
}

// ReferenceState is the package state as encoding/json writes it: what
// the tests hold the Writer's (state.marshal) to.
func (w *Writer) ReferenceState() ([]byte, error) { return json.Marshal(w.st) }

// ReferenceMPD is the MPD the Writer would write now, as dash-mpd's own
// (reflection) writer writes the same document: what the tests hold the
// Writer's byte writer (marshalMPD) to.
func (w *Writer) ReferenceMPD(final bool) (string, error) {
	return w.mpdDoc(final, nil).WriteToString("  ", true)
}

// ReferenceMediaPlaylist is rendition id's media playlist as gohlslib's
// playlist.Media writes it (what the Writer wrote before it rendered its
// playlists itself): the tests hold the Writer's to it byte for byte.
func (w *Writer) ReferenceMediaPlaylist(id string, final bool) ([]byte, error) {
	var rs *renditionState
	for _, r := range w.st.Renditions {
		if r.ID == id {
			rs = r
		}
	}
	if rs == nil {
		return nil, fmt.Errorf("no rendition %s", id)
	}
	typ := playlist.MediaPlaylistTypeEvent
	if final {
		typ = playlist.MediaPlaylistTypeVOD
	}
	segs := rs.Segments
	d := w.opts.SegmentDuration.Seconds()
	for _, s := range rs.Segments {
		d = max(d, float64(s.Dur)/1e6)
	}
	m := playlist.Media{
		Version:             hlsVersion,
		IndependentSegments: true,
		TargetDuration:      max(int(math.Round(d)), 1),
		MediaSequence:       segs[0].Num,
		PlaylistType:        &typ,
		Endlist:             final,
	}
	mapOf := func(k int) *playlist.MediaMap {
		mm := &playlist.MediaMap{URI: rs.Inits[k]}
		if rs.Media != "" {
			n, off := uint64(rs.InitRanges[k].Len), uint64(rs.InitRanges[k].Off)
			mm.ByteRangeLength, mm.ByteRangeStart = &n, &off
		}
		return mm
	}
	if len(rs.Inits) > 0 {
		m.Map = mapOf(segs[0].Init)
	}
	for i, s := range segs {
		ms := &playlist.MediaSegment{Duration: time.Duration(s.Dur) * time.Microsecond, URI: s.URI, Discontinuity: s.Disc && i > 0}
		if rs.Media != "" {
			n, off := uint64(s.Bytes), uint64(s.Off)
			ms.ByteRangeLength, ms.ByteRangeStart = &n, &off
		}
		if i == 0 || s.Disc {
			d := s.Date
			ms.DateTime = &d
		}
		m.Segments = append(m.Segments, ms)
	}
	b, err := m.Marshal()
	if err != nil {
		return nil, err
	}
	b = w.withDateRanges(b, segs[len(segs)-1].end(), final)
	for i := 1; i < len(segs) && len(rs.Inits) > 0; i++ {
		if segs[i].Init == segs[i-1].Init {
			continue
		}
		line := "\n" + segs[i-1].URI + "\n"
		if rs.Media != "" {
			line = fmt.Sprintf("\n#EXT-X-BYTERANGE:%d@%d\n%s\n", segs[i-1].Bytes, segs[i-1].Off, segs[i-1].URI)
		}
		at := bytes.Index(b, []byte(line))
		if at < 0 {
			continue
		}
		at += len(line)
		mm, err := (&playlist.Media{Map: mapOf(segs[i].Init)}).Marshal()
		if err != nil {
			return nil, err
		}
		tag := mm[bytes.Index(mm, []byte("#EXT-X-MAP")):]
		tag = tag[:bytes.IndexByte(tag, '\n')+1]
		b = slices.Insert(b, at, tag...)
	}
	// gohlslib writes an EXT-X-MAP's BYTERANGE unquoted; RFC 8216 4.3.2.5
	// makes it a quoted-string, as the Writer writes it (gohlslib, hls.js
	// and ffmpeg read both).
	return quoteMapRanges.ReplaceAll(b, []byte(`BYTERANGE="$1"`)), nil
}

var quoteMapRanges = regexp.MustCompile(`BYTERANGE=(\d+@\d+)`)

// withDateRanges inserts the chapters' EXT-X-DATERANGE tags into media
// playlist b, before its first segment.
func (w *Writer) withDateRanges(b []byte, end int64, final bool) []byte {
	if len(w.st.Chapters) == 0 {
		return b
	}
	at := bytes.Index(b, []byte("\n#EXTINF"))
	if at < 0 {
		return b
	}
	if pdt := bytes.LastIndex(b[:at+1], []byte("\n#EXT-X-PROGRAM-DATE-TIME")); pdt >= 0 {
		at = pdt // before the first segment's tags
	}
	return slices.Insert(b, at+1, w.dateRanges(end, final)...)
}

// InitReadBack says what init segment b holds as reading it back with
// mediacommon's fmp4.Init does (what the Writer did before it took the
// sample entry from the CMAF writer): codecs, timescale, width, height.
func InitReadBack(b []byte) (string, uint32, int, int, error) {
	var in fmp4.Init
	if err := in.Unmarshal(bytes.NewReader(b)); err != nil {
		return "", 0, 0, 0, err
	}
	if len(in.Tracks) != 1 {
		return "", 0, 0, 0, fmt.Errorf("%d tracks", len(in.Tracks))
	}
	info, err := describeInit(b, in.Tracks[0].Codec, in.Tracks[0].TimeScale)
	return info.codecs, info.timescale, info.width, info.height, err
}

// SegmentJSON is a segment's JSON as the Writer renders it into the
// state (segmentState.appendJSON) and as encoding/json writes it, with
// the error of each.
func SegmentJSON(num int, uri string, start, dur, size int64, disc bool, off int64, date time.Time) (mine, want []byte, mineErr, wantErr error) {
	s := segmentState{Num: num, URI: uri, Start: start, Dur: dur, Bytes: size, Disc: disc, Off: off, Date: date}
	if mine, mineErr = s.appendJSON([]byte("x")); mineErr == nil {
		mine = mine[1:]
	}
	want, wantErr = json.Marshal(s)
	return mine, want, mineErr, wantErr
}

// MultivariantSkipped reports whether the next boundary would skip
// building the multivariant playlist (mvSame), and an error when
// building it would have written it.
func (w *Writer) MultivariantSkipped() (bool, error) {
	if !w.mvSame() {
		return false, nil
	}
	_, mv, err := w.multivariant()
	if err == nil && w.mv.changed(mv) {
		err = fmt.Errorf("the multivariant playlist was not rendered, and would have changed: %+v, then %+v", w.mv, mv)
	}
	return true, err
}

// MPDWhole is how many MPDs the Writer rendered whole, not filled in
// place (Writer.mpd).
func (w *Writer) MPDWhole() int { return w.mpdWhole }

// Patched is how many versions WriteFileChanged wrote into the spare
// as the ranges that changed, not whole.
func (s *DirStore) Patched() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.patched
}
