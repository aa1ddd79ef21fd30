package mp4

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	amp4 "github.com/abema/go-mp4"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4/seekablebuffer"
)

// movieTimescale is the timescale of mvhd, tkhd and elst.
const movieTimescale = 1000

// builder appends boxes to a byte slice: containers by start/end (the size
// is patched at end), leaf boxes from go-mp4 structs or raw bytes.
type builder struct{ b []byte }

func (b *builder) Write(p []byte) (int, error) { b.b = append(b.b, p...); return len(p), nil }

func (b *builder) start(typ string) int {
	pos := len(b.b)
	b.b = append(b.b, 0, 0, 0, 0)
	b.b = append(b.b, typ...)
	return pos
}

func (b *builder) end(pos int) { binary.BigEndian.PutUint32(b.b[pos:], uint32(len(b.b)-pos)) }

// box appends a go-mp4 box with its header.
func (b *builder) box(box amp4.IImmutableBox) error {
	pos := b.start(box.GetType().String())
	if _, err := amp4.Marshal(b, box, amp4.Context{}); err != nil {
		return fmt.Errorf("mp4: marshal %s: %w", box.GetType(), err)
	}
	b.end(pos)
	return nil
}

func (b *builder) u32(v uint32) { b.b = binary.BigEndian.AppendUint32(b.b, v) }
func (b *builder) u64(v uint64) { b.b = binary.BigEndian.AppendUint64(b.b, v) }

// fullBox starts a full box (version and flags after the header).
func (b *builder) fullBox(typ string, version byte, flags uint32) int {
	pos := b.start(typ)
	b.u32(uint32(version)<<24 | flags&0xffffff)
	return pos
}

// ftyp returns the file type box. Fragments use iso6 (tfdt, trun v1);
// the finished file iso4 (signed composition offsets in ctts v1).
func ftyp(finished bool) []byte {
	brand := [4]byte{'i', 's', 'o', '6'}
	if finished {
		brand = [4]byte{'i', 's', 'o', '4'}
	}
	var b builder
	_ = b.box(&amp4.Ftyp{
		MajorBrand:   [4]byte{'i', 's', 'o', 'm'},
		MinorVersion: 0x200,
		CompatibleBrands: []amp4.CompatibleBrandElem{
			{CompatibleBrand: [4]byte{'i', 's', 'o', 'm'}},
			{CompatibleBrand: brand},
			{CompatibleBrand: [4]byte{'m', 'p', '4', '1'}},
		},
	})
	return b.b
}

// trakParts are the boxes of one track of the init moov that the finished
// moov reuses: the sample entry that mediacommon built, and what goes with it.
type trakParts struct {
	tkhd                  *amp4.Tkhd
	hdlr, mhd, dinf, stsd []byte // raw boxes
}

// initMoov marshals the moov of the fragmented form with mediacommon (one
// trak per track, mvex with a trex each) and returns it without
// mediacommon's ftyp, with the parts of each trak the finished moov needs.
func initMoov(all []*track) ([]byte, []trakParts, error) {
	// Text tracks are not mediacommon's: their boxes are made here, and
	// the parts merged back in track order at the end.
	var tracks []*track
	for _, t := range all {
		if !t.isText() {
			tracks = append(tracks, t)
		}
	}
	if len(tracks) < len(all) {
		var media []trakParts
		var moov []byte
		if len(tracks) > 0 {
			var err error
			if moov, media, err = initMoov(tracks); err != nil {
				return nil, nil, err
			}
		}
		parts := make([]trakParts, 0, len(all))
		for _, t := range all {
			if !t.isText() {
				parts, media = append(parts, media[0]), media[1:]
				continue
			}
			p, err := textParts(t)
			if err != nil {
				return nil, nil, err
			}
			parts = append(parts, p)
		}
		return moov, parts, nil
	}
	var init fmp4.Init
	for _, t := range tracks {
		init.Tracks = append(init.Tracks, &fmp4.InitTrack{ID: int(t.mp4ID), TimeScale: t.timescale, Codec: t.codec})
	}
	var buf seekablebuffer.Buffer
	if err := init.Marshal(&buf); err != nil {
		return nil, nil, err
	}
	raw := buf.Bytes()
	var moov []byte
	var parts []trakParts
	_, err := amp4.ReadBoxStructure(bytes.NewReader(raw), func(h *amp4.ReadHandle) (any, error) {
		bi := h.BoxInfo
		box := raw[bi.Offset : bi.Offset+bi.Size]
		switch bi.Type.String() {
		case "moov":
			moov = box
			return h.Expand()
		case "trak":
			parts = append(parts, trakParts{})
			return h.Expand()
		case "mdia", "minf", "stbl":
			return h.Expand()
		}
		if len(parts) == 0 || len(h.Path) < 2 {
			return nil, nil
		}
		p := &parts[len(parts)-1]
		switch bi.Type.String() {
		case "tkhd":
			b, _, err := h.ReadPayload()
			if err != nil {
				return nil, err
			}
			p.tkhd = b.(*amp4.Tkhd)
		case "hdlr":
			p.hdlr = box
		case "vmhd", "smhd":
			p.mhd = box
		case "dinf":
			p.dinf = box
		case "stsd":
			p.stsd = box
		}
		return nil, nil
	})
	if err != nil {
		return nil, nil, err
	}
	if moov == nil || len(parts) != len(tracks) {
		return nil, nil, fmt.Errorf("mp4: mediacommon's init has %d traks for %d tracks", len(parts), len(tracks))
	}
	for i, p := range parts {
		if p.tkhd == nil || p.hdlr == nil || p.mhd == nil || p.dinf == nil || p.stsd == nil {
			return nil, nil, fmt.Errorf("mp4: mediacommon's trak %d lacks a box the finished file needs", i+1)
		}
	}
	return bytes.Clone(moov), parts, nil
}

