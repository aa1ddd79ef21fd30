package hang

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/codec/h26x"
	"github.com/moq-export/moq-export/internal/format/cmaf"
	"github.com/moq-export/moq-export/model"
)

// Errors.
var (
	// ErrMalformed means a payload that does not parse as its packaging
	// says.
	ErrMalformed = errors.New("hang: malformed payload")
	// ErrSkipped wraps the error of an object whose media is lost while
	// the group goes on: the Decoder drops the delta frames after it up
	// to the next keyframe (cmaf, whose fragments say which samples are
	// keyframes).
	ErrSkipped = errors.New("hang: object skipped")
	// ErrNoInit means a cmaf track whose catalog entry has no init.
	ErrNoInit = errors.New("hang: cmaf track without an init in the catalog")
)

// Kind is a payload packaging, as the catalog names it
// (catalog.ContainerKind), or Raw.
type Kind string

// Kinds.
const (
	Legacy = Kind(catalog.ContainerLegacy)
	LOC    = Kind(catalog.ContainerLOC)
	CMAF   = Kind(catalog.ContainerCMAF)
	// Raw is a track without packaging (a catalog track): the payload is
	// the frame, its time the wire timestamp.
	Raw Kind = "raw"
)

// Decodable reports whether a Decoder reads payloads of kind.
func Decodable(kind string) bool {
	switch Kind(kind) {
	case Legacy, LOC, CMAF, Raw:
		return true
	}
	return false
}

// Timescale is the timescale of wire timestamps unless a track says
// otherwise: microseconds, as model timestamps are.
const Timescale = 1_000_000

// Track is how one track's media is packaged in its payloads, for both
// directions. The zero value is the legacy packaging.
type Track struct {
	kind Kind
	init *cmaf.Init // cmaf
	// locScale is the timescale of loc timestamps that name none, from
	// the catalog (an MSF clockrate/timescale, MediaMTX's clocks); 0:
	// microseconds. Set, it also says the publisher sends the LOC draft's
	// layout on moq-transport (bare payload, time in the object).
	locScale uint64
	// deframer turns an H.264/H.265 track without a description into
	// Annex B whichever framing its publisher uses (nil otherwise).
	deframer *h26x.Deframer
	// check tells an implausible frame rate once (nil for tracks without
	// media).
	check *rateCheck
	// keys takes the key flag from the bitstream, for a track whose groups
	// are not GOPs (nil otherwise: hang's rule).
	keys *keyframer
}

// NewTrack returns the packaging kind; a cmaf track needs the container
// its catalog entry gives (its init), the others ignore ct.
func NewTrack(kind Kind, ct *catalog.Container) (Track, error) {
	if !Decodable(string(kind)) {
		return Track{}, fmt.Errorf("hang: unknown packaging %q", kind)
	}
	t := Track{kind: kind}
	if kind != CMAF {
		return t, nil
	}
	if ct == nil {
		return Track{}, ErrNoInit
	}
	b, err := ct.DecodeInit()
	if err != nil {
		return Track{}, err
	}
	if t.init, err = cmaf.ParseInit(b); err != nil {
		return Track{}, fmt.Errorf("%w: %w", catalog.ErrBadInit, err)
	}
	return t, nil
}

// ForRendition returns the packaging of the rendition named name in c,
// as a publisher sends it: the rendition's container (a cmaf one whose
// init does not parse, and a track c does not name, legacy).
func ForRendition(c *catalog.Catalog, name string) Track {
	if c == nil {
		return Track{kind: Legacy}
	}
	for _, r := range c.Renditions() {
		if r.Name != name {
			continue
		}
		t, err := OfRendition(r)
		if err != nil {
			return Track{kind: Legacy}
		}
		return t
	}
	return Track{kind: Legacy}
}

// OfRendition returns the packaging of catalog rendition r: its container
// (a cmaf one needs its init), the clock of its loc timestamps, the
// framing check of an H.264/H.265 rendition without a description, the
// rate check of its first frames, and the key flags from the bitstream of
// a rendition whose groups are not GOPs.
func OfRendition(r catalog.Rendition) (Track, error) {
	cm := r.Common()
	t, err := NewTrack(Kind(cm.ContainerKind()), cm.Container)
	if err != nil {
		return t, err
	}
	if t.kind == LOC && cm.Timescale != nil {
		t.locScale = *cm.Timescale
	}
	if codec, ok := h26x.CodecOf(codecFamily(cm.Codec)); ok && len(cm.Description) == 0 && t.kind != CMAF {
		t.deframer = h26x.NewDeframer(codec)
	}
	if t.kind != CMAF && r.Kind != catalog.KindText {
		// Cues come when someone speaks: no rate to check.
		t.check = newRateCheck(r)
		t.keys = newKeyframer(cm)
	}
	return t, nil
}

