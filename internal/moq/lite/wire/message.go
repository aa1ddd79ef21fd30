package wire

import (
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/moq-export/moq-export/internal/varint"
)

func validUTF8(b []byte) bool { return utf8.Valid(b) }

// The messages below are laid out for moq-lite-05 by Append and Decode,
// and for any version of the table (versions.go) by AppendFor and
// DecodeFor, which read the version's capability fields. Messages with one
// layout in every version that has them have Append and Decode only.

// VersionCode is moq-lite-05's wire code (see Lite05; its ALPN is
// Lite05.ALPN()).
const VersionCode = 0xff0dad05

// Bidirectional stream types (the first varint on the stream).
const (
	StreamAnnounce  = 0x1
	StreamSubscribe = 0x2
	StreamFetch     = 0x3
	StreamProbe     = 0x4
	StreamGoaway    = 0x5
	StreamTrack     = 0x6
)

// Unidirectional stream types.
const (
	UniGroup = 0x0
	UniSetup = 0x1
)

// SETUP parameter ids.
const (
	ParamProbe  = 0x1
	ParamPath   = 0x2
	ParamRole   = 0x3
	ParamCost   = 0x4
	ParamOrigin = 0x5 // named Hop on lite-06
)

// SETUP Role values.
const (
	RoleBoth       = 0
	RolePublisher  = 1
	RoleSubscriber = 2
)

// Announce status values.
const (
	StatusEnded   = 0
	StatusActive  = 1
	StatusRestart = 2
)

// Subscribe response kinds. RespOK (SUBSCRIBE_START in the reference),
// RespEnd and RespDrop are also lite-05's wire types; RespAck is the
// SUBSCRIBE_OK of lite-01..04 (wire type 0 on lite-03/04, untyped before),
// never a wire value itself.
const (
	RespOK   = 0
	RespEnd  = 1
	RespDrop = 2
	RespAck  = 0x100
)

// Opt is a "+1 optional" group sequence (SUBSCRIBE start and end).
type Opt struct {
	Seq   uint64
	Valid bool
}

// Some returns a present Opt.
func Some(seq uint64) Opt { return Opt{Seq: seq, Valid: true} }

func appendOpt(b []byte, o Opt) []byte {
	if !o.Valid {
		return append(b, 0)
	}
	return varint.Append(b, o.Seq+1)
}

// Param is one SETUP parameter.
type Param struct {
	ID    uint64
	Value []byte
}

// Setup is the SETUP message of the Setup stream.
type Setup struct {
	Params []Param
}

// SetVarint adds a varint-valued parameter.
func (s *Setup) SetVarint(id, v uint64) {
	s.Params = append(s.Params, Param{ID: id, Value: varint.Append(nil, v)})
}

// SetBytes adds a byte-valued parameter.
func (s *Setup) SetBytes(id uint64, v []byte) {
	s.Params = append(s.Params, Param{ID: id, Value: v})
}

// Bytes returns the value of parameter id.
func (s *Setup) Bytes(id uint64) ([]byte, bool) {
	for _, p := range s.Params {
		if p.ID == id {
			return p.Value, true
		}
	}
	return nil, false
}

// Varint returns the value of a varint-valued parameter, which must hold
// exactly one varint.
func (s *Setup) Varint(id uint64) (uint64, bool, error) {
	b, ok := s.Bytes(id)
	if !ok {
		return 0, false, nil
	}
	v, n, err := ParseVarint(b)
	if err != nil || n != len(b) {
		return 0, true, fmt.Errorf("%w: setup parameter %d is not one varint", ErrDecode, id)
	}
	return v, true, nil
}

// Append appends the length-prefixed message.
func (s *Setup) Append(b []byte) []byte {
	return appendMessage(b, func(b []byte) []byte {
		b = varint.Append(b, uint64(len(s.Params)))
		for _, p := range s.Params {
			b = varint.Append(b, p.ID)
			b = varint.Append(b, uint64(len(p.Value)))
			b = append(b, p.Value...)
		}
		return b
	})
}

