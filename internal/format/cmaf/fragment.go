package cmaf

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// Sample is one sample of a fragment.
type Sample struct {
	// Timestamp is the presentation time in microseconds.
	Timestamp int64
	// Keyframe is true when a decoder can start at the sample.
	Keyframe bool
	// Payload is the sample's bytes; it aliases the fragment.
	Payload []byte
}

// tfhd flags.
const (
	tfhdBaseDataOffset    = 0x000001
	tfhdSampleDescIndex   = 0x000002
	tfhdDefaultDuration   = 0x000008
	tfhdDefaultSize       = 0x000010
	tfhdDefaultFlags      = 0x000020
	tfhdDefaultBaseIsMoof = 0x020000
)

// trun flags.
const (
	trunDataOffset       = 0x000001
	trunFirstSampleFlags = 0x000004
	trunDuration         = 0x000100
	trunSize             = 0x000200
	trunFlags            = 0x000400
	trunCTS              = 0x000800
)

// sampleIsNonSync is the sample_is_non_sync_sample bit of the sample flags.
const sampleIsNonSync = 1 << 16

// maxTicks bounds decode times: beyond it the microsecond conversion and
// the composition offset could overflow an int64.
const maxTicks = 1 << 62

// Demuxer splits the fragments of one track into samples. It is not safe
// for concurrent use.
type Demuxer struct {
	init    *Init
	samples []Sample
	// next is the decode time after the last sample, for a fragment
	// without tfdt; valid when haveNext.
	next     uint64
	haveNext bool
}

// NewDemuxer returns a demuxer for the fragments of the track init
// describes.
func NewDemuxer(init *Init) *Demuxer { return &Demuxer{init: init} }

// Init returns the init the demuxer reads fragments with.
func (d *Demuxer) Init() *Init { return d.init }

// box is one ISO BMFF box inside a byte slice: its type, where it starts
// and where its payload starts and ends.
type box struct {
	typ              uint32
	start, body, end int
}

// nextBox reads the box header at b[off:]. A size of 0 extends the box to
// the end of b.
func nextBox(b []byte, off int) (box, error) {
	if len(b)-off < 8 {
		return box{}, fmt.Errorf("%w: box header truncated at %d", ErrMalformed, off)
	}
	size := uint64(binary.BigEndian.Uint32(b[off:]))
	bx := box{typ: binary.BigEndian.Uint32(b[off+4:]), start: off, body: off + 8}
	switch size {
	case 0:
		size = uint64(len(b) - off)
	case 1:
		if len(b)-off < 16 {
			return box{}, fmt.Errorf("%w: box header truncated at %d", ErrMalformed, off)
		}
		size = binary.BigEndian.Uint64(b[off+8:])
		bx.body = off + 16
	}
	if size < uint64(bx.body-off) || size > uint64(len(b)-off) {
		return box{}, fmt.Errorf("%w: %s box of %d bytes at %d in %d", ErrMalformed, fourcc(bx.typ), size, off, len(b))
	}
	bx.end = off + int(size)
	return bx, nil
}

func fourcc(t uint32) string {
	b := [4]byte{byte(t >> 24), byte(t >> 16), byte(t >> 8), byte(t)}
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	return string(b[:])
}

func typ(s string) uint32 { return binary.BigEndian.Uint32([]byte(s)) }

var (
	typMoof = typ("moof")
	typMdat = typ("mdat")
	typTraf = typ("traf")
	typTfhd = typ("tfhd")
	typTfdt = typ("tfdt")
	typTrun = typ("trun")
)

