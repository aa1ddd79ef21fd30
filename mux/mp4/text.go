package mp4

import (
	"encoding/binary"

	"golang.org/x/text/language"

	amp4 "github.com/abema/go-mp4"

	"github.com/moq-export/moq-export/internal/format/webvtt"
	"github.com/moq-export/moq-export/mux"
)

// Text tracks (subtitles) are written as 3GPP timed text, the 'tx3g'
// sample entry (3GPP TS 26.245, ISO/IEC 14496-17 section 7), under a
// 'sbtl' handler: each cue is one sample holding its text (a 16-bit length,
// then UTF-8), and the time between two cues is an empty sample, since an
// MP4 track's samples follow each other without gaps. ffmpeg reads it as
// mov_text and converts it to WebVTT (`-map 0:s -f webvtt`); QuickTime,
// Safari and VLC show it.
//
// Why not 'wvtt' (ISO/IEC 14496-30, WebVTT in ISOBMFF): ffmpeg (5.1 and 9)
// reads a 'wvtt' track as a data stream of unknown codec, so no tool the
// project checks with can read the cues back. Cue settings (position,
// alignment), identifiers and markup (<b>, <v Name>) are not carried; the
// text is WebVTT's with its character references resolved.

// textTimescale is a text track's timescale: cue times are milliseconds.
const textTimescale = 1000

// maxTextSample is the longest cue text a tx3g sample holds (its 16-bit
// length); a longer one is cut there.
const maxTextSample = 0xffff

// textSample returns the tx3g sample of a cue in mux's text frame layout
// (webvtt.Cue.AppendBlock).
func textSample(payload []byte) []byte {
	text := webvtt.Plain(webvtt.ParseBlock(payload).Text)
	if len(text) > maxTextSample {
		text = text[:maxTextSample]
	}
	b := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(text)), uint16(len(text)))
	return append(b, text...)
}

// emptyTextSample is the sample of the time between two cues.
var emptyTextSample = []byte{0, 0}

// textParts builds the boxes of a text track's trak that mediacommon does
// not make: tkhd, the 'sbtl' handler, the null media header, a
// self-contained data reference and the tx3g sample entry.
func textParts(t *track) (trakParts, error) {
	tkhd := &amp4.Tkhd{FullBox: amp4.FullBox{Flags: [3]byte{0, 0, 3}}, TrackID: t.mp4ID,
		Matrix: [9]int32{0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000}}
	var b builder
	hdlr := b.fullBox("hdlr", 0, 0)
	b.u32(0)
	b.b = append(b.b, "sbtl"...)
	b.b = append(b.b, make([]byte, 12)...)
	name := t.Label
	if name == "" {
		name = "Subtitles"
	}
	b.b = append(append(b.b, name...), 0)
	b.end(hdlr)
	hdlrBox := b.b[hdlr:]

	var m builder
	nmhd := m.fullBox("nmhd", 0, 0)
	m.end(nmhd)

	var d builder
	dinf := d.start("dinf")
	dref := d.fullBox("dref", 0, 0)
	d.u32(1)
	url := d.fullBox("url ", 0, 1) // the media is in this file
	d.end(url)
	d.end(dref)
	d.end(dinf)

	var s builder
	stsd := s.fullBox("stsd", 0, 0)
	s.u32(1)
	entry := s.start("tx3g")
	s.b = append(s.b, 0, 0, 0, 0, 0, 0) // reserved
	s.b = binary.BigEndian.AppendUint16(s.b, 1)
	s.u32(0)                                  // displayFlags
	s.b = append(s.b, 1, 0xff)                // centred, at the bottom
	s.b = append(s.b, 0, 0, 0, 0)             // background: transparent
	s.b = append(s.b, 0, 0, 0, 0, 0, 0, 0, 0) // default text box: the whole frame
	// Default style: font 1, plain, 18 px, opaque white.
	s.b = append(s.b, 0, 0, 0, 0, 0, 1, 0, 18, 0xff, 0xff, 0xff, 0xff)
	ftab := s.start("ftab")
	s.b = append(s.b, 0, 1, 0, 1, 10)
	s.b = append(s.b, "Sans-Serif"...)
	s.end(ftab)
	s.end(entry)
	s.end(stsd)
	return trakParts{tkhd: tkhd, hdlr: hdlrBox, mhd: m.b, dinf: d.b, stsd: s.b}, nil
}