// Decode parses a message body.
func (s *Setup) Decode(body []byte) error {
	d := dec{b: body}
	n := d.varint()
	if d.err == nil && n > MaxSetupParams {
		d.fail("%d setup parameters", n)
	}
	s.Params = nil
	for i := uint64(0); i < n && d.err == nil; i++ {
		id := d.varint()
		v := d.bytes()
		if _, dup := s.Bytes(id); dup && d.err == nil {
			d.fail("duplicate setup parameter %d", id)
		}
		s.Params = append(s.Params, Param{ID: id, Value: v})
	}
	return d.done()
}

// AnnounceRequest opens an Announce stream.
type AnnounceRequest struct {
	Prefix     string
	ExcludeHop uint64
}

// Append appends the length-prefixed lite-05 message.
func (m *AnnounceRequest) Append(b []byte) []byte { return m.AppendFor(b, Lite05) }

// Decode parses a lite-05 message body.
func (m *AnnounceRequest) Decode(body []byte) error { return m.DecodeFor(body, Lite05) }

// AppendFor appends the length-prefixed message laid out for v: the
// Exclude Hop only where v carries it.
func (m *AnnounceRequest) AppendFor(b []byte, v *Version) []byte {
	return appendMessage(b, func(b []byte) []byte {
		b = appendStr(b, m.Prefix)
		if v.ExcludeHop {
			b = varint.Append(b, m.ExcludeHop)
		}
		return b
	})
}

// DecodeFor parses a message body laid out for v.
func (m *AnnounceRequest) DecodeFor(body []byte, v *Version) error {
	d := dec{b: body}
	m.Prefix = d.str()
	m.ExcludeHop = 0
	if v.ExcludeHop {
		m.ExcludeHop = d.varint()
	}
	return d.done()
}

// AnnounceInit lists the initial suffixes of an announce reply on
// lite-01/02 (AnnounceInit versions).
type AnnounceInit struct {
	Suffixes []string
}

// Append appends the length-prefixed message.
func (m *AnnounceInit) Append(b []byte) []byte {
	return appendMessage(b, func(b []byte) []byte {
		b = varint.Append(b, uint64(len(m.Suffixes)))
		for _, s := range m.Suffixes {
			b = appendStr(b, s)
		}
		return b
	})
}

// Decode parses a message body. The count is bounded by the body: each
// suffix takes at least one byte.
func (m *AnnounceInit) Decode(body []byte) error {
	d := dec{b: body}
	n := d.varint()
	if d.err == nil && n > uint64(len(d.b)) {
		d.fail("%d suffixes in %d bytes", n, len(d.b))
	}
	m.Suffixes = nil
	for i := uint64(0); i < n && d.err == nil; i++ {
		m.Suffixes = append(m.Suffixes, d.str())
	}
	return d.done()
}

// AnnounceOK is the publisher's first message on an Announce stream.
type AnnounceOK struct {
	HopID       uint64
	ActiveCount uint64
}

// Append appends the length-prefixed message.
func (m *AnnounceOK) Append(b []byte) []byte {
	return appendMessage(b, func(b []byte) []byte {
		return varint.Append(varint.Append(b, m.HopID), m.ActiveCount)
	})
}

// Decode parses a message body.
func (m *AnnounceOK) Decode(body []byte) error {
	d := dec{b: body}
	m.HopID = d.varint()
	m.ActiveCount = d.varint()
	return d.done()
}

// Announcement types of lite-06 (TypedAnnounce versions), written before
// the length.
const (
	AnnounceStart  = 0x0
	AnnounceEnd    = 0x1
	AnnounceUpdate = 0x2
)

// MaxCost is the ceiling of a lite-06 route cost (the largest QUIC
// varint): costs saturate there, and a browser writes it as its cold cost.
const MaxCost = 1<<62 - 1

// Announce reports one broadcast (a route, on lite-06) under the requested
// prefix. Before lite-06 it is one untyped message with a Status; on
// TypedAnnounce versions it is ANNOUNCE_START (Type AnnounceStart: Suffix,
// Hops and costs; its id is implicit, the stream's next), ANNOUNCE_END
// (ID) or ANNOUNCE_UPDATE (ID, Hops and costs), and Status is unused.
type Announce struct {
	Status uint8
	Suffix string
	Hops   []uint64

	Type       uint64 // TypedAnnounce: AnnounceStart, AnnounceEnd or AnnounceUpdate
	ID         uint64 // TypedAnnounce END and UPDATE: the id its START took
	Warm, Cold uint64 // TypedAnnounce START and UPDATE: route costs
}