// Fragment returns the samples of one moq frame of the track: one or more
// moof+mdat pairs (other top-level boxes, such as styp, sidx or prft, are
// skipped). The result and the payloads it points into are valid until the
// next call; the payloads alias frame. A fragment whose moof carries no
// track fragment of the init's track is an error, unless it has exactly
// one track fragment: that one is taken whatever its id (publishers that
// rewrite track ids are common).
func (d *Demuxer) Fragment(frame []byte) ([]Sample, error) {
	d.samples = d.samples[:0]
	moof := box{typ: 0, start: -1}
	for off := 0; off < len(frame); {
		bx, err := nextBox(frame, off)
		if err != nil {
			return nil, err
		}
		off = bx.end
		switch bx.typ {
		case typMoof:
			if moof.start >= 0 {
				return nil, fmt.Errorf("%w: moof without mdat", ErrMalformed)
			}
			moof = bx
		case typMdat:
			if moof.start < 0 {
				return nil, fmt.Errorf("%w: mdat without moof", ErrMalformed)
			}
			if err := d.pair(frame, moof, bx); err != nil {
				return nil, err
			}
			moof.start = -1
		}
	}
	if moof.start >= 0 {
		return nil, fmt.Errorf("%w: moof without mdat", ErrMalformed)
	}
	if len(d.samples) == 0 {
		return nil, fmt.Errorf("%w: fragment without samples", ErrMalformed)
	}
	return d.samples, nil
}

// pair reads the samples of the init's track in one moof and its mdat.
func (d *Demuxer) pair(b []byte, moof, mdat box) error {
	var trafs [2]box
	n := 0
	var mine box
	found := false
	for off := moof.body; off < moof.end; {
		bx, err := nextBox(b[:moof.end], off)
		if err != nil {
			return err
		}
		off = bx.end
		if bx.typ != typTraf {
			continue
		}
		if n < len(trafs) {
			trafs[n] = bx
		}
		n++
		id, err := trafTrackID(b, bx)
		if err != nil {
			return err
		}
		if id == d.init.TrackID && !found {
			mine, found = bx, true
		}
	}
	switch {
	case found:
	case n == 1:
		mine = trafs[0]
	case n == 0:
		return fmt.Errorf("%w: moof without traf", ErrMalformed)
	default:
		return fmt.Errorf("%w: moof holds %d track fragments, none of track %d", ErrMalformed, n, d.init.TrackID)
	}
	return d.traf(b, moof, mdat, mine)
}

// trafTrackID returns the track id of a traf's tfhd.
func trafTrackID(b []byte, traf box) (uint32, error) {
	for off := traf.body; off < traf.end; {
		bx, err := nextBox(b[:traf.end], off)
		if err != nil {
			return 0, err
		}
		off = bx.end
		if bx.typ == typTfhd {
			if bx.end-bx.body < 8 {
				return 0, fmt.Errorf("%w: tfhd of %d bytes", ErrMalformed, bx.end-bx.body)
			}
			return binary.BigEndian.Uint32(b[bx.body+4:]), nil
		}
	}
	return 0, fmt.Errorf("%w: traf without tfhd", ErrMalformed)
}

// tfhd is the part of a track fragment header the samples need.
type tfhd struct {
	base                  uint64
	hasBase, baseIsMoof   bool
	duration, size, flags uint32
}

func (d *Demuxer) parseTfhd(b []byte, bx box) (tfhd, error) {
	h := tfhd{duration: d.init.DefaultDuration, size: d.init.DefaultSize, flags: d.init.DefaultFlags}
	p := b[bx.body:bx.end]
	if len(p) < 8 {
		return h, fmt.Errorf("%w: tfhd of %d bytes", ErrMalformed, len(p))
	}
	flags := binary.BigEndian.Uint32(p) & 0xffffff
	p = p[8:]
	field := func(n int) (uint64, error) {
		if len(p) < n {
			return 0, fmt.Errorf("%w: tfhd fields truncated", ErrMalformed)
		}
		var v uint64
		if n == 8 {
			v = binary.BigEndian.Uint64(p)
		} else {
			v = uint64(binary.BigEndian.Uint32(p))
		}
		p = p[n:]
		return v, nil
	}
	var err error
	var v uint64
	if flags&tfhdBaseDataOffset != 0 {
		if h.base, err = field(8); err != nil {
			return h, err
		}
		h.hasBase = true
	}
	if flags&tfhdSampleDescIndex != 0 {
		if _, err = field(4); err != nil {
			return h, err
		}
	}
	if flags&tfhdDefaultDuration != 0 {
		if v, err = field(4); err != nil {
			return h, err
		}
		h.duration = uint32(v)
	}
	if flags&tfhdDefaultSize != 0 {
		if v, err = field(4); err != nil {
			return h, err
		}
		h.size = uint32(v)
	}
	if flags&tfhdDefaultFlags != 0 {
		if v, err = field(4); err != nil {
			return h, err
		}
		h.flags = uint32(v)
	}
	h.baseIsMoof = flags&tfhdDefaultBaseIsMoof != 0
	return h, nil
}