// isText reports whether t is a text track (its samples are tx3g).
func (t *track) isText() bool { return t.Kind == mux.Text }

// ready reports whether t's sample entry can be written: a text track
// always, a media track once mediacommon has its codec.
func (t *track) ready() bool { return t.codec != nil || t.isText() }

// writeCue adds one cue of text track t: an empty sample first when it
// begins after the previous cue ended, then its text, which lasts its
// duration unless the next cue begins sooner. A discontinuity leaves no
// empty sample: the fragment's decode time carries the jump.
func (w *Writer) writeCue(t *track, f mux.Frame) error {
	disc := t.discPending
	t.discPending = false
	if t.cueSet && f.Timestamp < t.lastPTSUs {
		// Older than the cue before it (a late one): MP4's samples
		// follow each other, so it cannot go before.
		w.drop(t, "a cue older than the one written before it")
		return nil
	}
	if !t.begun && w.started && f.Timestamp > w.firstUs {
		// The track starts with the file: nothing shows until its first
		// cue (see textFromStart).
		if err := w.addText(t, w.firstUs, false, emptyTextSample, 0); err != nil {
			return err
		}
	}
	if t.cueSet && f.Timestamp > t.cueEnd && !disc {
		if err := w.addText(t, t.cueEnd, false, emptyTextSample, 0); err != nil {
			return err
		}
	}
	w.stats.Frames++
	w.stats.Bytes += int64(len(f.Payload))
	end := f.Timestamp + max(f.Duration, 1000) // at least a millisecond
	t.cueEnd, t.cueSet = end, true
	return w.addText(t, f.Timestamp, disc, textSample(f.Payload), end)
}

// addText adds one sample of text track t at ts (µs), ending at end (0:
// where the next sample begins).
func (w *Writer) addText(t *track, ts int64, disc bool, sample []byte, end int64) error {
	if w.started {
		if err := w.addSample(t, ts, ts, true, disc, sample); err != nil {
			return err
		}
		if end != 0 {
			t.setEnd(end)
		}
		return nil
	}
	w.pending.Add(pendingFrame{t: t, pts: ts, dts: ts, key: true, disc: disc, end: end, payload: sample}, ts, len(sample))
	return w.maybeStart()
}

// mdhdLanguage is the ISO 639-2 code of the track's language in mdhd: a
// text track's from its BCP 47 tag, "und" otherwise or when unknown.
func (t *track) mdhdLanguage() [3]byte {
	und := [3]byte{'u', 'n', 'd'}
	if !t.isText() || t.Language == "" {
		return und
	}
	tag, err := language.Parse(t.Language)
	if err != nil {
		return und
	}
	base, conf := tag.Base()
	iso := base.ISO3()
	if conf == language.No || len(iso) != 3 {
		return und
	}
	return [3]byte{iso[0], iso[1], iso[2]}
}

// textFromStart starts the text tracks that have frames among pending, the
// frames the header waited for, with an empty sample from the file's start
// to their first cue, as writeCue does for a text track whose first cue
// comes later. A text track that started with an empty edit instead ends,
// in ffmpeg, that edit's length early: it clips the last cue by it.
func (w *Writer) textFromStart(pending []pendingFrame) {
	seen := map[*track]bool{}
	for _, p := range pending {
		t := p.t
		if !t.isText() || t.disabled || seen[t] {
			continue
		}
		seen[t] = true
		if p.pts > w.firstUs {
			_ = w.addSample(t, w.firstUs, w.firstUs, true, false, emptyTextSample)
		}
	}
}