// ErrUnknownAnnounce is returned by ReadAnnounceFor for an announcement
// type a TypedAnnounce version does not define: its body was skipped, it
// took no id, and the stream goes on (as the reference does, so that an
// older lite-06 build is not cut off by a newer one).
var ErrUnknownAnnounce = errors.New("moq-lite: unknown announcement type, skipped")

// Append appends the length-prefixed lite-05 message.
func (m *Announce) Append(b []byte) []byte { return m.AppendFor(b, Lite05) }

// Decode parses a lite-05 message body.
func (m *Announce) Decode(body []byte) error { return m.DecodeFor(body, Lite05) }

// AppendFor appends the message laid out for v: on TypedAnnounce versions
// its type, length and body; before, the length-prefixed body with the hop
// list (HopIDs), only its length (HopCount), or nothing.
func (m *Announce) AppendFor(b []byte, v *Version) []byte {
	if v.TypedAnnounce {
		b = varint.Append(b, m.Type)
		return appendMessage(b, func(b []byte) []byte {
			switch m.Type {
			case AnnounceEnd:
				return varint.Append(b, m.ID)
			case AnnounceUpdate:
				b = varint.Append(b, m.ID)
			default:
				b = appendStr(b, m.Suffix)
			}
			b = varint.Append(b, uint64(len(m.Hops)))
			for _, h := range m.Hops {
				b = varint.Append(b, h)
			}
			return varint.Append(varint.Append(b, min(m.Warm, MaxCost)), min(m.Cold, MaxCost))
		})
	}
	return appendMessage(b, func(b []byte) []byte {
		b = append(b, m.Status)
		b = appendStr(b, m.Suffix)
		if v.HopCount {
			b = varint.Append(b, uint64(len(m.Hops)))
		}
		if v.HopIDs {
			for _, h := range m.Hops {
				b = varint.Append(b, h)
			}
		}
		return b
	})
}

// DecodeFor parses a message body laid out for v. On a TypedAnnounce
// version the type comes before the length, so the caller sets m.Type
// first (ReadAnnounceFor does). On a version with a hop count but no ids,
// Hops holds that many zeros (unknown hops). Status 2 (restart) is
// accepted only where v has AnnounceRestart.
func (m *Announce) DecodeFor(body []byte, v *Version) error {
	d := dec{b: body}
	if v.TypedAnnounce {
		typ := m.Type
		*m = Announce{Type: typ}
		switch typ {
		case AnnounceEnd:
			m.ID = d.varint()
			return d.done()
		case AnnounceUpdate:
			m.ID = d.varint()
		case AnnounceStart:
			m.Suffix = d.str()
		default:
			d.fail("announcement type %d", typ)
			return d.err
		}
		m.Hops = decodeHops(&d, true)
		m.Warm, m.Cold = d.varint(), d.varint()
		if d.err == nil && (m.Warm > MaxCost || m.Cold > MaxCost) {
			d.fail("route cost beyond 2^62-1")
		}
		if d.err == nil {
			seen := map[uint64]bool{}
			for _, h := range m.Hops {
				if h != 0 && seen[h] {
					d.fail("hop %d twice in one hop list", h)
				}
				seen[h] = true
			}
		}
		return d.done()
	}
	m.Status = d.u8()
	if d.err == nil && (m.Status > StatusRestart || (m.Status == StatusRestart && !v.AnnounceRestart)) {
		d.fail("announce status %d", m.Status)
	}
	m.Suffix = d.str()
	m.Hops = nil
	if !v.HopCount {
		return d.done()
	}
	m.Hops = decodeHops(&d, v.HopIDs)
	return d.done()
}

// decodeHops reads a hop count and, with ids, that many hop ids (zeros
// without).
func decodeHops(d *dec, ids bool) []uint64 {
	n := d.varint()
	if d.err == nil && n > MaxHops {
		d.fail("%d hops", n)
	}
	var hops []uint64
	for i := uint64(0); i < n && d.err == nil; i++ {
		h := uint64(0)
		if ids {
			h = d.varint()
		}
		hops = append(hops, h)
	}
	return hops
}

