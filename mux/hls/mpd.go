package hls

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/Eyevinn/dash-mpd/mpd"
)

// ticksOf converts µs to ticks of timescale ts, rounded as mux/mp4 does.
func ticksOf(us int64, ts uint32) int64 {
	if us >= 0 {
		return (us*int64(ts) + 500_000) / 1_000_000
	}
	return -((-us*int64(ts) + 500_000) / 1_000_000)
}

// mpd is the DASH manifest over the same segments: one Period per run of
// the timeline without a break (a discontinuity or a restart starts the
// next), per Period an AdaptationSet per kind and codec (per rendition for
// audio and subtitles: a choice, not a switch), a Representation
// per rendition with a SegmentTemplate ($Number$) and its SegmentTimeline.
// While recording it is dynamic (players poll it); when final, static.
//
// The document built at a boundary is kept (mpdKept) and, while the
// package keeps its shape (the same renditions, described the same, the
// same Periods), the next boundary only updates what moves in it: the
// publish time, the bandwidths and each timeline's entries, and writes
// the document it wrote then with only those parts written anew. Building
// and writing it anew at each boundary (some 40 allocations, two maps and
// every attribute) was about half of what a boundary's manifests cost in
// user space (docs/hls.md, Cost).
//
// Through a PatchStore (a directory), while recording, the document is
// written with room: spaces after each list that grows (each
// Representation's S and SegmentURL lines, or its SegmentTemplate
// timeline) and after each bandwidth, and a boundary writes its new lines
// into that room in the text written last, in place, and tells the store
// which bytes changed (patch): the store brings its spare copy up to date
// by those bytes instead of taking the whole document, which at an hour is
// some 200 KB a boundary, and nothing copies the document either. When a
// room is full, the document is written whole again with new room
// (mpdRoom).
func (w *Writer) mpd(final bool) (text []byte, changed []Span, patch bool) {
	k := &w.mpdKept
	shape := w.mpdShapes(k.next[:0])
	_, roomy := w.opts.Store.(PatchStore)
	roomy = roomy && !final
	same := !final && k.doc != nil && k.roomy == roomy && slices.EqualFunc(shape, k.shape, mpdShape.same)
	if same {
		k.doc.PublishTime = dateTime(w.opts.Now())
		for _, kr := range k.reps {
			kr.update()
		}
		if !roomy {
			w.mpdBuf = spliceMPD(w.mpdBuf[:0], k.text, k.marks, k.doc, k.lists)
		} else {
			k.changed, patch = k.fill(w.mpdBuf, k.changed[:0])
			same = patch
		}
	}
	if !same {
		k.lists, k.reps, k.marks = map[*mpd.SegmentListType]*mpdRun{}, k.reps[:0], k.marks[:0]
		k.doc = w.mpdDoc(final, k)
		w.mpdBuf = marshalMPD(w.mpdBuf[:0], k.doc, k.lists, &k.marks, roomy)
		if !roomy {
			k.text = append(k.text[:0], w.mpdBuf...)
		}
		w.mpdWhole++
	}
	k.shape, k.next, k.roomy = shape, k.shape, roomy
	if final {
		k.doc = nil // a static MPD is not updated
	}
	return w.mpdBuf, k.changed, patch
}

// mpdKept is the MPD document built at an earlier boundary (see mpd):
// the shape it was built from, the run behind each SegmentList (whose
// lines marshalMPD takes as rendered), each Representation with what
// moves in it, and the document as marshalMPD wrote it then (text) with
// where those parts are in it (marks): a boundary writes the text again
// with only those parts written anew (spliceMPD). With room (roomy), the
// text is the Writer's mpdBuf, which each boundary changes in place
// (fill), and changed where it did.
type mpdKept struct {
	doc         *mpd.MPD
	lists       map[*mpd.SegmentListType]*mpdRun
	reps        []mpdRep
	shape, next []mpdShape
	text        []byte
	marks       []mpdMark
	roomy       bool
	changed     []Span
	tmp         []byte
}

