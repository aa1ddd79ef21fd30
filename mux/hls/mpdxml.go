package hls

import (
	"encoding/xml"
	"strconv"
	"unicode/utf8"

	"github.com/Eyevinn/dash-mpd/mpd"
)

// marshalMPD writes the MPD the Writer builds (mpd) as XML with a plain
// byte-buffer writer, attribute by attribute, for exactly the fields the
// Writer sets. dash-mpd's own WriteToString goes through reflection
// (its copy of encoding/xml) and was about a sixth of what packaging cost
// per frame, as the manifest is rewritten at every segment boundary (see
// docs/hls.md, Cost). A test (TestTheMPDWriterSaysWhatDashMPDSays) checks
// that dash-mpd reads back from it what it reads back from WriteToString
// for every package shape the Writer makes.
//
// lists holds, for a SegmentList, the run whose S and SegmentURL elements
// were rendered already (mpdRun): they are copied, not rendered again.
//
// marks, when not nil, gets where the parts a boundary changes were
// written (see mpdMark): the publish time, each bandwidth, each
// SegmentList's and SegmentTemplate's entries.
//
// roomy leaves room after the parts that change (see Writer.mpd): the
// publish time (fixed width), each bandwidth (spaces after its value,
// for ten digits), each SegmentList's S and SegmentURL lines and each
// SegmentTemplate's S lines (spaces after them, mpdRoom); each of those
// parts is marked, with the room.
func marshalMPD(b []byte, m *mpd.MPD, lists map[*mpd.SegmentListType]*mpdRun, marks *[]mpdMark, roomy bool) []byte {
	b = append(b, xml.Header...)
	b = append(b, "<MPD"...)
	b = attr(b, "xmlns", m.XMLNs)
	b = attr(b, "profiles", string(m.Profiles))
	if m.Type != nil {
		b = attr(b, "type", *m.Type)
	}
	b = attr(b, "availabilityStartTime", string(m.AvailabilityStartTime))
	if m.PublishTime != "" {
		b = append(b, ` publishTime="`...)
		at := len(b)
		b = escaped(b, string(m.PublishTime))
		mark(marks, mpdMark{start: at, end: len(b), room: len(b) - at, part: markPublish})
		b = append(b, '"')
	}
	b = durAttr(b, "mediaPresentationDuration", m.MediaPresentationDuration)
	b = durAttr(b, "minimumUpdatePeriod", m.MinimumUpdatePeriod)
	b = durAttr(b, "minBufferTime", m.MinBufferTime)
	b = durAttr(b, "maxSegmentDuration", m.MaxSegmentDuration)
	b = append(b, ">\n"...)
	for _, p := range m.Periods {
		b = append(b, "  <Period"...)
		b = attr(b, "id", p.Id)
		b = durAttr(b, "start", p.Start)
		b = append(b, ">\n"...)
		for _, as := range p.AdaptationSets {
			b = append(b, "    <AdaptationSet"...)
			if as.Id != nil {
				b = uintAttr(b, "id", uint64(*as.Id))
			}
			b = attr(b, "lang", as.Lang)
			b = attr(b, "contentType", string(as.ContentType))
			if as.SegmentAlignment {
				b = attr(b, "segmentAlignment", "true")
			}
			b = attr(b, "mimeType", as.MimeType)
			if as.StartWithSAP != 0 {
				b = uintAttr(b, "startWithSAP", uint64(as.StartWithSAP))
			}
			b = append(b, ">\n"...)
			for _, r := range as.Roles {
				b = descriptor(b, "      ", "Role", r)
			}
			for _, l := range as.Labels {
				b = append(b, "      <Label>"...)
				b = escaped(b, l.Value)
				b = append(b, "</Label>\n"...)
			}
			for _, rep := range as.Representations {
				b = representation(b, rep, lists, marks, roomy)
			}
			b = append(b, "    </AdaptationSet>\n"...)
		}
		b = append(b, "  </Period>\n"...)
	}
	return append(b, "</MPD>"...)
}