// codecFamily maps a WebCodecs codec string to "h264" or "h265" for the
// codecs h26x reads, "" otherwise.
func codecFamily(codec string) string {
	family, _, _ := strings.Cut(codec, ".")
	switch family {
	case "avc1", "avc3":
		return "h264"
	case "hev1", "hvc1":
		return "h265"
	}
	return ""
}

// Unframed returns how many frames of the track parsed neither as Annex B
// nor as length-prefixed NAL units and were dropped.
func (t Track) Unframed() uint64 {
	if t.deframer == nil {
		return 0
	}
	return t.deframer.Refused.Load()
}

// Kind returns the packaging's kind.
func (t Track) Kind() Kind {
	if t.kind == "" {
		return Legacy
	}
	return t.kind
}

// Timescale returns the timescale of the track's wire timestamps as a
// publisher sends them: the init's for cmaf, microseconds otherwise.
func (t Track) Timescale() uint64 {
	if t.init != nil && t.init.Timescale > 0 {
		return uint64(t.init.Timescale)
	}
	return Timescale
}

// WireTimestamp converts a model timestamp (µs) to the track's timescale.
func (t Track) WireTimestamp(us int64) int64 { return ToTimescale(us, t.Timescale()) }

// Bare reports whether the track's objects go as MediaMTX sends loc on
// moq-transport: the bare codec payload, the time in the object's
// Timestamp extension (draft-03's id) in the catalog's clock (ClockTime).
// So are published the loc renditions of an MSF catalog with a clock.
func (t Track) Bare() bool { return t.kind == LOC && t.locScale > 0 }

// ClockTime converts a model timestamp (µs) to the catalog's clock of a
// Bare track (microseconds for the others).
func (t Track) ClockTime(us int64) int64 { return ToTimescale(us, t.timescaleOr(Timescale)) }

// PayloadLen returns the size of the payload AppendPayload appends for f.
func (t Track) PayloadLen(f model.Frame) int {
	if t.Bare() {
		return len(f.Payload)
	}
	switch t.Kind() {
	case Legacy:
		return LegacyLen(f.Timestamp, f.Payload)
	case LOC:
		return LOCLen(f.Timestamp, f.Payload)
	}
	return len(f.Payload)
}

// AppendPayload appends the payload of published frame f: its codec
// payload in the legacy or loc packaging, or (cmaf, raw) f's payload as it
// is: a published cmaf track's frames hold their moof+mdat already, as
// `moq import fmp4` publishes them.
func (t Track) AppendPayload(b []byte, f model.Frame) []byte {
	if t.Bare() {
		return append(b, f.Payload...)
	}
	switch t.Kind() {
	case Legacy:
		return AppendLegacy(b, f.Timestamp, f.Payload)
	case LOC:
		return AppendLOC(b, f.Timestamp, f.Payload)
	}
	return append(b, f.Payload...)
}

// Object is one object of a track as the wire hands it over: a moq-lite
// frame or a moq-transport object.
type Object struct {
	Payload []byte
	// Timestamp is the wire timestamp in units of 1/Timescale s (a
	// moq-lite frame timestamp, a moq-transport Timestamp extension);
	// HasTimestamp says the object carried one of its own.
	Timestamp    int64
	Timescale    uint64
	HasTimestamp bool
	// FrameTime says Timestamp is the frame timestamp of a moq-lite
	// version that has them (lite-05 on): hang's frame time, which wins
	// over a cmaf fragment's tfdt.
	FrameTime bool
}

// demuxers recycles the per-group CMAF demuxers (group streams of one
// track are read concurrently, each with its own).
var demuxers = sync.Pool{New: func() any { return new(cmaf.Demuxer) }}

// Decoder turns the objects of one group into model frames: Decode an
// object, then take its frames with Next. The frames' payloads alias the
// object's. A Decoder is for one goroutine; Close it when the group ends.
type Decoder struct {
	// Verbatim makes each object one frame holding the object's payload
	// as it came (what an archive keeps), at the object's media time:
	// the legacy or loc payload's own, the earliest sample's for cmaf (the
	// wire time when its fragment does not parse or the object has
	// FrameTime), the wire time for a
	// raw track. A marker object is a frame too. Unpack with a decoder
	// without Verbatim.
	Verbatim bool

	t       *Track
	demux   *cmaf.Demuxer
	samples []cmaf.Sample
	pending model.Frame
	has     bool
	// broken is set after a bad cmaf object: its samples are lost, so
	// delta samples are dropped until a keyframe.
	broken bool
	// warning is the track's rate warning, until Warning takes it.
	warning string
}