// fill writes into text, the document with room that marshalMPD wrote at
// an earlier boundary (and fill since), what moved in the document since:
// the publish time, each bandwidth and each list's new entries, each in
// its room. It appends to changed the ranges it wrote; ok is false when
// something does not fit its room (text is then half updated: the caller
// writes the document anew).
func (k *mpdKept) fill(text []byte, changed []Span) (_ []Span, ok bool) {
	for i := range k.marks {
		mk := &k.marks[i]
		used := mk.end - mk.start
		var add []byte
		switch mk.part {
		case markPublish:
			add = k.tmp[:0]
			add = append(add, k.doc.PublishTime...)
			if len(add) != mk.room {
				return changed, false
			}
			copy(text[mk.start:], add)
			changed = append(changed, Span{mk.start, len(add)})
			continue
		case markBandwidth:
			add = strconv.AppendUint(k.tmp[:0], uint64(mk.rep.Bandwidth), 10)
			add = append(add, '"')
			k.tmp = add
			if len(add) > mk.room {
				return changed, false
			}
			if len(add) == used && string(text[mk.start:mk.end]) == string(add) {
				continue
			}
			copy(text[mk.start:], add)
			spaces(text[mk.start+len(add) : mk.start+max(used, len(add))])
			changed = append(changed, Span{mk.start, max(used, len(add))})
			mk.end = mk.start + len(add)
			continue
		case markListS, markListURL:
			src := mk.run.sXML
			if mk.part == markListURL {
				src = mk.run.urlXML
			}
			if len(src) < used {
				return changed, false
			}
			add = src[used:]
			if len(add) == 0 {
				continue
			}
			if len(src) > mk.room {
				return changed, false
			}
			copy(text[mk.end:], add)
			changed = append(changed, Span{mk.end, len(add)})
			mk.end += len(add)
			continue
		case markTemplate:
			add = appendEntries(k.tmp[:0], mk.rep.SegmentTemplate.SegmentTimeline)
			k.tmp = add
			if len(add) > mk.room {
				return changed, false
			}
			n := max(used, len(add))
			copy(text[mk.start:], add)
			spaces(text[mk.start+len(add) : mk.start+n])
			changed = append(changed, Span{mk.start, n})
			mk.end = mk.start + len(add)
			continue
		}
		return changed, false // a part without room
	}
	return changed, true
}

// spaces fills b with spaces.
func spaces(b []byte) {
	for i := range b {
		b[i] = ' '
	}
}

// mpdRoom is how many bytes of room marshalMPD leaves after a list of n
// entries, lines (one an entry): room for a quarter of n more entries, at
// least 8 and at most 64, each as long as the last line (the longest: its
// numbers are the largest) and a few digits more. The document is then
// written whole once in 8 to 64 boundaries, and at an hour its room is
// some 15 KB of its 200 KB.
func mpdRoom(lines []byte, n int) int {
	more := min(max(n/4, 8), 64)
	last := 80
	if len(lines) > 0 {
		last = len(lines) - 1 - bytes.LastIndexByte(lines[:len(lines)-1], '\n')
	}
	return more * (last + 4)
}

// mpdRep is a Representation of the kept MPD and the rendition and run
// it shows.
type mpdRep struct {
	rs  *renditionState
	r   *mpdRun
	rep *mpd.RepresentationType
}

// update sets what moves in the Representation as mpdDoc sets it: its
// bandwidth and its timeline's (and list's) entries.
func (kr mpdRep) update() {
	kr.rep.Bandwidth = mpdBandwidth(kr.rs)
	if sl := kr.rep.SegmentList; sl != nil {
		sl.SegmentURL, sl.SegmentTimeline.S = kr.r.urls, kr.r.s
	}
	if st := kr.rep.SegmentTemplate; st != nil {
		st.SegmentTimeline.S = kr.r.s
	}
}

// mpdBandwidth is a Representation's bandwidth: the rendition's peak rate.
func mpdBandwidth(rs *renditionState) uint32 {
	peak, _ := rates(rs)
	return uint32(min(max(peak, 1), math.MaxUint32))
}

// mpdShape is what mpdDoc reads of one rendition besides its segments'
// entries and its bandwidth: while every rendition's is the same, the
// document differs only in those (and its publish time). Every field of
// renditionState that mpdDoc reads is here.
type mpdShape struct {
	runs []*mpdRun
	of   rendShape
}

// rendShape is what the manifests say of a rendition besides its
// segments: every field of renditionState but those.
type rendShape struct {
	rs                                         *renditionState
	id, name, kind, lang, label, codecs, media string
	width, height, rate, channels              int
	inits, initRanges                          int
	framerate                                  float64
	timescale                                  uint32
}

func shapeOf(rs *renditionState) rendShape {
	return rendShape{
		rs: rs, id: rs.ID, name: rs.Name, kind: rs.Kind, lang: rs.Lang, label: rs.Label, codecs: rs.Codecs, media: rs.Media,
		width: rs.Width, height: rs.Height, rate: rs.Rate, channels: rs.Channels, inits: len(rs.Inits), initRanges: len(rs.InitRanges),
		framerate: rs.Framerate, timescale: rs.Timescale,
	}
}

// mpdShapes appends each rendition's shape to b, bringing its timeline up
// to date.
func (w *Writer) mpdShapes(b []mpdShape) []mpdShape {
	for _, rs := range w.st.Renditions {
		b = append(b, mpdShape{runs: rs.timeline(), of: shapeOf(rs)})
	}
	return b
}

// same reports whether a and b are the same shape: the same fields and
// the same runs (a run's first segment is fixed; its entries move).
func (a mpdShape) same(b mpdShape) bool { return a.of == b.of && slices.Equal(a.runs, b.runs) }