// Sample flags of trun (ISO/IEC 14496-12 8.8.3.1): a sync sample depends
// on no other; a non-sync sample depends on others and is marked
// sample_is_non_sync_sample.
const (
	syncSampleFlags    = 0x02000000
	nonSyncSampleFlags = 0x01010000
)

// appendMoof appends the moof of one fragment: an mfhd and a traf (tfhd
// with default-base-is-moof, tfdt v1, trun v1) for every run. Written by
// hand: mediacommon's fmp4.Part needs an io.WriteSeeker and copies every
// payload into its own mdat buffer, and go-mp4 encodes trun entries by
// reflection; this layout is fixed and written once per fragment.
func appendMoof(dst []byte, seq uint32, runs []*track) []byte {
	var b builder
	b.b = dst
	moof := b.start("moof")
	mfhd := b.fullBox("mfhd", 0, 0)
	b.u32(seq)
	b.end(mfhd)
	type patch struct{ pos, data int }
	dataPos := 0
	var patches []patch
	for _, t := range runs {
		n := t.runLen
		samples := t.pend[:n]
		// Sample flags: the default in tfhd when every sample after the
		// first shares them (audio; video cut at its keyframes), the first
		// sample's in trun when it differs; per sample otherwise.
		flagsOf := func(s sample) uint32 {
			if s.sync {
				return syncSampleFlags
			}
			return nonSyncSampleFlags
		}
		common := true
		for _, s := range samples[min(1, n):] {
			if flagsOf(s) != flagsOf(samples[min(1, n-1)]) {
				common = false
				break
			}
		}
		def := flagsOf(samples[min(1, n-1)])
		traf := b.start("traf")
		tfhdFlags := uint32(0x020000) // default-base-is-moof
		if common {
			tfhdFlags |= 0x000020 // default-sample-flags-present
		}
		tfhd := b.fullBox("tfhd", 0, tfhdFlags)
		b.u32(t.mp4ID)
		if common {
			b.u32(def)
		}
		b.end(tfhd)
		tfdt := b.fullBox("tfdt", 1, 0)
		b.u64(uint64(samples[0].dts))
		b.end(tfdt)
		flags := uint32(0x000001 | 0x000100 | 0x000200) // data offset, duration, size
		first := common && flagsOf(samples[0]) != def
		switch {
		case !common:
			flags |= 0x000400 // sample-flags-present
		case first:
			flags |= 0x000004 // first-sample-flags-present
		}
		for _, s := range samples {
			if s.cto != 0 {
				flags |= 0x000800
				break
			}
		}
		trun := b.fullBox("trun", 1, flags)
		b.u32(uint32(n))
		patches = append(patches, patch{len(b.b), dataPos})
		b.u32(0) // data_offset, patched below
		if first {
			b.u32(flagsOf(samples[0]))
		}
		for _, s := range samples {
			b.u32(s.dur)
			b.u32(s.size)
			if !common {
				b.u32(flagsOf(s))
			}
			if flags&0x000800 != 0 {
				b.u32(uint32(s.cto))
			}
			dataPos += int(s.size)
		}
		b.end(trun)
		b.end(traf)
	}
	b.end(moof)
	moofSize := len(b.b) - moof
	for _, p := range patches {
		binary.BigEndian.PutUint32(b.b[p.pos:], uint32(moofSize+8+p.data))
	}
	b.b = binary.BigEndian.AppendUint32(b.b, uint32(8+dataPos))
	b.b = append(b.b, "mdat"...)
	return b.b
}