// traf reads the samples of one track fragment.
func (d *Demuxer) traf(b []byte, moof, mdat box, traf box) error {
	var hd tfhd
	haveTfhd, haveTfdt := false, false
	var dts uint64
	for off := traf.body; off < traf.end; {
		bx, err := nextBox(b[:traf.end], off)
		if err != nil {
			return err
		}
		off = bx.end
		switch bx.typ {
		case typTfhd:
			if haveTfhd {
				return fmt.Errorf("%w: traf with two tfhd", ErrMalformed)
			}
			if hd, err = d.parseTfhd(b, bx); err != nil {
				return err
			}
			haveTfhd = true
		case typTfdt:
			p := b[bx.body:bx.end]
			switch {
			case len(p) < 4:
				return fmt.Errorf("%w: tfdt of %d bytes", ErrMalformed, len(p))
			case len(p) >= 12 && p[0] == 1:
				dts = binary.BigEndian.Uint64(p[4:])
			case len(p) >= 8 && p[0] == 0:
				dts = uint64(binary.BigEndian.Uint32(p[4:]))
			default:
				return fmt.Errorf("%w: tfdt of %d bytes, version %d", ErrMalformed, len(p), p[0])
			}
			haveTfdt = true
		}
	}
	if !haveTfhd {
		return fmt.Errorf("%w: traf without tfhd", ErrMalformed)
	}
	if !haveTfdt {
		if !d.haveNext {
			return fmt.Errorf("%w: first fragment without tfdt", ErrMalformed)
		}
		dts = d.next
	}
	if dts >= maxTicks {
		return fmt.Errorf("%w: decode time %d out of range", ErrMalformed, dts)
	}
	// The base of the data offsets: the explicit base_data_offset counts
	// from the start of the moq frame (the frame is the "file"); otherwise
	// the moof, which is also what a single-traf moof without
	// default-base-is-moof means.
	base := uint64(moof.start)
	if hd.hasBase {
		base = hd.base
	}
	pos := base // where the next run's data starts when it has no data_offset
	runs := 0
	for off := traf.body; off < traf.end; {
		bx, err := nextBox(b[:traf.end], off)
		if err != nil {
			return err
		}
		off = bx.end
		if bx.typ != typTrun {
			continue
		}
		runs++
		if pos, dts, err = d.trun(b, mdat, bx, hd, base, pos, runs == 1, dts); err != nil {
			return err
		}
	}
	if runs == 0 {
		return fmt.Errorf("%w: traf without trun", ErrMalformed)
	}
	d.next, d.haveNext = dts, true
	return nil
}