// Decoder returns a decoder for one group of the track.
func (t *Track) Decoder() Decoder {
	d := Decoder{t: t}
	if t.init != nil {
		d.demux = demuxers.Get().(*cmaf.Demuxer)
		d.demux.Reset(t.init)
	}
	return d
}

// Close releases the decoder.
func (d *Decoder) Close() {
	if d.demux != nil {
		d.demux.Reset(nil)
		demuxers.Put(d.demux)
		d.demux = nil
	}
	d.samples = nil
}

// Decode reads object o. An error wrapping ErrSkipped lost that object
// only; any other error means the payload is not what the packaging says
// (ErrMalformed).
//
// Decode runs once per object on the group stream's goroutine, between
// the family's reader and the model's writes: each packaging but legacy
// (the smallest) decodes in a function of its own, so that the frame
// this one adds to that goroutine's stack stays small.
func (d *Decoder) Decode(o Object) error {
	d.samples, d.has = nil, false
	if d.Verbatim {
		return d.verbatim(o)
	}
	switch d.t.Kind() {
	case Legacy:
		ts, codec, err := DecodeLegacy(o.Payload)
		if err != nil {
			return err
		}
		return d.media(model.Frame{Timestamp: ts, Payload: codec})
	case LOC:
		return d.loc(o)
	case CMAF:
		return d.cmaf(o)
	}
	return d.raw(o)
}

// loc decodes a loc object.
//
//go:noinline
func (d *Decoder) loc(o Object) error {
	var (
		ts    int64
		codec []byte
		err   error
	)
	if d.t.locScale > 0 && o.HasTimestamp {
		// An MSF publisher (MediaMTX): the LOC draft's layout, its
		// clock from the catalog unless the object names one.
		ts, codec, err = d.bareLOC(o)
	} else if ts, codec, err = DecodeLOCAt(o.Payload, d.t.timescaleOr(Timescale)); err != nil {
		if !o.HasTimestamp {
			return err
		}
		// The LOC draft's layout on moq-transport: the bare codec
		// payload, its time in the object's Timestamp extension.
		ts, codec, err = d.bareLOC(o)
	}
	if err != nil {
		return err
	}
	return d.media(model.Frame{Timestamp: ts, Payload: codec})
}

// cmaf decodes a cmaf object: a fragment, or an empty marker.
//
//go:noinline
func (d *Decoder) cmaf(o Object) error {
	if d.demux == nil {
		return ErrNoInit
	}
	if len(o.Payload) == 0 {
		// The marker (model.Frame.Marker), at the frame's time.
		ts, _ := RescaleSigned(o.Timestamp, o.Timescale)
		d.pending, d.has = model.Frame{Timestamp: ts, Marker: true}, true
		return nil
	}
	samples, err := d.demux.Fragment(o.Payload)
	if err != nil {
		d.broken = true
		return fmt.Errorf("%w: %w: %w", ErrSkipped, ErrMalformed, err)
	}
	if o.FrameTime && len(samples) > 0 {
		frameTime(samples, o)
	}
	d.samples = samples
	return nil
}

// raw decodes an object of a raw track: its payload is the frame, at the
// object's time.
//
//go:noinline
func (d *Decoder) raw(o Object) error {
	ts, ok := RescaleSigned(o.Timestamp, o.Timescale)
	if !ok {
		return fmt.Errorf("%w: timestamp %d at timescale %d", ErrMalformed, o.Timestamp, o.Timescale)
	}
	d.pending, d.has = model.Frame{Timestamp: ts, Payload: o.Payload}, true
	return nil
}

// frameTimeSlack is how far a frame time may lie from a fragment's own
// time and still be taken as the same time, rounded (µs).
const frameTimeSlack = 1000

// frameTime moves the samples of a cmaf fragment so that the earliest
// presents at the object's frame time: hang's rule, the frame time wins
// over tfdt, and the fragment's own times only place its samples relative
// to the earliest.
func frameTime(samples []cmaf.Sample, o Object) {
	at, ok := RescaleSigned(o.Timestamp, o.Timescale)
	if !ok {
		return
	}
	// A frame time within a millisecond of the fragment's own is the same
	// time rounded to whole microseconds: tfdt, exact in the track's
	// timescale, keeps the samples on their grid (an AAC frame is 21333.3
	// µs; moved by the rounding, an MPEG-TS file's audio left its 90 kHz
	// grid by two ticks).
	if shift := at - earliest(samples); shift <= -frameTimeSlack || shift >= frameTimeSlack {
		for i := range samples {
			samples[i].Timestamp += shift
		}
	}
}