// ReadAnnounceFor reads one announcement laid out for v from r: on
// TypedAnnounce versions its type, then the length-prefixed body (an
// unknown type is skipped whole and reported as ErrUnknownAnnounce); before,
// the length-prefixed body alone. A clean EOF before it is io.EOF.
func ReadAnnounceFor(r ByteReader, v *Version) (Announce, error) {
	var m Announce
	if v.TypedAnnounce {
		typ, err := varint.Read(r)
		if err != nil {
			return m, err
		}
		body, err := ReadMessage(r, 0)
		if err != nil {
			return m, unexpectedEOF(err)
		}
		if typ > AnnounceUpdate {
			return Announce{Type: typ}, fmt.Errorf("%w: type %d", ErrUnknownAnnounce, typ)
		}
		m.Type = typ
		return m, m.DecodeFor(body, v)
	}
	body, err := ReadMessage(r, 0)
	if err != nil {
		return m, err
	}
	return m, m.DecodeFor(body, v)
}

// TrackRequest (TRACK) asks for a track's properties.
type TrackRequest struct {
	Broadcast string
	Track     string
}

// Append appends the length-prefixed message.
func (m *TrackRequest) Append(b []byte) []byte {
	return appendMessage(b, func(b []byte) []byte {
		return appendStr(appendStr(b, m.Broadcast), m.Track)
	})
}

// Decode parses a message body.
func (m *TrackRequest) Decode(body []byte) error {
	d := dec{b: body}
	m.Broadcast = d.str()
	m.Track = d.str()
	return d.done()
}

// TrackInfo answers TRACK.
type TrackInfo struct {
	Priority uint8
	Ordered  bool // GroupOrder versions only
	// MaxLatency is the publisher's max latency (lite-05) or max age
	// (lite-06: how long it keeps a group once a newer one exists), in
	// milliseconds; NoMaxAge or more means no limit.
	MaxLatency uint64
	Timescale  uint64 // units per second, never 0
}

// NoMaxAge is what a publisher writes for "no limit" in TRACK_INFO (2^53-1
// ms; any value at or above it means the same).
const NoMaxAge = 1<<53 - 1

// Append appends the length-prefixed lite-05 message.
func (m *TrackInfo) Append(b []byte) []byte { return m.AppendFor(b, Lite05) }

// Decode parses a lite-05 message body.
func (m *TrackInfo) Decode(body []byte) error { return m.DecodeFor(body, Lite05) }

// AppendFor appends the length-prefixed message laid out for v (the
// Ordered byte only where v has GroupOrder).
func (m *TrackInfo) AppendFor(b []byte, v *Version) []byte {
	return appendMessage(b, func(b []byte) []byte {
		b = append(b, m.Priority)
		if v.GroupOrder {
			b = appendBool(b, m.Ordered)
		}
		b = varint.Append(b, m.MaxLatency)
		return varint.Append(b, m.Timescale)
	})
}

// DecodeFor parses a message body laid out for v.
func (m *TrackInfo) DecodeFor(body []byte, v *Version) error {
	d := dec{b: body}
	m.Priority = d.u8()
	m.Ordered = false
	if v.GroupOrder {
		m.Ordered = d.bool()
	}
	m.MaxLatency = d.varint()
	m.Timescale = d.varint()
	if d.err == nil && m.Timescale == 0 {
		d.fail("timescale 0")
	}
	return d.done()
}

// SubscribeParams are the fields SUBSCRIBE and SUBSCRIBE_UPDATE share, in
// their wire order.
//
// On FrameRange versions (lite-06) Start is an absolute floor sent raw,
// FrameStart the index of the first frame wanted in the Start group, and
// FrameEnd the inclusive last frame of the End group (only with End).
// Group floor 0 with frame 0 is "from the live edge" on the wire: a
// Start of group 0, frame 0 is sent as, and read back as, no Start.
type SubscribeParams struct {
	Priority   uint8
	Ordered    bool   // GroupOrder versions only
	MaxLatency uint64 // milliseconds; max age on lite-06
	Start      Opt
	End        Opt    // inclusive cap
	FrameStart uint64 // FrameRange versions only
	FrameEnd   Opt    // FrameRange versions only; inclusive, needs End
}