// moov builds the moov of either form: mvhd, and per track tkhd, an edit
// list, mdhd, the handler, media header, data reference and sample entry
// boxes mediacommon made, and the sample table: empty with an mvex for the
// fragments, complete for the finished file. The chunk offsets of the
// finished file are left 0, for setOffsets to fill in once the layout
// (which depends on the moov's size) is known; co64 asks for 64-bit ones.
func (w *Writer) moov(finished bool, co64 bool) ([]byte, error) {
	var b builder
	if finished {
		b.b = make([]byte, 0, w.moovSizeHint())
	}
	moov := b.start("moov")
	var movieDur uint64
	start := int64(math.MaxInt64) // µs, the earliest track start
	for _, t := range w.live {
		if len(t.tab.sizes) > 0 {
			start = min(start, t.firstPTS)
		}
	}
	edits := make([][]amp4.ElstEntry, len(w.live))
	for i, t := range w.live {
		if finished {
			edits[i] = t.finishedEdits(start)
			var d uint64
			for _, e := range edits[i] {
				d += e.SegmentDurationV1
			}
			if len(edits[i]) == 1 && edits[i][0].MediaTimeV1 == 0 {
				edits[i] = nil // the media starts with the file: no edit needed
			}
			t.movieDur = d
			movieDur = max(movieDur, d)
		} else if t.delay > 0 {
			edits[i] = []amp4.ElstEntry{{MediaTimeV1: t.delay, MediaRateInteger: 1}}
		}
	}
	if err := b.box(&amp4.Mvhd{
		FullBox:            amp4.FullBox{Version: 1},
		CreationTimeV1:     w.created,
		ModificationTimeV1: w.created,
		Timescale:          movieTimescale,
		DurationV1:         movieDur,
		Rate:               0x10000,
		Volume:             0x100,
		Matrix:             [9]int32{0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000},
		NextTrackID:        uint32(len(w.live) + 1),
	}); err != nil {
		return nil, err
	}
	for i, t := range w.live {
		p := w.parts[i]
		tab := &t.tab
		trak := b.start("trak")
		tkhd := *p.tkhd
		tkhd.Version = 1
		tkhd.CreationTimeV1, tkhd.ModificationTimeV1 = w.created, w.created
		tkhd.DurationV0, tkhd.DurationV1 = 0, t.movieDur
		if !finished {
			tkhd.DurationV1 = 0
		}
		if err := b.box(&tkhd); err != nil {
			return nil, err
		}
		if len(edits[i]) > 0 {
			edts := b.start("edts")
			if err := b.box(&amp4.Elst{FullBox: amp4.FullBox{Version: 1}, EntryCount: uint32(len(edits[i])), Entries: edits[i]}); err != nil {
				return nil, err
			}
			b.end(edts)
		}
		mdia := b.start("mdia")
		mdhd := &amp4.Mdhd{FullBox: amp4.FullBox{Version: 1}, CreationTimeV1: w.created, ModificationTimeV1: w.created, Timescale: t.timescale, Language: t.mdhdLanguage()}
		if finished {
			mdhd.DurationV1 = uint64(tab.mediaDur)
		}
		if err := b.box(mdhd); err != nil {
			return nil, err
		}
		b.b = append(b.b, p.hdlr...)
		minf := b.start("minf")
		b.b = append(b.b, p.mhd...)
		b.b = append(b.b, p.dinf...)
		stbl := b.start("stbl")
		b.b = append(b.b, p.stsd...)
		if finished {
			t.offsetsAt = tab.appendTables(&b, co64)
		} else {
			var empty table
			empty.appendTables(&b, false)
		}
		b.end(stbl)
		b.end(minf)
		b.end(mdia)
		b.end(trak)
	}
	if !finished {
		mvex := b.start("mvex")
		for _, t := range w.live {
			trex := b.fullBox("trex", 0, 0)
			b.u32(t.mp4ID)
			b.u32(1) // default_sample_description_index
			b.u32(0)
			b.u32(0)
			b.u32(0)
			b.end(trex)
		}
		b.end(mvex)
	} else if start != math.MaxInt64 {
		w.appendChapters(&b, start)
	}
	b.end(moov)
	return b.b, nil
}