// mpdDoc builds the MPD (see mpd); kept, when not nil, gets the run
// behind each SegmentList and each Representation.
func (w *Writer) mpdDoc(final bool, kept *mpdKept) *mpd.MPD {
	m := &mpd.MPD{
		XMLNs:         "urn:mpeg:dash:schema:mpd:2011",
		Profiles:      "urn:mpeg:dash:profile:isoff-live:2011",
		MinBufferTime: mpd.Seconds2DurPtr(2),
	}
	var end int64
	for _, rs := range w.st.Renditions {
		if n := len(rs.Segments); n > 0 {
			end = max(end, rs.Segments[n-1].end())
		}
	}
	if final {
		static := "static"
		m.Type = &static
		d := mpd.Duration(time.Duration(end) * time.Microsecond)
		m.MediaPresentationDuration = &d
	} else {
		dyn := "dynamic"
		m.Type = &dyn
		m.AvailabilityStartTime = dateTime(w.runWall.Add(-time.Duration(w.runStart) * time.Microsecond))
		m.PublishTime = dateTime(w.opts.Now())
		m.MinimumUpdatePeriod = mpd.Seconds2DurPtrFloat64(w.opts.SegmentDuration.Seconds())
		m.MaxSegmentDuration = mpd.Seconds2DurPtrFloat64(2 * w.opts.SegmentDuration.Seconds())
	}
	// Periods: the k-th run of segments without a break, in each rendition.
	var periods [][]*mpdRun // [period][rendition]
	for i, rs := range w.st.Renditions {
		for k, r := range rs.timeline() {
			for len(periods) <= k {
				periods = append(periods, make([]*mpdRun, len(w.st.Renditions)))
			}
			periods[k][i] = r
		}
	}
	for k, runs := range periods {
		start := int64(math.MaxInt64)
		for _, r := range runs {
			if r != nil {
				start = min(start, r.first.Start)
			}
		}
		p := &mpd.Period{Id: "p" + strconv.Itoa(k)}
		ps := mpd.Duration(time.Duration(start) * time.Microsecond)
		p.Start = &ps
		sets := map[string]*mpd.AdaptationSetType{}
		for i, r := range runs {
			if r == nil {
				continue
			}
			rs := w.st.Renditions[i]
			key := rs.Kind + "/" + rs.Codecs
			if rs.Kind == "audio" || rs.Kind == "text" {
				key += "/" + rs.ID // each audio or text rendition is a choice, not a switch
			}
			as := sets[key]
			if as == nil {
				id := uint32(len(p.AdaptationSets))
				as = &mpd.AdaptationSetType{Id: &id, SegmentAlignment: true}
				as.ContentType = mpd.RFC6838ContentTypeType(rs.Kind)
				as.MimeType = rs.Kind + "/mp4"
				as.StartWithSAP = 1
				switch rs.Kind {
				case "audio":
					as.Labels = []*mpd.LabelType{{Value: rs.Name}}
				case "text":
					// The WebVTT segments of the HLS subtitle playlist, as
					// they are: plain text/vtt segments on the package
					// timeline, which dash.js reads as it reads the media.
					as.MimeType, as.StartWithSAP = "text/vtt", 0
					as.Labels = []*mpd.LabelType{{Value: renditionName(rs)}}
					as.Roles = []*mpd.DescriptorType{{SchemeIdUri: "urn:mpeg:dash:role:2011", Value: "subtitle"}}
				}
				if rs.Kind != "video" && language(rs.Lang) != "" {
					as.Lang = language(rs.Lang)
				}
				sets[key] = as
				p.AdaptationSets = append(p.AdaptationSets, as)
			}
			rep := &mpd.RepresentationType{Id: rs.ID, Bandwidth: mpdBandwidth(rs)}
			if kept != nil {
				kept.reps = append(kept.reps, mpdRep{rs, r, rep})
			}
			if rs.Kind != "text" {
				rep.Codecs = rs.Codecs // text/vtt needs none ("wvtt" is WebVTT in MP4)
			}
			if rs.Kind == "video" {
				rep.Width, rep.Height = uint32(rs.Width), uint32(rs.Height)
				if rs.Framerate > 0 {
					rep.FrameRate = mpd.FrameRateType(strconv.FormatFloat(math.Round(rs.Framerate*1000)/1000, 'f', -1, 64))
				}
			} else if rs.Rate > 0 {
				sr := mpd.UIntVectorType(strconv.Itoa(rs.Rate))
				rep.AudioSamplingRate = &sr
				if rs.Channels > 0 {
					rep.AudioChannelConfigurations = []*mpd.DescriptorType{{SchemeIdUri: "urn:mpeg:dash:23003:3:audio_channel_configuration:2011", Value: strconv.Itoa(rs.Channels)}}
				}
			}
			ts := rs.Timescale
			if ts == 0 {
				ts = 1000
			}
			if rs.Media != "" {
				// One media file: its init segment and segments by byte
				// range (a SegmentList of mediaRanges, with the timeline).
				sl := &mpd.SegmentListType{SegmentURL: r.urls}
				ir := rs.InitRanges[r.first.Init]
				sl.Initialization = &mpd.URLType{SourceURL: mpd.AnyURI(rs.Media), Range: dashRange(ir.Off, ir.Len)}
				// No startNumber: the list numbers nothing, and ffmpeg
				// would take it as the index of the list's first entry.
				sl.Timescale = &ts
				pto := uint64(max(ticksOf(start, ts), 0))
				sl.PresentationTimeOffset = &pto
				sl.SegmentTimeline = &mpd.SegmentTimelineType{S: r.s}
				rep.SegmentList = sl
				if kept != nil {
					kept.lists[sl] = r
				}
				as.Representations = append(as.Representations, rep)
				continue
			}
			st := &mpd.SegmentTemplateType{Media: "$RepresentationID$-$Number%05d$.m4s"}
			if rs.Kind == "text" {
				st.Media = "$RepresentationID$-$Number%05d$.vtt"
			} else {
				st.Initialization = rs.Inits[r.first.Init]
			}
			startNum := uint32(r.first.Num)
			st.StartNumber = &startNum
			st.Timescale = &ts
			pto := uint64(max(ticksOf(start, ts), 0))
			st.PresentationTimeOffset = &pto
			tl := &mpd.SegmentTimelineType{S: r.s}
			st.SegmentTimeline = tl
			rep.SegmentTemplate = st
			as.Representations = append(as.Representations, rep)
		}
		m.Periods = append(m.Periods, p)
	}
	return m
}