// append appends the fields v carries: all of them with SubscribeRange,
// the priority alone otherwise.
func (p *SubscribeParams) append(b []byte, v *Version) []byte {
	b = append(b, p.Priority)
	if !v.SubscribeRange {
		return b
	}
	if v.GroupOrder {
		b = appendBool(b, p.Ordered)
	}
	b = varint.Append(b, p.MaxLatency)
	if !v.FrameRange {
		b = appendOpt(b, p.Start)
		return appendOpt(b, p.End)
	}
	var floor, frame uint64
	if p.Start.Valid {
		floor, frame = p.Start.Seq, p.FrameStart
	}
	b = varint.Append(b, floor)
	b = appendOpt(b, p.End)
	b = varint.Append(b, frame)
	if !p.End.Valid {
		return append(b, 0)
	}
	return appendOpt(b, p.FrameEnd)
}

func (p *SubscribeParams) decode(d *dec, v *Version) {
	*p = SubscribeParams{Priority: d.u8()}
	if !v.SubscribeRange {
		return
	}
	if v.GroupOrder {
		p.Ordered = d.bool()
	}
	p.MaxLatency = d.varint()
	if !v.FrameRange {
		p.Start = d.opt()
		p.End = d.opt()
		return
	}
	floor := d.varint()
	p.End = d.opt()
	p.FrameStart = d.varint()
	p.FrameEnd = d.opt()
	if floor != 0 || p.FrameStart != 0 {
		p.Start = Some(floor)
	}
	if d.err == nil && p.FrameEnd.Valid && !p.End.Valid {
		d.fail("frame end without a group end")
	}
}

// Subscribe opens a subscription.
type Subscribe struct {
	ID        uint64
	Broadcast string
	Track     string
	SubscribeParams
}

// Append appends the length-prefixed lite-05 message.
func (m *Subscribe) Append(b []byte) []byte { return m.AppendFor(b, Lite05) }

// Decode parses a lite-05 message body.
func (m *Subscribe) Decode(body []byte) error { return m.DecodeFor(body, Lite05) }

// AppendFor appends the length-prefixed message laid out for v.
func (m *Subscribe) AppendFor(b []byte, v *Version) []byte {
	return appendMessage(b, func(b []byte) []byte {
		b = varint.Append(b, m.ID)
		b = appendStr(b, m.Broadcast)
		b = appendStr(b, m.Track)
		return m.SubscribeParams.append(b, v)
	})
}

// DecodeFor parses a message body laid out for v.
func (m *Subscribe) DecodeFor(body []byte, v *Version) error {
	d := dec{b: body}
	m.ID = d.varint()
	m.Broadcast = d.str()
	m.Track = d.str()
	m.SubscribeParams.decode(&d, v)
	return d.done()
}

// SubscribeUpdate changes a subscription.
type SubscribeUpdate struct {
	SubscribeParams
}

// Append appends the length-prefixed lite-05 message.
func (m *SubscribeUpdate) Append(b []byte) []byte { return m.AppendFor(b, Lite05) }

// Decode parses a lite-05 message body.
func (m *SubscribeUpdate) Decode(body []byte) error { return m.DecodeFor(body, Lite05) }

// AppendFor appends the length-prefixed message laid out for v.
func (m *SubscribeUpdate) AppendFor(b []byte, v *Version) []byte {
	return appendMessage(b, func(b []byte) []byte { return m.SubscribeParams.append(b, v) })
}

// DecodeFor parses a message body laid out for v.
func (m *SubscribeUpdate) DecodeFor(body []byte, v *Version) error {
	d := dec{b: body}
	m.SubscribeParams.decode(&d, v)
	return d.done()
}

// SubscribeResponse is one response on a Subscribe stream: SUBSCRIBE_OK
// (RespOK, Group = first group delivered; lite-05+), SUBSCRIBE_END (RespEnd,
// Group = exclusive end; lite-05+), SUBSCRIBE_DROP (RespDrop, Start..End
// inclusive, Code; lite-03+) or the SUBSCRIBE_OK acknowledgement of
// lite-01..04 (RespAck, with the fields in Ack; lite-01 carries only the
// priority, lite-02 nothing).
type SubscribeResponse struct {
	Type  uint64
	Group uint64
	Start uint64
	End   uint64
	Code  uint64
	Ack   SubscribeParams
}

