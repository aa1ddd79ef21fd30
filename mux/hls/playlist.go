package hls

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/bluenviron/gohlslib/v2/pkg/codecparams"
	hlscodecs "github.com/bluenviron/gohlslib/v2/pkg/codecs"
	"github.com/bluenviron/gohlslib/v2/pkg/playlist"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h265"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mp4/codecs"
)

// hlsVersion is the EXT-X-VERSION of every playlist: 7 for EXT-X-MAP in
// a playlist without I-frames only, fMP4 segments and EXT-X-GAP-free
// EXT-X-DISCONTINUITY.
const hlsVersion = 7

// initInfo is what a rendition's init segment says about it.
type initInfo struct {
	codecs        string
	timescale     uint32
	delay         int64 // the edit list's media_time: the B-frame delay
	width, height int
}

// describeInit says what a rendition's init segment holds, from the
// codec and timescale its sample entry was made with (mux/mp4's
// SampleEntry; reading the init back with mediacommon's fmp4.Init, by
// reflection, cost as much as a segment boundary): the RFC 6381 codec
// string (gohlslib's codecparams), the timescale, the edit list's delay
// and, for H.264/H.265, the picture size.
func describeInit(init []byte, c codecs.Codec, timescale uint32) (initInfo, error) {
	info := initInfo{timescale: timescale, delay: elstMediaTime(init)}
	var hc hlscodecs.Codec
	switch c := c.(type) {
	case *codecs.H264:
		hc = &hlscodecs.H264{SPS: c.SPS, PPS: c.PPS}
		var sps h264.SPS
		if sps.Unmarshal(c.SPS) == nil {
			info.width, info.height = sps.Width(), sps.Height()
		}
	case *codecs.H265:
		hc = &hlscodecs.H265{VPS: c.VPS, SPS: c.SPS, PPS: c.PPS}
		var sps h265.SPS
		if sps.Unmarshal(c.SPS) == nil {
			info.width, info.height = sps.Width(), sps.Height()
		}
	case *codecs.AV1:
		hc = &hlscodecs.AV1{SequenceHeader: c.SequenceHeader}
	case *codecs.VP9:
		hc = &hlscodecs.VP9{Width: c.Width, Height: c.Height, Profile: c.Profile, BitDepth: c.BitDepth, ChromaSubsampling: c.ChromaSubsampling, ColorRange: c.ColorRange}
		info.width, info.height = c.Width, c.Height
	case *codecs.MPEG4Audio:
		hc = &hlscodecs.MPEG4Audio{Config: c.Config}
	case *codecs.Opus:
		hc = &hlscodecs.Opus{ChannelCount: c.ChannelCount}
	case *codecs.FLAC:
		hc = &hlscodecs.FLAC{StreamInfo: c.StreamInfo}
	case *codecs.AC3:
		info.codecs = "ac-3"
	case *codecs.EAC3:
		info.codecs = "ec-3"
	}
	if hc != nil {
		info.codecs = codecparams.Marshal(hc)
	}
	if info.codecs == "" {
		return info, fmt.Errorf("no codec string for %T", c)
	}
	return info, nil
}

// elstMediaTime returns the media_time of the first edit in b (an init
// segment with one track), 0 without one.
func elstMediaTime(b []byte) int64 {
	i := bytes.Index(b, []byte("elst"))
	if i < 4 || i+12 > len(b) {
		return 0
	}
	p := b[i+4:]
	version := p[0]
	if binary.BigEndian.Uint32(p[4:]) == 0 {
		return 0
	}
	if version == 1 && len(p) >= 24 {
		return max(int64(binary.BigEndian.Uint64(p[16:])), 0)
	}
	if len(p) >= 16 {
		return max(int64(int32(binary.BigEndian.Uint32(p[12:]))), 0)
	}
	return 0
}