// dashRange is a DASH byte range (RFC 7233: first-last, inclusive).
func dashRange(off, n int64) string {
	return strconv.FormatInt(off, 10) + "-" + strconv.FormatInt(off+n-1, 10)
}

// dateTime formats t as an xs:dateTime in UTC.
func dateTime(t time.Time) mpd.DateTime {
	return mpd.DateTime(t.UTC().Format("2006-01-02T15:04:05.000Z"))
}

// mpdRun is one run of a rendition's segments without a break of the
// timeline (a Period's Representation): its first segment and its
// SegmentTimeline entries.
type mpdRun struct {
	first segmentState
	s     []*mpd.S
	urls  []*mpd.SegmentURLType // a ranged rendition's segments (SegmentList)
	// A ranged rendition's S and SegmentURL elements, rendered once each
	// as marshalMPD writes them: the list grows by a segment a boundary,
	// and rendering it all again at each made a boundary cost more the
	// longer the recording.
	sXML, urlXML []byte
	prevEnd      int64 // ticks where the last entry ends
}

// timeline returns the rendition's runs (see mpdRun), adding to what it
// made at the boundary before only the segments since: a boundary's MPD
// costs no more to build at the thousandth segment than at the first
// (beyond writing the entries out).
func (rs *renditionState) timeline() []*mpdRun {
	c := &rs.out
	ts := rs.Timescale
	if ts == 0 {
		ts = 1000
	}
	if c.tlSegs > len(rs.Segments) || c.tlScale != ts {
		c.runs, c.tlSegs, c.tlScale = nil, 0, ts
	}
	for j := c.tlSegs; j < len(rs.Segments); j++ {
		s := rs.Segments[j]
		if j == 0 || s.Disc {
			c.runs = append(c.runs, &mpdRun{first: s, prevEnd: -1})
		}
		r := c.runs[len(c.runs)-1]
		t0 := ticksOf(s.Start, ts)
		d := uint64(max(ticksOf(s.end(), ts)-ticksOf(s.Start, ts), 1))
		// A ranged rendition gets an S per segment: dash.js takes the
		// SegmentURL of the S element, not of the segment, a repeat
		// (r) counting once.
		if n := len(r.s); n > 0 && t0 == r.prevEnd && r.s[n-1].D == d && rs.Media == "" {
			r.s[n-1].R++
		} else {
			t := uint64(max(t0, 0))
			r.s = append(r.s, &mpd.S{T: &t, D: d})
		}
		r.prevEnd = t0 + int64(d)
		if rs.Media != "" {
			u := &mpd.SegmentURLType{Media: mpd.AnyURI(s.URI), MediaRange: mpd.SingleRFC7233RangeType(dashRange(s.Off, s.Bytes))}
			r.urls = append(r.urls, u)
			r.sXML = appendS(r.sXML, r.s[len(r.s)-1])
			r.urlXML = appendSegmentURL(r.urlXML, u)
		}
	}
	c.tlSegs = len(rs.Segments)
	return c.runs
}