// mpdMark is where marshalMPD wrote a part of the MPD that a boundary
// changes, [start, end) of what it wrote, and which: the publish time, or
// rep's bandwidth, SegmentList entries (a SegmentTimeline and the
// SegmentURLs) or SegmentTemplate timeline. With room (roomy), a part is
// room bytes from start, spaces after end: the bandwidth with its closing
// quote, a SegmentList's S lines (markListS) and SegmentURL lines
// (markListURL) of run, a SegmentTemplate's S lines.
type mpdMark struct {
	start, end int
	rep        *mpd.RepresentationType
	part       mpdPart
	room       int
	run        *mpdRun
}

// mpdPart is which part of the MPD an mpdMark marks.
type mpdPart uint8

const (
	markPublish mpdPart = iota
	markBandwidth
	markList
	markTemplate
	markListS
	markListURL
)

func mark(marks *[]mpdMark, mk mpdMark) {
	if marks != nil {
		*marks = append(*marks, mk)
	}
}

// room appends n spaces to b.
func room(b []byte, n int) []byte {
	for range n {
		b = append(b, ' ')
	}
	return b
}

// spliceMPD writes the MPD that marshalMPD wrote as text, marking marks,
// with each marked part written anew from m (the same document, its
// marked parts updated): what marshalMPD writes of it, without going
// through the parts no boundary changes.
func spliceMPD(b, text []byte, marks []mpdMark, m *mpd.MPD, lists map[*mpd.SegmentListType]*mpdRun) []byte {
	pos := 0
	for _, mk := range marks {
		b = append(b, text[pos:mk.start]...)
		switch mk.part {
		case markPublish:
			b = escaped(b, string(m.PublishTime))
		case markBandwidth:
			b = strconv.AppendUint(b, uint64(mk.rep.Bandwidth), 10)
		case markList:
			b = listEntries(b, mk.rep.SegmentList, lists)
		case markTemplate:
			b = timeline(b, mk.rep.SegmentTemplate.SegmentTimeline)
		}
		pos = mk.end
	}
	return append(b, text[pos:]...)
}