// Append appends the lite-05 type, length and body.
func (m *SubscribeResponse) Append(b []byte) []byte { return m.AppendFor(b, Lite05) }

// Decode parses a lite-05 body of wire type typ. Unknown types are an
// error.
func (m *SubscribeResponse) Decode(typ uint64, body []byte) error { return m.decode(typ, body, Lite05) }

// wireType maps a response kind to v's wire type, false when v has no such
// response.
func (m *SubscribeResponse) wireType(v *Version) (uint64, bool) {
	switch {
	case !v.SubscribeOK && m.Type != RespAck:
		return m.Type, true
	case v.SubscribeOK && m.Type == RespAck:
		return 0, true
	case v.SubscribeOK && v.TypedResponses && m.Type == RespDrop:
		return 1, true
	}
	return 0, false
}

// kind maps v's wire type to a response kind.
func kind(typ uint64, v *Version) (uint64, bool) {
	switch {
	case !v.SubscribeOK:
		return typ, typ <= RespDrop
	case typ == 0:
		return RespAck, true
	case typ == 1:
		return RespDrop, true
	}
	return 0, false
}

// AppendFor appends the response laid out for v: its wire type (where v
// has TypedResponses), the length and the body. A response v does not
// have (SUBSCRIBE_END on lite-04, say) appends nothing: the caller checks
// the capability first.
func (m *SubscribeResponse) AppendFor(b []byte, v *Version) []byte {
	typ, ok := m.wireType(v)
	if !ok {
		return b
	}
	if v.TypedResponses {
		b = varint.Append(b, typ)
	}
	return appendMessage(b, func(b []byte) []byte {
		switch m.Type {
		case RespDrop:
			return varint.Append(varint.Append(varint.Append(b, m.Start), m.End), m.Code)
		case RespAck:
			switch {
			case v.SubscribeRange:
				return m.Ack.append(b, v)
			case v.SubscribeOKPriority:
				return append(b, m.Ack.Priority)
			}
			return b
		default:
			return varint.Append(b, m.Group)
		}
	})
}

func (m *SubscribeResponse) decode(typ uint64, body []byte, v *Version) error {
	k, ok := kind(typ, v)
	*m = SubscribeResponse{Type: k}
	d := dec{b: body}
	switch {
	case !ok:
		d.fail("subscribe response type %d", typ)
	case k == RespOK, k == RespEnd:
		m.Group = d.varint()
	case k == RespDrop:
		m.Start = d.varint()
		m.End = d.varint()
		m.Code = d.varint()
	case v.SubscribeRange:
		m.Ack.decode(&d, v)
	case v.SubscribeOKPriority:
		m.Ack.Priority = d.u8()
	}
	return d.done()
}

// ReadSubscribeResponse reads one lite-05 response from r.
func ReadSubscribeResponse(r ByteReader) (SubscribeResponse, error) {
	return ReadSubscribeResponseFor(r, Lite05)
}

// ReadSubscribeResponseFor reads one response laid out for v from r. A
// clean EOF before it is io.EOF.
func ReadSubscribeResponseFor(r ByteReader, v *Version) (SubscribeResponse, error) {
	var m SubscribeResponse
	var typ uint64
	if v.TypedResponses {
		t, err := varint.Read(r)
		if err != nil {
			return m, err
		}
		typ = t
	}
	body, err := ReadMessage(r, 0)
	if err != nil {
		if err == io.EOF && v.TypedResponses {
			err = io.ErrUnexpectedEOF
		}
		return m, err
	}
	err = m.decode(typ, body, v)
	return m, err
}

// Group is the header of a Group stream. FrameStart (FrameRange versions)
// is the group-local index of the stream's first frame: 0 unless the
// subscription began inside the group or the publisher holds only its
// tail.
type Group struct {
	SubscribeID uint64
	Sequence    uint64
	FrameStart  uint64
}

// Append appends the length-prefixed lite-05 message.
func (m *Group) Append(b []byte) []byte { return m.AppendFor(b, Lite05) }