// trun reads one track run and appends its samples. pos is where its data
// starts when it has no data_offset; it returns where the run's data ends
// and the decode time after its last sample.
func (d *Demuxer) trun(b []byte, mdat, bx box, hd tfhd, base, pos uint64, first bool, dts uint64) (uint64, uint64, error) {
	p := b[bx.body:bx.end]
	if len(p) < 8 {
		return 0, 0, fmt.Errorf("%w: trun of %d bytes", ErrMalformed, len(p))
	}
	flags := binary.BigEndian.Uint32(p) & 0xffffff
	count := binary.BigEndian.Uint32(p[4:])
	p = p[8:]
	if flags&trunDataOffset != 0 {
		if len(p) < 4 {
			return 0, 0, fmt.Errorf("%w: trun data_offset truncated", ErrMalformed)
		}
		off := int64(int32(binary.BigEndian.Uint32(p)))
		p = p[4:]
		start := int64(base) + off
		if start < 0 {
			return 0, 0, fmt.Errorf("%w: trun data_offset %d before the frame", ErrMalformed, off)
		}
		pos = uint64(start)
	} else if first && !hd.hasBase {
		// No offset and no base: the data starts with the mdat's, as
		// every writer that leaves both out means.
		pos = uint64(mdat.body)
	}
	firstFlags, hasFirstFlags := uint32(0), false
	if flags&trunFirstSampleFlags != 0 {
		if len(p) < 4 {
			return 0, 0, fmt.Errorf("%w: trun first_sample_flags truncated", ErrMalformed)
		}
		firstFlags, hasFirstFlags = binary.BigEndian.Uint32(p), true
		p = p[4:]
	}
	entry := 4 * bits.OnesCount32(flags&(trunDuration|trunSize|trunFlags|trunCTS))
	// The count is bounded by the bytes that carry it, so nothing below
	// grows beyond the frame.
	if entry > 0 && uint64(count) > uint64(len(p)/entry) {
		return 0, 0, fmt.Errorf("%w: trun of %d samples in %d bytes", ErrMalformed, count, len(p))
	}
	dataStart, dataEnd := uint64(mdat.body), uint64(mdat.end)
	if pos < dataStart || pos > dataEnd {
		return 0, 0, fmt.Errorf("%w: sample data at %d outside the mdat [%d,%d)", ErrMalformed, pos, dataStart, dataEnd)
	}
	if entry == 0 && uint64(count) > dataEnd-pos {
		// Every sample has the default size, at least a byte.
		return 0, 0, fmt.Errorf("%w: trun of %d samples for %d bytes of data", ErrMalformed, count, dataEnd-pos)
	}
	if d.samples == nil {
		d.samples = make([]Sample, 0, min(int(count), 64))
	}
	for i := range count {
		dur, size, sflags, cts := hd.duration, hd.size, hd.flags, int64(0)
		if flags&trunDuration != 0 {
			dur = binary.BigEndian.Uint32(p)
			p = p[4:]
		}
		if flags&trunSize != 0 {
			size = binary.BigEndian.Uint32(p)
			p = p[4:]
		}
		if flags&trunFlags != 0 {
			sflags = binary.BigEndian.Uint32(p)
			p = p[4:]
		} else if i == 0 && hasFirstFlags {
			sflags = firstFlags
		}
		if flags&trunCTS != 0 {
			// Version 0 is unsigned in the standard, but writers put
			// negative offsets there too: read both as signed.
			cts = int64(int32(binary.BigEndian.Uint32(p)))
			p = p[4:]
		}
		if uint64(size) > dataEnd-pos {
			return 0, 0, fmt.Errorf("%w: sample %d of %d bytes beyond the mdat (%d left)", ErrMalformed, i, size, dataEnd-pos)
		}
		payload := b[pos : pos+uint64(size) : pos+uint64(size)]
		pos += uint64(size)
		pts := int64(dts) + cts
		us, ok := rescale(pts, d.init.Timescale)
		if !ok {
			return 0, 0, fmt.Errorf("%w: sample time %d at timescale %d", ErrMalformed, pts, d.init.Timescale)
		}
		dts += uint64(dur)
		if dts >= maxTicks {
			return 0, 0, fmt.Errorf("%w: decode time %d out of range", ErrMalformed, dts)
		}
		if size == 0 {
			continue // no payload: nothing to deliver
		}
		d.samples = append(d.samples, Sample{Timestamp: us, Keyframe: d.isKey(payload, sflags), Payload: payload})
	}
	return pos, dts, nil
}

// rescale converts ticks at timescale to microseconds, exactly (rounded
// to the nearest microsecond, halves away from zero), so that sample times
// never drift however long the stream, and times that a publisher converted
// from microseconds come back as they were.
func rescale(ticks int64, timescale uint32) (int64, bool) {
	if timescale == 0 {
		return 0, false
	}
	neg := ticks < 0
	u := uint64(ticks)
	if neg {
		u = uint64(-ticks)
	}
	hi, lo := bits.Mul64(u, 1_000_000)
	lo, carry := bits.Add64(lo, uint64(timescale/2), 0)
	hi += carry
	if hi >= uint64(timescale) {
		return 0, false
	}
	q, _ := bits.Div64(hi, lo, uint64(timescale))
	if q > math.MaxInt64 {
		return 0, false
	}
	if neg {
		return -int64(q), true
	}
	return int64(q), true
}

// Reset makes d a fresh demuxer for the fragments of init, keeping its
// sample buffer (emptied: it holds no payload of earlier frames).
func (d *Demuxer) Reset(init *Init) {
	clear(d.samples[:cap(d.samples)])
	*d = Demuxer{init: init, samples: d.samples[:0]}
}