// representation writes one Representation element.
func representation(b []byte, rep *mpd.RepresentationType, lists map[*mpd.SegmentListType]*mpdRun, marks *[]mpdMark, roomy bool) []byte {
	b = append(b, "      <Representation"...)
	b = attr(b, "id", rep.Id)
	b = append(b, ` bandwidth="`...)
	at := len(b)
	b = strconv.AppendUint(b, uint64(rep.Bandwidth), 10)
	if roomy {
		// Spaces after the value, between the attributes: ten digits.
		b = append(b, '"')
		mark(marks, mpdMark{start: at, end: len(b), rep: rep, part: markBandwidth, room: 11})
		b = room(b, 11-(len(b)-at))
	} else {
		mark(marks, mpdMark{start: at, end: len(b), rep: rep, part: markBandwidth})
		b = append(b, '"')
	}
	if rep.Width != 0 {
		b = uintAttr(b, "width", uint64(rep.Width))
	}
	if rep.Height != 0 {
		b = uintAttr(b, "height", uint64(rep.Height))
	}
	b = attr(b, "frameRate", string(rep.FrameRate))
	if rep.AudioSamplingRate != nil {
		b = attr(b, "audioSamplingRate", string(*rep.AudioSamplingRate))
	}
	b = attr(b, "codecs", rep.Codecs)
	b = append(b, ">\n"...)
	for _, c := range rep.AudioChannelConfigurations {
		b = descriptor(b, "        ", "AudioChannelConfiguration", c)
	}
	if sl := rep.SegmentList; sl != nil {
		b = append(b, "        <SegmentList"...)
		b = multipleBaseAttrs(b, &sl.MultipleSegmentBaseType)
		b = append(b, ">\n"...)
		if in := sl.Initialization; in != nil {
			b = append(b, "          <Initialization"...)
			b = attr(b, "sourceURL", string(in.SourceURL))
			b = attr(b, "range", in.Range)
			b = append(b, "></Initialization>\n"...)
		}
		at := len(b)
		if r := lists[sl]; roomy && r != nil && len(r.s) == len(sl.SegmentTimeline.S) && len(r.urls) == len(sl.SegmentURL) {
			// The S lines and the SegmentURL lines, each with room.
			b = append(b, "          <SegmentTimeline>\n"...)
			at := len(b)
			b = append(b, r.sXML...)
			n := mpdRoom(r.sXML, len(r.s))
			mark(marks, mpdMark{start: at, end: len(b), rep: rep, part: markListS, room: len(r.sXML) + n, run: r})
			b = room(b, n)
			b = append(b, "          </SegmentTimeline>\n"...)
			at = len(b)
			b = append(b, r.urlXML...)
			n = mpdRoom(r.urlXML, len(r.urls))
			mark(marks, mpdMark{start: at, end: len(b), rep: rep, part: markListURL, room: len(r.urlXML) + n, run: r})
			b = room(b, n)
		} else {
			b = listEntries(b, sl, lists)
			mark(marks, mpdMark{start: at, end: len(b), rep: rep, part: markList})
		}
		b = append(b, "        </SegmentList>\n"...)
	}
	if st := rep.SegmentTemplate; st != nil {
		b = append(b, "        <SegmentTemplate"...)
		b = attr(b, "media", st.Media)
		b = attr(b, "initialization", st.Initialization)
		b = multipleBaseAttrs(b, &st.MultipleSegmentBaseType)
		if st.SegmentTimeline == nil {
			b = append(b, "></SegmentTemplate>\n"...)
		} else {
			b = append(b, ">\n"...)
			at := len(b)
			if roomy {
				b = append(b, "          <SegmentTimeline>\n"...)
				at = len(b)
				b = appendEntries(b, st.SegmentTimeline)
				n := mpdRoom(b[at:], len(st.SegmentTimeline.S))
				mark(marks, mpdMark{start: at, end: len(b), rep: rep, part: markTemplate, room: len(b) - at + n})
				b = room(b, n)
				b = append(b, "          </SegmentTimeline>\n"...)
			} else {
				b = timeline(b, st.SegmentTimeline)
				mark(marks, mpdMark{start: at, end: len(b), rep: rep, part: markTemplate})
			}
			b = append(b, "        </SegmentTemplate>\n"...)
		}
	}
	return append(b, "      </Representation>\n"...)
}

// listEntries writes a SegmentList's SegmentTimeline and SegmentURLs: the
// lines its run rendered already (lists), or element by element.
func listEntries(b []byte, sl *mpd.SegmentListType, lists map[*mpd.SegmentListType]*mpdRun) []byte {
	if r := lists[sl]; r != nil && len(r.s) == len(sl.SegmentTimeline.S) && len(r.urls) == len(sl.SegmentURL) {
		b = append(b, "          <SegmentTimeline>\n"...)
		b = append(b, r.sXML...)
		b = append(b, "          </SegmentTimeline>\n"...)
		return append(b, r.urlXML...)
	}
	if sl.SegmentTimeline != nil {
		b = timeline(b, sl.SegmentTimeline)
	}
	for _, u := range sl.SegmentURL {
		b = appendSegmentURL(b, u)
	}
	return b
}

// multipleBaseAttrs writes the attributes the Writer sets of a
// SegmentTemplate or SegmentList.
func multipleBaseAttrs(b []byte, m *mpd.MultipleSegmentBaseType) []byte {
	if m.StartNumber != nil {
		b = uintAttr(b, "startNumber", uint64(*m.StartNumber))
	}
	if m.Timescale != nil {
		b = uintAttr(b, "timescale", uint64(*m.Timescale))
	}
	if m.PresentationTimeOffset != nil {
		b = uintAttr(b, "presentationTimeOffset", *m.PresentationTimeOffset)
	}
	return b
}