// Decode parses a lite-05 message body.
func (m *Group) Decode(body []byte) error { return m.DecodeFor(body, Lite05) }

// AppendFor appends the length-prefixed message laid out for v.
func (m *Group) AppendFor(b []byte, v *Version) []byte {
	return appendMessage(b, func(b []byte) []byte {
		b = varint.Append(varint.Append(b, m.SubscribeID), m.Sequence)
		if v.FrameRange {
			b = varint.Append(b, m.FrameStart)
		}
		return b
	})
}

// DecodeFor parses a message body laid out for v.
func (m *Group) DecodeFor(body []byte, v *Version) error {
	d := dec{b: body}
	m.SubscribeID = d.varint()
	m.Sequence = d.varint()
	m.FrameStart = 0
	if v.FrameRange {
		m.FrameStart = d.varint()
	}
	return d.done()
}

// Fetch asks for one past group: on FrameRange versions, from frame
// FrameStart to FrameEnd (inclusive; absent = the group's end).
type Fetch struct {
	Broadcast  string
	Track      string
	Priority   uint8
	Group      uint64
	FrameStart uint64
	FrameEnd   Opt
}

// Append appends the length-prefixed lite-05 message.
func (m *Fetch) Append(b []byte) []byte { return m.AppendFor(b, Lite05) }

// Decode parses a lite-05 message body.
func (m *Fetch) Decode(body []byte) error { return m.DecodeFor(body, Lite05) }

// AppendFor appends the length-prefixed message laid out for v.
func (m *Fetch) AppendFor(b []byte, v *Version) []byte {
	return appendMessage(b, func(b []byte) []byte {
		b = appendStr(appendStr(b, m.Broadcast), m.Track)
		b = varint.Append(append(b, m.Priority), m.Group)
		if v.FrameRange {
			b = appendOpt(varint.Append(b, m.FrameStart), m.FrameEnd)
		}
		return b
	})
}

// DecodeFor parses a message body laid out for v. A frame end before the
// frame start is malformed.
func (m *Fetch) DecodeFor(body []byte, v *Version) error {
	d := dec{b: body}
	m.Broadcast = d.str()
	m.Track = d.str()
	m.Priority = d.u8()
	m.Group = d.varint()
	m.FrameStart, m.FrameEnd = 0, Opt{}
	if v.FrameRange {
		m.FrameStart = d.varint()
		m.FrameEnd = d.opt()
		if d.err == nil && m.FrameEnd.Valid && m.FrameEnd.Seq < m.FrameStart {
			d.fail("fetch frame end %d before frame start %d", m.FrameEnd.Seq, m.FrameStart)
		}
	}
	return d.done()
}

// Probe carries a bitrate (bit/s) and an RTT (ms); 0 = unknown.
type Probe struct {
	Bitrate uint64
	RTT     uint64
}

// Append appends the length-prefixed lite-05 message.
func (m *Probe) Append(b []byte) []byte { return m.AppendFor(b, Lite05) }

// Decode parses a lite-05 message body.
func (m *Probe) Decode(body []byte) error { return m.DecodeFor(body, Lite05) }

// AppendFor appends the length-prefixed message laid out for v (the RTT
// only where v has ProbeRTT).
func (m *Probe) AppendFor(b []byte, v *Version) []byte {
	return appendMessage(b, func(b []byte) []byte {
		b = varint.Append(b, m.Bitrate)
		if v.ProbeRTT {
			b = varint.Append(b, m.RTT)
		}
		return b
	})
}

// DecodeFor parses a message body laid out for v.
func (m *Probe) DecodeFor(body []byte, v *Version) error {
	d := dec{b: body}
	m.Bitrate = d.varint()
	m.RTT = 0
	if v.ProbeRTT {
		m.RTT = d.varint()
	}
	return d.done()
}

// Goaway asks the peer to move to another session URI (empty: just close).
type Goaway struct {
	URI string
}

// Append appends the length-prefixed message.
func (m *Goaway) Append(b []byte) []byte {
	return appendMessage(b, func(b []byte) []byte { return appendStr(b, m.URI) })
}

// Decode parses a message body.
func (m *Goaway) Decode(body []byte) error {
	d := dec{b: body}
	m.URI = d.str()
	return d.done()
}