// rendered is what the Writer keeps of a rendition's playlists between
// boundaries, so that a boundary costs the same at the first segment and
// the thousandth: the media playlist's segment lines, rendered once each
// (segments are only ever appended), the longest segment, the sums rates
// needs, and the MPD's timeline.
type rendered struct {
	body       []byte // the lines of Segments[:segs]
	segs       int
	longest    int64 // µs, over Segments[:segs]
	rated      int   // Segments[:rated] are in the sums below
	peak       int   // bits/s, over the rated segments of at least 1 s
	bytes, dur int64
	// The MPD's timeline (mpdRun) of Segments[:tlSegs], in ticks of
	// tlScale.
	runs    []*mpdRun
	tlSegs  int
	tlScale uint32
	// The state's JSON of Segments[:stateSegs], comma-separated
	// (state.marshal).
	stateJSON []byte
	stateSegs int
	// The JSON of the rendition's other fields (see appendJSON), and
	// what it was rendered from.
	head   []byte
	headOf rendShape
	// The media playlist written last: its buffer, written over at the
	// next boundary (Store.WriteFile keeps no data), so a boundary does
	// not allocate the playlist anew (as large as the recording is long).
	// Its first fileHead bytes are the tags before the segments, then the
	// first fileBody bytes of body; fileFinal: it ends with ENDLIST.
	file               []byte
	fileHead, fileBody int
	fileFinal          bool
	head2              []byte // the tags before the segments, rendered anew
}

// targetDuration is the EXT-X-TARGETDURATION of a rendition: its longest
// segment, rounded as the spec rounds EXTINF, and at least the target.
func (w *Writer) targetDuration(rs *renditionState) int {
	d := max(w.opts.SegmentDuration.Seconds(), float64(rs.out.longest)/1e6)
	return max(int(math.Round(d)), 1)
}

// timeRFC3339Millis is how EXT-X-PROGRAM-DATE-TIME is written.
const timeRFC3339Millis = "2006-01-02T15:04:05.999Z07:00"

// mediaPlaylist is the media playlist of one rendition: EVENT while
// recording, VOD with ENDLIST when final. It is written by hand, as
// gohlslib's playlist.Media writes it, from the segment lines rendered
// at earlier boundaries and those of the segments since (re-rendering
// every segment at every boundary made a boundary cost more the longer
// the recording; see docs/hls.md, Cost). A test holds it to gohlslib's
// rendering of the same playlist byte for byte.
//
// grown is true when the playlist is the one written last with only the
// new segments' lines after it (its tags before the segments unchanged),
// and the store takes changes (PatchStore): the Writer then tells the
// store so, and neither copies the playlist nor has it written whole,
// which at an hour is some 50 KB a rendition a boundary.
func (w *Writer) mediaPlaylist(rs *renditionState, final bool) (_ []byte, grown bool) {
	segs := rs.Segments
	c := &rs.out
	if c.segs > len(segs) {
		*c = rendered{}
	}
	for i := c.segs; i < len(segs); i++ {
		s := segs[i]
		if i > 0 && len(rs.Inits) > 0 && s.Init != segs[i-1].Init {
			// A restart whose codec configuration changed: the segment
			// gets its own EXT-X-MAP.
			c.body = appendMap(c.body, rs, s.Init)
		}
		if s.Disc && i > 0 {
			c.body = append(c.body, "#EXT-X-DISCONTINUITY\n"...)
		}
		if i == 0 || s.Disc {
			c.body = append(c.body, "#EXT-X-PROGRAM-DATE-TIME:"...)
			c.body = s.Date.AppendFormat(c.body, timeRFC3339Millis)
			c.body = append(c.body, '\n')
		}
		c.body = append(c.body, "#EXTINF:"...)
		c.body = strconv.AppendFloat(c.body, (time.Duration(s.Dur) * time.Microsecond).Seconds(), 'f', 5, 64)
		c.body = append(c.body, ",\n"...)
		if rs.Media != "" {
			c.body = append(c.body, "#EXT-X-BYTERANGE:"...)
			c.body = appendRange(c.body, s.Bytes, s.Off)
			c.body = append(c.body, '\n')
		}
		c.body = append(c.body, s.URI...)
		c.body = append(c.body, '\n')
		c.longest = max(c.longest, s.Dur)
	}
	c.segs = len(segs)
	_, patch := w.opts.Store.(PatchStore)
	if patch && !final && !c.fileFinal && c.file != nil && c.fileBody <= len(c.body) {
		c.head2 = w.playlistHead(c.head2[:0], rs, final)
		if string(c.head2) == string(c.file[:c.fileHead]) {
			c.file = append(c.file, c.body[c.fileBody:]...)
			c.fileBody = len(c.body)
			return c.file, true
		}
	}
	b := w.playlistHead(c.file[:0], rs, final)
	c.fileHead = len(b)
	b = append(b, c.body...)
	c.fileBody, c.fileFinal = len(c.body), final
	if final {
		b = append(b, "#EXT-X-ENDLIST\n"...)
	}
	c.file = b
	return b, false
}