// earliest returns the presentation time of a fragment's earliest sample.
func earliest(samples []cmaf.Sample) int64 {
	ts := samples[0].Timestamp
	for _, s := range samples[1:] {
		ts = min(ts, s.Timestamp)
	}
	return ts
}

// verbatim decodes o for its media time only (Verbatim).
func (d *Decoder) verbatim(o Object) error {
	f := model.Frame{Payload: o.Payload}
	switch d.t.Kind() {
	case CMAF, Raw:
		ts, ok := RescaleSigned(o.Timestamp, o.Timescale)
		if !ok {
			return fmt.Errorf("%w: timestamp %d at timescale %d", ErrMalformed, o.Timestamp, o.Timescale)
		}
		f.Timestamp = ts
		if d.demux != nil && !o.FrameTime {
			if samples, err := d.demux.Fragment(o.Payload); err == nil && len(samples) > 0 {
				f.Timestamp = earliest(samples)
			}
		}
	default:
		d.Verbatim = false
		err := d.Decode(o)
		d.Verbatim = true
		if err != nil {
			return err
		}
		f.Timestamp, f.Sync = d.pending.Timestamp, d.pending.Sync
	}
	d.pending, d.has = f, true
	return nil
}

// bareLOC reads an object in the LOC draft's layout on moq-transport: the
// bare codec payload, its time in the object's Timestamp extension, in
// the object's timescale, or the catalog's when the object names none
// (o.Timescale is then the default, microseconds).
func (d *Decoder) bareLOC(o Object) (int64, []byte, error) {
	scale := o.Timescale
	if scale == Timescale {
		scale = d.t.timescaleOr(scale)
	}
	ts, ok := RescaleSigned(o.Timestamp, scale)
	if !ok {
		return 0, nil, fmt.Errorf("%w: timestamp %d at timescale %d", ErrMalformed, o.Timestamp, scale)
	}
	return ts, o.Payload, nil
}

// timescaleOr is the catalog's loc timescale, or def when it has none.
func (t *Track) timescaleOr(def uint64) uint64 {
	if t.locScale > 0 {
		return t.locScale
	}
	return def
}

// media makes f, a legacy or loc frame, the pending one: an empty payload
// is a marker (model.Frame.Marker); an H.264/H.265 payload of a track without
// a description comes out in Annex B (a payload that parses neither as
// Annex B nor as length-prefixed units is skipped: ErrSkipped wrapping
// h26x.ErrUnframed); a track whose groups are not GOPs gets its key flag
// from the bitstream.
func (d *Decoder) media(f model.Frame) error {
	if len(f.Payload) == 0 {
		// hang's marker: never handed to a decoder. Opening its group,
		// a discontinuity; after frames, the exclusive end of the one
		// before it (model.Frame.Marker).
		d.pending, d.has = model.Frame{Timestamp: f.Timestamp, Marker: true}, true
		return nil
	}
	if d.t.deframer != nil {
		out, _, err := d.t.deframer.AnnexB(nil, f.Payload)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrSkipped, err)
		}
		f.Payload = out
	}
	if d.t.keys != nil {
		f.Sync = d.t.keys.sync(f.Payload)
	}
	if d.t.check != nil {
		if w := d.t.check.frame(f.Timestamp); w != "" {
			d.warning = w
		}
	}
	d.pending, d.has = f, true
	return nil
}

// Warning returns, once per track, a warning about its timestamps that an
// object read by Decode gave rise to ("" when none): a frame rate or
// frame duration no media has, which means the timescale was guessed
// wrong.
func (d *Decoder) Warning() string {
	w := d.warning
	d.warning = ""
	return w
}

// Next returns the next frame of the object Decode read last; false when
// there is none left (a legacy or loc marker without a sample has none).
func (d *Decoder) Next() (model.Frame, bool) {
	if d.has {
		d.has = false
		return d.pending, true
	}
	for len(d.samples) > 0 {
		s := d.samples[0]
		d.samples = d.samples[1:]
		if d.broken && !s.Keyframe {
			continue
		}
		d.broken = false
		sync := model.SyncDelta
		if s.Keyframe {
			sync = model.SyncKey
		}
		return model.Frame{Timestamp: s.Timestamp, Payload: s.Payload, Sync: sync}, true
	}
	return model.Frame{}, false
}