// finishedEdits is the edit list of a track in the finished file, where
// sample times start at 0 with the track's first sample: it maps the
// track's presentation onto the file's timeline, which starts at start
// (µs). A track that starts later gets an empty edit first; one whose first
// sample is presented after its decode time (the decode delay) skips that
// part of its media.
func (t *track) finishedEdits(start int64) []amp4.ElstEntry {
	tab := &t.tab
	if len(tab.sizes) == 0 {
		return nil
	}
	// The media time of the file's start, in ticks: first presentation
	// time on the media timeline, minus how far the track starts after
	// the file.
	skip := t.delay - tab.firstDTS + ticks(start, t.timescale)
	// Where the presentation ends on the media timeline: the latest
	// presentation time plus a frame.
	end := max(t.maxPTS+t.lastEnd()-tab.firstDTS, tab.mediaDur)
	var out []amp4.ElstEntry
	if skip < 0 {
		out = append(out, amp4.ElstEntry{SegmentDurationV1: toMovie(-skip, t.timescale), MediaTimeV1: -1, MediaRateInteger: 1})
		skip = 0
	}
	return append(out, amp4.ElstEntry{SegmentDurationV1: toMovie(end-skip, t.timescale), MediaTimeV1: skip, MediaRateInteger: 1})
}

// toMovie converts ticks of timescale ts to the movie timescale, rounded.
func toMovie(ticks int64, ts uint32) uint64 {
	if ticks <= 0 {
		return 0
	}
	return uint64((ticks*movieTimescale + int64(ts)/2) / int64(ts))
}

// moovSizeHint is a little more than the finished moov's size, so that
// building it does not grow its buffer step by step.
func (w *Writer) moovSizeHint() int {
	n := 4096
	for i, t := range w.live {
		tab := &t.tab
		n += 1024 + len(w.parts[i].stsd) + 4*len(tab.sizes) + 8*(len(tab.stts)+len(tab.ctts)) + 4*len(tab.sync) + 20*len(tab.chunks)
	}
	return n
}

// setOffsets writes the chunk offsets into a finished moov built by moov:
// place says where a chunk lies in the file.
func (w *Writer) setOffsets(moov []byte, co64 bool, place func(chunk) int64) {
	for _, t := range w.live {
		at := t.offsetsAt
		for _, c := range t.tab.chunks {
			if co64 {
				binary.BigEndian.PutUint64(moov[at:], uint64(place(c)))
				at += 8
			} else {
				binary.BigEndian.PutUint32(moov[at:], uint32(min(place(c), math.MaxUint32)))
				at += 4
			}
		}
	}
}

// appendTables appends stts, ctts, stss, stsc, stsz and stco/co64, whose
// entries it leaves 0: it returns where in b they start. Written by hand:
// they are flat big-endian arrays, one to three words per sample or chunk,
// and go-mp4 would need them as slices of structs, encoded by reflection (a
// multi-hour recording has millions of entries).
func (tab *table) appendTables(b *builder, co64 bool) (offsetsAt int) {
	stts := b.fullBox("stts", 0, 0)
	b.u32(uint32(len(tab.stts)))
	for _, r := range tab.stts {
		b.u32(r.count)
		b.u32(r.delta)
	}
	b.end(stts)
	if tab.anyCTO {
		ctts := b.fullBox("ctts", 1, 0)
		b.u32(uint32(len(tab.ctts)))
		for _, r := range tab.ctts {
			b.u32(r.count)
			b.u32(uint32(r.offset))
		}
		b.end(ctts)
	}
	if tab.nonSync > 0 {
		stss := b.fullBox("stss", 0, 0)
		b.u32(uint32(len(tab.sync)))
		for _, n := range tab.sync {
			b.u32(n)
		}
		b.end(stss)
	}
	stsc := b.fullBox("stsc", 0, 0)
	countPos := len(b.b)
	b.u32(0)
	entries, last := 0, uint32(0)
	for i, c := range tab.chunks {
		if i == 0 || c.n != last {
			b.u32(uint32(i + 1))
			b.u32(c.n)
			b.u32(1)
			entries++
			last = c.n
		}
	}
	binary.BigEndian.PutUint32(b.b[countPos:], uint32(entries))
	b.end(stsc)
	stsz := b.fullBox("stsz", 0, 0)
	b.u32(0)
	b.u32(uint32(len(tab.sizes)))
	for _, s := range tab.sizes {
		b.u32(s)
	}
	b.end(stsz)
	typ, width := "stco", 4
	if co64 {
		typ, width = "co64", 8
	}
	co := b.fullBox(typ, 0, 0)
	b.u32(uint32(len(tab.chunks)))
	offsetsAt = len(b.b)
	b.b = append(b.b, make([]byte, width*len(tab.chunks))...)
	b.end(co)
	return offsetsAt
}