// playlistHead appends the tags of rs's media playlist before its
// segments' lines.
func (w *Writer) playlistHead(b []byte, rs *renditionState, final bool) []byte {
	segs := rs.Segments
	typ := playlist.MediaPlaylistTypeEvent
	if final {
		typ = playlist.MediaPlaylistTypeVOD
	}
	b = append(b, "#EXTM3U\n#EXT-X-VERSION:"...)
	b = strconv.AppendInt(b, hlsVersion, 10)
	b = append(b, "\n#EXT-X-INDEPENDENT-SEGMENTS\n#EXT-X-TARGETDURATION:"...)
	b = strconv.AppendInt(b, int64(w.targetDuration(rs)), 10)
	b = append(b, "\n#EXT-X-MEDIA-SEQUENCE:"...)
	b = strconv.AppendInt(b, int64(segs[0].Num), 10)
	b = append(b, "\n#EXT-X-PLAYLIST-TYPE:"...)
	b = append(b, typ...)
	b = append(b, '\n')
	if len(rs.Inits) > 0 { // text segments are WebVTT files: no init
		b = appendMap(b, rs, segs[0].Init)
	}
	// The chapters go before the first segment's tags.
	if len(w.st.Chapters) > 0 {
		b = append(b, w.dateRanges(segs[len(segs)-1].end(), final)...)
	}
	return b
}

// appendMap appends the EXT-X-MAP of init segment generation k of rs: a
// file of its own, or a BYTERANGE of the rendition's media file (quoted,
// as RFC 8216 4.3.2.5 asks).
func appendMap(b []byte, rs *renditionState, k int) []byte {
	b = append(b, "#EXT-X-MAP:URI=\""...)
	b = append(b, rs.Inits[k]...)
	b = append(b, '"')
	if rs.Media != "" && k < len(rs.InitRanges) {
		b = append(b, ",BYTERANGE=\""...)
		b = appendRange(b, rs.InitRanges[k].Len, rs.InitRanges[k].Off)
		b = append(b, '"')
	}
	return append(b, '\n')
}

// appendRange appends an HLS byte range, length@offset.
func appendRange(b []byte, n, off int64) []byte {
	b = strconv.AppendInt(b, n, 10)
	b = append(b, '@')
	return strconv.AppendInt(b, off, 10)
}

// rates returns the largest and the average bitrate of a rendition's
// segments, in bits per second. The sums carry over from the last call
// (rendered): only the segments since are added.
func rates(rs *renditionState) (peak, avg int) {
	c := &rs.out
	if c.rated > len(rs.Segments) {
		c.rated, c.peak, c.bytes, c.dur = 0, 0, 0, 0
	}
	for ; c.rated < len(rs.Segments); c.rated++ {
		s := rs.Segments[c.rated]
		if s.Dur <= 0 {
			continue
		}
		// A short last segment measures its container overhead more than
		// its media: the peak is taken over segments of at least a second.
		if s.Dur >= 1e6 {
			c.peak = max(c.peak, bitrate(s))
		}
		c.bytes += s.Bytes
		c.dur += s.Dur
	}
	peak = c.peak
	if len(rs.Segments) == 1 && rs.Segments[0].Dur > 0 {
		peak = max(peak, bitrate(rs.Segments[0]))
	}
	if c.dur > 0 {
		avg = int(float64(c.bytes*8) / (float64(c.dur) / 1e6))
	}
	return max(peak, avg), avg
}

// bitrate is a segment's bits per second.
func bitrate(s segmentState) int { return int(float64(s.Bytes*8) / (float64(s.Dur) / 1e6)) }

// quoted makes a catalog name fit a quoted-string attribute.
func quoted(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '"' || r == '\n' || r == '\r' || r < 0x20 {
			return '_'
		}
		return r
	}, s)
	if s == "" {
		return "_"
	}
	return s
}