// timeline writes a SegmentTimeline element.
func timeline(b []byte, tl *mpd.SegmentTimelineType) []byte {
	b = append(b, "          <SegmentTimeline>\n"...)
	b = appendEntries(b, tl)
	return append(b, "          </SegmentTimeline>\n"...)
}

// appendEntries writes the S elements of a SegmentTimeline.
func appendEntries(b []byte, tl *mpd.SegmentTimelineType) []byte {
	for _, s := range tl.S {
		b = appendS(b, s)
	}
	return b
}

// appendS writes one S element of a SegmentTimeline. An S and a
// SegmentURL (a ranged rendition's two lines per segment) are written as
// empty-element tags without indentation: the MPD is rewritten whole at
// each boundary and, at an hour, is mostly these lines, which this makes
// about a third shorter (XML reads the same elements; docs/hls.md, Cost).
func appendS(b []byte, s *mpd.S) []byte {
	b = append(b, "<S"...)
	if s.T != nil {
		b = uintAttr(b, "t", *s.T)
	}
	b = uintAttr(b, "d", s.D)
	if s.R != 0 {
		b = append(b, ` r="`...)
		b = strconv.AppendInt(b, int64(s.R), 10)
		b = append(b, '"')
	}
	return append(b, "/>\n"...)
}

// appendSegmentURL writes one SegmentURL element.
func appendSegmentURL(b []byte, u *mpd.SegmentURLType) []byte {
	b = append(b, "<SegmentURL"...)
	b = attr(b, "media", string(u.Media))
	b = attr(b, "mediaRange", string(u.MediaRange))
	return append(b, "/>\n"...)
}

// descriptor writes a DescriptorType element.
func descriptor(b []byte, indent, name string, d *mpd.DescriptorType) []byte {
	b = append(b, indent...)
	b = append(b, '<')
	b = append(b, name...)
	b = attr(b, "schemeIdUri", string(d.SchemeIdUri))
	b = attr(b, "value", d.Value)
	b = attr(b, "id", d.Id)
	b = append(b, "></"...)
	b = append(b, name...)
	return append(b, ">\n"...)
}

// attr appends ` name="value"`, nothing for an empty value (omitempty).
func attr(b []byte, name, value string) []byte {
	if value == "" {
		return b
	}
	b = append(b, ' ')
	b = append(b, name...)
	b = append(b, `="`...)
	b = escaped(b, value)
	return append(b, '"')
}

func uintAttr(b []byte, name string, v uint64) []byte {
	b = append(b, ' ')
	b = append(b, name...)
	b = append(b, `="`...)
	b = strconv.AppendUint(b, v, 10)
	return append(b, '"')
}

func durAttr(b []byte, name string, d *mpd.Duration) []byte {
	if d == nil {
		return b
	}
	return attr(b, name, d.String())
}

// escaped appends s with XML's special characters as entities (as
// encoding/xml escapes attribute values and character data).
func escaped(b []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 0x20 && c < utf8.RuneSelf && c != '&' && c != '<' && c != '>' && c != '"' && c != '\''
	}
	if plain {
		// Printable ASCII without a special character (every name and
		// number the Writer writes): as it is.
		return append(b, s...)
	}
	for _, c := range s {
		switch {
		case c == '&':
			b = append(b, "&amp;"...)
		case c == '<':
			b = append(b, "&lt;"...)
		case c == '>':
			b = append(b, "&gt;"...)
		case c == '"':
			b = append(b, "&#34;"...)
		case c == '\'':
			b = append(b, "&#39;"...)
		case c == '\t':
			b = append(b, "&#x9;"...)
		case c == '\n':
			b = append(b, "&#xA;"...)
		case c == '\r':
			b = append(b, "&#xD;"...)
		case c < 0x20 || c >= 0xD800 && c < 0xE000 || c == 0xFFFE || c == 0xFFFF:
			// Not a character XML allows (invalid UTF-8 reads as U+FFFD).
			b = utf8.AppendRune(b, utf8.RuneError)
		default:
			b = utf8.AppendRune(b, c)
		}
	}
	return b
}