// multivariant is the multivariant playlist: every video rendition as a
// variant, once per group of audio renditions of one codec (EXT-X-MEDIA);
// without video, every audio rendition as a variant; with what it says,
// to tell whether it changed.
func (w *Writer) multivariant() (*playlist.Multivariant, mvShape, error) {
	var video, audio, text []*renditionState
	for _, rs := range w.st.Renditions {
		if len(rs.Segments) == 0 {
			continue
		}
		switch rs.Kind {
		case "video":
			video = append(video, rs)
		case "text":
			text = append(text, rs)
		default:
			audio = append(audio, rs)
		}
	}
	m := playlist.Multivariant{Version: hlsVersion, IndependentSegments: true}
	type group struct {
		id     string
		codecs string
		peak   int
		avg    int
	}
	var groups []*group
	byCodec := map[string]*group{}
	for _, rs := range audio {
		g := byCodec[rs.Codecs]
		if g == nil {
			g = &group{id: "audio-" + strings.ReplaceAll(rs.Codecs, ".", "-"), codecs: rs.Codecs}
			byCodec[rs.Codecs] = g
			groups = append(groups, g)
		}
		peak, avg := rates(rs)
		g.peak, g.avg = max(g.peak, peak), max(g.avg, avg)
		r := &playlist.MultivariantRendition{
			Type: playlist.MultivariantRenditionTypeAudio, GroupID: g.id, Name: renditionName(rs),
			Language: language(rs.Lang), Autoselect: true, Default: countIn(audio, rs.Codecs, rs) == 0,
		}
		if rs.Channels > 0 {
			ch := strconv.Itoa(rs.Channels)
			r.Channels = &ch
		}
		uri := rs.ID + ".m3u8"
		r.URI = &uri
		if len(video) > 0 {
			m.Renditions = append(m.Renditions, r)
		}
	}
	subs := ""
	for i, rs := range text {
		subs = subtitlesGroup
		uri := rs.ID + ".m3u8"
		m.Renditions = append(m.Renditions, &playlist.MultivariantRendition{
			Type: playlist.MultivariantRenditionTypeSubtitles, GroupID: subs, Name: renditionName(rs),
			Language: language(rs.Lang), Autoselect: true, Default: i == 0, URI: &uri,
		})
	}
	variant := func(rs *renditionState, g *group) *playlist.MultivariantVariant {
		peak, avg := rates(rs)
		// CODECS leaves the WebVTT out: players test CODECS against MSE,
		// which has no text.
		v := &playlist.MultivariantVariant{URI: rs.ID + ".m3u8", Codecs: []string{rs.Codecs}, Subtitles: subs}
		if g != nil {
			peak, avg = peak+g.peak, avg+g.avg
			v.Codecs = append(v.Codecs, g.codecs)
			v.Audio = g.id
		}
		v.Bandwidth = max(peak, 1)
		a := max(avg, 1)
		v.AverageBandwidth = &a
		if rs.Width > 0 && rs.Height > 0 {
			v.Resolution = fmt.Sprintf("%dx%d", rs.Width, rs.Height)
		}
		if rs.Framerate > 0 {
			fr := math.Round(rs.Framerate*1000) / 1000
			v.FrameRate = &fr
		}
		return v
	}
	switch {
	case len(video) > 0 && len(groups) == 0:
		for _, rs := range video {
			m.Variants = append(m.Variants, variant(rs, nil))
		}
	case len(video) > 0:
		for _, g := range groups {
			for _, rs := range video {
				m.Variants = append(m.Variants, variant(rs, g))
			}
		}
	default:
		for _, rs := range audio {
			m.Variants = append(m.Variants, variant(rs, nil))
		}
	}
	if len(m.Variants) == 0 {
		return nil, mvShape{}, fmt.Errorf("hls: no rendition has a segment")
	}
	var shape mvShape
	for _, v := range m.Variants {
		shape.variants += v.URI + " " + strings.Join(v.Codecs, ",") + " " + v.Audio + " " + v.Resolution + "\n"
		shape.rates = append(shape.rates, v.Bandwidth, *v.AverageBandwidth)
	}
	for _, r := range m.Renditions {
		shape.variants += r.GroupID + " " + r.Name + "\n"
	}
	return &m, shape, nil
}

// subtitlesGroup is the GROUP-ID of the subtitle renditions.
const subtitlesGroup = "subs"

// renditionName is the NAME of an EXT-X-MEDIA: the catalog's label, else
// its track name.
func renditionName(rs *renditionState) string {
	if rs.Label != "" {
		return quoted(rs.Label)
	}
	return quoted(rs.Name)
}

// language is a LANGUAGE attribute: a BCP 47 tag (letters, digits and
// hyphens), else nothing.
func language(tag string) string {
	if tag == "" || len(tag) > 35 {
		return ""
	}
	for _, c := range tag {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return ""
		}
	}
	return tag
}

// countIn counts the audio renditions of codec before rs (the first of a
// group is its DEFAULT).
func countIn(audio []*renditionState, codec string, rs *renditionState) int {
	n := 0
	for _, a := range audio {
		if a == rs {
			return n
		}
		if a.Codecs == codec {
			n++
		}
	}
	return n
}
