package ietf

import (
	"fmt"

	"github.com/moq-export/moq-export/internal/varint"
)

// Control message types.
const (
	TypeRequestUpdate          = 0x02
	TypeSubscribe              = 0x03
	TypeSubscribeOK            = 0x04
	TypeRequestError           = 0x05 // SUBSCRIBE_ERROR in draft 14
	TypePublishNamespace       = 0x06
	TypeRequestOK              = 0x07 // PUBLISH_NAMESPACE_OK in draft 14
	TypePublishNamespaceError  = 0x08 // draft 14; NAMESPACE from draft 16
	TypeNamespace              = 0x08
	TypePublishNamespaceDone   = 0x09 // drafts 14-16
	TypeUnsubscribe            = 0x0a // drafts 14-16
	TypePublishDone            = 0x0b
	TypePublishNamespaceCancel = 0x0c // drafts 14-16
	TypeTrackStatus            = 0x0d
	TypeTrackStatusOK          = 0x0e // draft 14: SUBSCRIBE_OK's layout
	TypeTrackStatusError       = 0x0f // draft 14: SUBSCRIBE_ERROR's layout
	TypeNamespaceDone          = 0x0e // draft 16+
	TypeGoAway                 = 0x10
	TypeSubscribeNamespace14   = 0x11 // drafts 14-17
	TypeSubscribeNamespaceOK   = 0x12 // draft 14
	TypeSubscribeNamespaceErr  = 0x13 // draft 14
	TypeUnsubscribeNamespace   = 0x14 // drafts 14-15
	TypeMaxRequestID           = 0x15 // drafts 14-16
	TypeFetch                  = 0x16
	TypeFetchCancel            = 0x17 // drafts 14-16
	TypeFetchOK                = 0x18
	TypeFetchError             = 0x19 // draft 14
	TypeRequestsBlocked        = 0x1a // drafts 14-16
	TypePublish                = 0x1d
	TypePublishOK              = 0x1e
	TypePublishError           = 0x1f // draft 14
	TypeClientSetup            = 0x20 // drafts 14-16
	TypeServerSetup            = 0x21 // drafts 14-16
	TypeSubscribeNamespace     = 0x50 // draft 18+
	TypeSetupStream            = 0x2f00
)

// SubscribeNamespaceType returns the SUBSCRIBE_NAMESPACE type of v.
func SubscribeNamespaceType(v Version) uint64 {
	if v >= Draft18 {
		return TypeSubscribeNamespace
	}
	return TypeSubscribeNamespace14
}

// Message is one control message body.
type Message interface {
	encode(e *encoder)
	decode(d *decoder)
}

// Append appends m framed as a control message of type typ.
func Append(b []byte, typ uint64, m Message, v Version) []byte {
	e := encoder{v: v}
	m.encode(&e)
	return AppendMessage(b, typ, e.b, v)
}

// Decode decodes body into m; the whole body must be consumed.
func Decode(body []byte, m Message, v Version) error {
	d := decoder{b: body, v: v}
	m.decode(&d)
	return d.finish()
}

// requiredDelta is draft 17's Required Request ID Delta field (always 0
// here); it follows the request id of new requests.
func requiredDelta(v Version) bool { return v.RequiredDelta() }

// ClientSetup is CLIENT_SETUP (drafts 14-16). Versions is sent in draft
// 14 only.
type ClientSetup struct {
	Versions []Version
	Params   Params
}

func (m *ClientSetup) encode(e *encoder) {
	if e.v == Draft14 {
		e.varint(uint64(len(m.Versions)))
		for _, x := range m.Versions {
			e.varint(uint64(x))
		}
	}
	appendParams(e, m.Params, true)
}

func (m *ClientSetup) decode(d *decoder) {
	if d.v == Draft14 {
		n := d.varint()
		if n > MaxVersions {
			d.fail("%d versions", n)
			return
		}
		m.Versions = nil
		for range n {
			m.Versions = append(m.Versions, Version(d.varint()))
		}
	} else {
		m.Versions = []Version{d.v}
	}
	m.Params = decodeParams(d, true)
}

// ServerSetup is SERVER_SETUP (drafts 14-16). Version is sent in draft
// 14 only.
type ServerSetup struct {
	Version Version
	Params  Params
}

func (m *ServerSetup) encode(e *encoder) {
	if e.v == Draft14 {
		e.varint(uint64(m.Version))
	}
	appendParams(e, m.Params, true)
}

func (m *ServerSetup) decode(d *decoder) {
	m.Version = d.v
	if d.v == Draft14 {
		m.Version = Version(d.varint())
	}
	m.Params = decodeParams(d, true)
}

// Setup is the SETUP of drafts 17+, sent on its own unidirectional stream
// after the stream type TypeSetupStream: a u16 length and the options.
type Setup struct{ Params Params }

func (m *Setup) encode(e *encoder) { appendParams(e, m.Params, true) }
func (m *Setup) decode(d *decoder) { m.Params = decodeParams(d, true) }

// AppendSetupStream appends the start of a drafts 17+ setup stream: the
// stream type and the SETUP.
func AppendSetupStream(b []byte, m *Setup, v Version) []byte {
	return AppendSetupAs(b, TypeSetupStream, m, v)
}

// AppendSetupAs appends m, a drafts 17+ SETUP, as a message of type typ:
// MediaMTX's CLIENT_SETUP and SERVER_SETUP on draft 16 are draft 17's
// SETUP options under the draft-16 types, on the first bidirectional
// stream.
func AppendSetupAs(b []byte, typ uint64, m *Setup, v Version) []byte {
	e := encoder{v: v}
	m.encode(&e)
	return AppendMessage(b, typ, e.b, v)
}

// Filter kinds of SUBSCRIBE.
const (
	FilterNextGroup     = 0x1
	FilterLargestObject = 0x2
	FilterAbsoluteStart = 0x3
	FilterAbsoluteRange = 0x4
	// FilterRelative (draft 20 only) starts Groups groups back from the
	// live edge: 0 is the next group, 1 the current one.
	FilterRelative = 0x100
)

// Filter is SUBSCRIBE's filter. End is the last group of an absolute
// range.
type Filter struct {
	Type   uint64
	Start  Location
	End    uint64
	Groups uint64 // FilterRelative
}

// appendTagged writes the tagged form (drafts 14-19).
func (f Filter) appendTagged(e *encoder) {
	t := f.Type
	if t == FilterRelative {
		// Before draft 20 only "the next group" has a tag.
		t = FilterNextGroup
	}
	e.varint(t)
	switch f.Type {
	case FilterAbsoluteStart:
		e.location(f.Start)
	case FilterAbsoluteRange:
		e.location(f.Start)
		// @moq/net writes (and reads) the end as a delta from the start.
		e.varint(f.End - f.Start.Group)
	}
}

func (f *Filter) decodeTagged(d *decoder) {
	f.Type = d.varint()
	switch f.Type {
	case FilterNextGroup, FilterLargestObject:
	case FilterAbsoluteStart:
		f.Start = d.location()
	case FilterAbsoluteRange:
		f.Start = d.location()
		delta := d.varint()
		f.End = f.Start.Group + delta
	default:
		d.fail("filter type %d", f.Type)
	}
}

// appendFields writes draft 20's field list: none = everything from the
// start, one = that many groups back from the live edge, two = a start
// location, "0 0" = the next object.
func (f Filter) appendFields(e *encoder) {
	switch f.Type {
	case FilterNextGroup:
		e.varint(0)
	case FilterRelative:
		e.varint(f.Groups)
	case FilterLargestObject:
		e.varint(0)
		e.varint(0)
	case FilterAbsoluteStart:
		// An open-ended start at {0, 0} is no filter at all (no fields:
		// "0 0" would mean the next object), as @moq/net normalizes it.
		if f.Start != (Location{}) {
			e.location(f.Start)
		}
	case FilterAbsoluteRange:
		e.location(f.Start)
		e.varint(f.End - f.Start.Group)
	}
}

func (f *Filter) decodeFields(d *decoder) {
	var x []uint64
	for len(d.b) > 0 && d.err == nil {
		if len(x) == 4 {
			d.fail("filter of more than 4 fields")
			return
		}
		x = append(x, d.varint())
	}
	switch len(x) {
	case 0:
		*f = Filter{Type: FilterAbsoluteStart}
	case 1:
		*f = Filter{Type: FilterRelative, Groups: x[0]}
	default:
		if len(x) == 2 && x[0] == 0 && x[1] == 0 {
			*f = Filter{Type: FilterLargestObject}
			return
		}
		*f = Filter{Type: FilterAbsoluteStart, Start: Location{x[0], x[1]}}
		if len(x) >= 3 {
			f.Type, f.End = FilterAbsoluteRange, x[0]+x[2]
		}
	}
}

// Location Filter Types of draft 22, and how many fields each carries.
const (
	locNone          = 0x0
	locRelativeStart = 0x1
	locAbsoluteStart = 0x2
	locAbsoluteEnd   = 0x3
	locAbsoluteRange = 0x4
	locNextObject    = 0x5
)

// typedFieldCount returns the fields a draft-22 Location Filter Type
// carries, false for a type draft 22 does not define.
func typedFieldCount(t uint64) (int, bool) {
	switch t {
	case locNone, locNextObject:
		return 0, true
	case locRelativeStart, locAbsoluteStart, locAbsoluteEnd, locAbsoluteRange:
		return int(t), true
	}
	return 0, false
}

// appendTyped writes draft 22's form: the type, then its fields. Every
// draft-20 meaning carries over; "the next object" (two zero fields in
// draft 20) is its own type, and an open start at {0, 0} is None.
func (f Filter) appendTyped(e *encoder) {
	switch f.Type {
	case FilterNextGroup:
		e.varint(locRelativeStart)
		e.varint(0)
	case FilterRelative:
		e.varint(locRelativeStart)
		e.varint(f.Groups)
	case FilterLargestObject:
		e.varint(locNextObject)
	case FilterAbsoluteStart:
		if f.Start == (Location{}) {
			e.varint(locNone)
			return
		}
		e.varint(locAbsoluteStart)
		e.location(f.Start)
	case FilterAbsoluteRange:
		e.varint(locAbsoluteEnd)
		e.location(f.Start)
		e.varint(f.End - f.Start.Group)
	}
}

func (f *Filter) decodeTyped(d *decoder) {
	t := d.varint()
	n, ok := typedFieldCount(t)
	if d.err != nil {
		return
	}
	if !ok {
		d.fail("location filter type %d", t)
		return
	}
	x := make([]uint64, n)
	for i := range x {
		x[i] = d.varint()
	}
	switch t {
	case locNone:
		*f = Filter{Type: FilterAbsoluteStart}
	case locRelativeStart:
		*f = Filter{Type: FilterRelative, Groups: x[0]}
	case locNextObject:
		*f = Filter{Type: FilterLargestObject}
	case locAbsoluteStart:
		*f = Filter{Type: FilterAbsoluteStart, Start: Location{x[0], x[1]}}
	default: // an end group, and an end object this package does not keep
		if x[2] > varint.Max-x[0] {
			d.fail("location filter end group overflows")
			return
		}
		*f = Filter{Type: FilterAbsoluteRange, Start: Location{x[0], x[1]}, End: x[0] + x[2]}
	}
}

func (f Filter) param(v Version) []byte {
	e := encoder{v: v}
	if v.typedFilter() {
		f.appendTyped(&e)
		return e.b
	}
	if v >= Draft20 {
		f.appendFields(&e)
	} else {
		f.appendTagged(&e)
	}
	if e.b == nil {
		e.b = []byte{}
	}
	return e.b
}

func decodeFilterParam(b []byte, v Version) (Filter, error) {
	var f Filter
	d := decoder{b: b, v: v}
	if v.typedFilter() {
		f.decodeTyped(&d)
	} else if v >= Draft20 {
		f.decodeFields(&d)
	} else {
		f.decodeTagged(&d)
	}
	return f, d.finish()
}

// Group orders.
const (
	GroupOrderAny        = 0x0
	GroupOrderAscending  = 0x1
	GroupOrderDescending = 0x2
)

// Subscribe is SUBSCRIBE. Priority, GroupOrder, Forward and Filter are
// inline in draft 14 and parameters later.
type Subscribe struct {
	RequestID  uint64
	Namespace  string
	Track      string
	Priority   uint8
	GroupOrder uint8
	Forward    bool
	Filter     Filter
	Params     Params // other parameters
}

func (m *Subscribe) encode(e *encoder) {
	e.varint(m.RequestID)
	if requiredDelta(e.v) {
		e.varint(0)
	}
	e.namespace(m.Namespace)
	e.str(m.Track)
	if e.v == Draft14 {
		e.u8(m.Priority)
		e.u8(m.GroupOrder)
		e.bool(m.Forward)
		m.Filter.appendTagged(e)
		appendParams(e, m.Params, false)
		return
	}
	appendParams(e, m.OptionalParams(e.v), false)
}

// Defaults of SUBSCRIBE's parameters (drafts 15+): what a receiver takes
// when a parameter is absent.
const (
	DefaultSubscriberPriority = 128
	DefaultGroupOrder         = GroupOrderAny // the publisher's order
)

// DefaultFilter is the filter of a SUBSCRIBE without SUBSCRIPTION_FILTER.
var DefaultFilter = Filter{Type: FilterLargestObject}

// OptionalParams returns the parameters SUBSCRIBE carries in draft v
// (15+): Params, and each of priority, group order, forward and filter
// only when it differs from the draft's default. Servers that know only
// the authorization token (MediaMTX) close the session on any other, so
// a SUBSCRIBE asking for the defaults carries none.
func (m *Subscribe) OptionalParams(v Version) Params {
	p := append(Params(nil), m.Params...)
	if m.Priority != DefaultSubscriberPriority {
		p.SetVarint(ParamSubscriberPriority, uint64(m.Priority))
	}
	if m.GroupOrder != DefaultGroupOrder {
		p.SetVarint(ParamGroupOrder, uint64(m.GroupOrder))
	}
	if !m.Forward {
		p.SetVarint(ParamForward, boolValue(m.Forward))
	}
	if m.Filter != DefaultFilter {
		p.SetBytes(ParamSubscriptionFilter, m.Filter.param(v))
	}
	return p
}

func boolValue(t bool) uint64 {
	if t {
		return 1
	}
	return 0
}

func (m *Subscribe) decode(d *decoder) {
	m.RequestID = d.varint()
	if requiredDelta(d.v) {
		d.varint()
	}
	m.Namespace = d.namespace()
	m.Track = d.str()
	if d.v == Draft14 {
		m.Priority = d.u8()
		m.GroupOrder = d.u8()
		m.Forward = d.bool()
		m.Filter.decodeTagged(d)
		m.Params = decodeParams(d, false)
		return
	}
	m.Params = decodeParams(d, false)
	m.Priority, m.GroupOrder, m.Forward = DefaultSubscriberPriority, DefaultGroupOrder, true
	if x, ok := m.Params.Varint(ParamSubscriberPriority); ok {
		m.Priority = uint8(x)
	}
	if x, ok := m.Params.Varint(ParamGroupOrder); ok {
		m.GroupOrder = uint8(x)
	}
	if x, ok := m.Params.Varint(ParamForward); ok {
		m.Forward = x != 0
	}
	m.Filter = DefaultFilter
	if b, ok := m.Params.Bytes(ParamSubscriptionFilter); ok {
		f, err := decodeFilterParam(b, d.v)
		if err != nil {
			d.fail("filter: %v", err)
			return
		}
		m.Filter = f
	}
}

// SubscribeOK is SUBSCRIBE_OK. Largest is set when content exists.
// Timescale is the Track Properties' timescale (drafts 17+; 0 when not
// given).
type SubscribeOK struct {
	RequestID  uint64 // drafts 14-16
	TrackAlias uint64
	Expires    uint64
	GroupOrder uint8
	Largest    *Location
	Timescale  uint64
	Params     Params
}

// Track Properties ids.
const (
	propTimescale  = 0x08
	propGroupOrder = 0x22
)

func (m *SubscribeOK) encode(e *encoder) {
	if e.v.RequestIDInResponses() {
		e.varint(m.RequestID)
	}
	e.varint(m.TrackAlias)
	if e.v == Draft14 {
		e.varint(m.Expires)
		e.u8(m.GroupOrder)
		e.bool(m.Largest != nil)
		if m.Largest != nil {
			e.location(*m.Largest)
		}
		appendParams(e, m.Params, false)
		return
	}
	p := append(Params(nil), m.Params...)
	if m.Largest != nil {
		le := encoder{v: e.v}
		le.location(*m.Largest)
		p.SetBytes(ParamLargestObject, le.b)
	}
	appendParams(e, p, false)
	if e.v.writesTrackProperties() {
		appendProperties(e, m.Timescale, m.GroupOrder)
	}
}

func (m *SubscribeOK) decode(d *decoder) {
	if d.v.RequestIDInResponses() {
		m.RequestID = d.varint()
	}
	m.TrackAlias = d.varint()
	if d.v == Draft14 {
		m.Expires = d.varint()
		m.GroupOrder = d.u8()
		if d.bool() {
			l := d.location()
			m.Largest = &l
		}
		m.Params = decodeParams(d, false)
		return
	}
	m.Params = decodeParams(d, false)
	if b, ok := m.Params.Bytes(ParamLargestObject); ok {
		ld := decoder{b: b, v: d.v}
		l := ld.location()
		if err := ld.finish(); err != nil {
			d.fail("largest object: %v", err)
			return
		}
		m.Largest = &l
	}
	if d.v.readsTrackProperties() {
		m.Timescale, m.GroupOrder = decodeProperties(d)
	}
}

// appendProperties writes Track Properties: timescale and group order
// (each when non-zero), delta-encoded, up to the end of the message.
func appendProperties(e *encoder, timescale uint64, order uint8) {
	var prev uint64
	if timescale != 0 {
		e.varint(propTimescale)
		e.varint(timescale)
		prev = propTimescale
	}
	if order != 0 {
		e.varint(propGroupOrder - prev)
		e.varint(uint64(order))
	}
}

// decodeProperties reads Track Properties up to the end of the message,
// keeping the timescale and group order and skipping the rest.
func decodeProperties(d *decoder) (timescale uint64, order uint8) {
	var prev uint64
	for i := 0; len(d.b) > 0 && d.err == nil; i++ {
		if i == MaxParams {
			d.fail("more than %d track properties", MaxParams)
			return
		}
		id := d.varint() + prev
		prev = id
		if id%2 == 1 {
			d.bytes()
			continue
		}
		x := d.varint()
		switch id {
		case propTimescale:
			timescale = x
		case propGroupOrder:
			order = uint8(x)
		}
	}
	return timescale, order
}

// RequestError is a refusal: SUBSCRIBE_ERROR, FETCH_ERROR,
// PUBLISH_NAMESPACE_ERROR, SUBSCRIBE_NAMESPACE_ERROR of draft 14 (one
// layout, different types) and REQUEST_ERROR of drafts 15+.
type RequestError struct {
	RequestID     uint64 // drafts 14-16
	Code          uint64
	RetryInterval uint64 // drafts 16+
	Reason        string
}

func (m *RequestError) encode(e *encoder) {
	if e.v.RequestIDInResponses() {
		e.varint(m.RequestID)
	}
	e.varint(m.Code)
	if e.v >= Draft16 {
		e.varint(m.RetryInterval)
	}
	e.str(m.Reason)
}

func (m *RequestError) decode(d *decoder) {
	if d.v.RequestIDInResponses() {
		m.RequestID = d.varint()
	}
	m.Code = d.varint()
	if d.v >= Draft16 {
		m.RetryInterval = d.varint()
	}
	m.Reason = d.str()
}

// Error implements error, for a refusal handed to a caller.
func (m *RequestError) Error() string {
	return fmt.Sprintf("request refused: code %d: %q", m.Code, m.Reason)
}

// RequestOK is a bare acceptance: PUBLISH_NAMESPACE_OK and
// SUBSCRIBE_NAMESPACE_OK of draft 14 (request id only), REQUEST_OK of
// drafts 15+ (parameters too).
type RequestOK struct {
	RequestID uint64 // drafts 14-16
	Params    Params // drafts 15+
}

func (m *RequestOK) encode(e *encoder) {
	if e.v.RequestIDInResponses() {
		e.varint(m.RequestID)
	}
	if e.v != Draft14 {
		appendParams(e, m.Params, false)
	}
}

func (m *RequestOK) decode(d *decoder) {
	if d.v.RequestIDInResponses() {
		m.RequestID = d.varint()
	}
	if d.v != Draft14 {
		m.Params = decodeParams(d, false)
		if d.v.readsTrackProperties() {
			decodeProperties(d)
		}
	}
}

// PublishDone statuses.
const (
	DoneInternalError     = 0x0
	DoneUnauthorized      = 0x1
	DoneTrackEnded        = 0x2
	DoneSubscriptionEnded = 0x3
	DoneGoingAway         = 0x4
	DoneExpired           = 0x5
	DoneTooFarBehind      = 0x6
)

// PublishDone is PUBLISH_DONE (SUBSCRIBE_DONE): the publisher ended a
// subscription after opening StreamCount data streams for it (0 from
// peers that do not count).
type PublishDone struct {
	RequestID   uint64 // drafts 14-16
	Status      uint64
	StreamCount uint64
	Reason      string
}

func (m *PublishDone) encode(e *encoder) {
	if e.v.RequestIDInResponses() {
		e.varint(m.RequestID)
	}
	e.varint(m.Status)
	e.varint(m.StreamCount)
	e.str(m.Reason)
}

func (m *PublishDone) decode(d *decoder) {
	if d.v.RequestIDInResponses() {
		m.RequestID = d.varint()
	}
	m.Status = d.varint()
	m.StreamCount = d.varint()
	m.Reason = d.str()
}

// RequestID is the body of the messages that carry only a request id:
// UNSUBSCRIBE, FETCH_CANCEL, UNSUBSCRIBE_NAMESPACE, MAX_REQUEST_ID,
// REQUESTS_BLOCKED.
type RequestID struct{ ID uint64 }

func (m *RequestID) encode(e *encoder) { e.varint(m.ID) }
func (m *RequestID) decode(d *decoder) { m.ID = d.varint() }

// PublishNamespace is PUBLISH_NAMESPACE (ANNOUNCE).
type PublishNamespace struct {
	RequestID uint64
	Namespace string
	Params    Params
}

func (m *PublishNamespace) encode(e *encoder) {
	e.varint(m.RequestID)
	if requiredDelta(e.v) {
		e.varint(0)
	}
	e.namespace(m.Namespace)
	appendParams(e, m.Params, false)
}

func (m *PublishNamespace) decode(d *decoder) {
	m.RequestID = d.varint()
	if requiredDelta(d.v) {
		d.varint()
	}
	m.Namespace = d.namespace()
	m.Params = decodeParams(d, false)
}

// PublishNamespaceDone is PUBLISH_NAMESPACE_DONE (drafts 14-16): the
// namespace in drafts 14-15, the request id in draft 16.
type PublishNamespaceDone struct {
	Namespace string
	RequestID uint64
}

func (m *PublishNamespaceDone) encode(e *encoder) {
	if e.v == Draft16 {
		e.varint(m.RequestID)
	} else {
		e.namespace(m.Namespace)
	}
}

func (m *PublishNamespaceDone) decode(d *decoder) {
	if d.v == Draft16 {
		m.RequestID = d.varint()
	} else {
		m.Namespace = d.namespace()
	}
}

// SubscribeNamespace is SUBSCRIBE_NAMESPACE (0x11 through draft 17, 0x50
// from draft 18). Options (drafts 16-17) is 1: namespaces only.
type SubscribeNamespace struct {
	RequestID uint64
	Prefix    string
	Options   uint64
	Params    Params
}

func (m *SubscribeNamespace) encode(e *encoder) {
	e.varint(m.RequestID)
	if requiredDelta(e.v) {
		e.varint(0)
	}
	e.namespace(m.Prefix)
	if e.v == Draft16 || e.v == Draft17 {
		e.varint(m.Options)
	}
	appendParams(e, m.Params, false)
}

func (m *SubscribeNamespace) decode(d *decoder) {
	m.RequestID = d.varint()
	if requiredDelta(d.v) {
		d.varint()
	}
	m.Prefix = d.namespace()
	if d.v == Draft16 || d.v == Draft17 {
		m.Options = d.varint()
	}
	m.Params = decodeParams(d, false)
}

// Namespace is NAMESPACE or NAMESPACE_DONE (drafts 16+, on the
// SUBSCRIBE_NAMESPACE stream): a suffix of the subscribed prefix.
type Namespace struct{ Suffix string }

func (m *Namespace) encode(e *encoder) { e.namespace(m.Suffix) }
func (m *Namespace) decode(d *decoder) { m.Suffix = d.namespace() }

// GoAway is GOAWAY: the peer wants the session moved to URI (empty: the
// same one) within Timeout ms (drafts 17+).
type GoAway struct {
	URI     string
	Timeout uint64
}

func (m *GoAway) encode(e *encoder) {
	e.str(m.URI)
	if e.v >= Draft17 {
		e.varint(m.Timeout)
	}
}

func (m *GoAway) decode(d *decoder) {
	m.URI = d.str()
	if d.v >= Draft17 {
		m.Timeout = d.varint()
	}
}

// Fetch types.
const (
	FetchStandalone      = 0x1
	FetchRelativeJoining = 0x2
	FetchAbsoluteJoining = 0x3
)

// Fetch is FETCH. A standalone fetch names the track and a range; End's
// Object is one past the last object, 0 for the whole end group.
type Fetch struct {
	RequestID  uint64
	Priority   uint8
	GroupOrder uint8
	Type       uint64
	Namespace  string
	Track      string
	Start, End Location
	Joining    uint64 // joining fetches: the subscription's request id
	Offset     uint64 // joining fetches: groups back, or the start group
	Params     Params
}

func (m *Fetch) encode(e *encoder) {
	e.varint(m.RequestID)
	if requiredDelta(e.v) {
		e.varint(0)
	}
	if e.v == Draft14 {
		e.u8(m.Priority)
		e.u8(m.GroupOrder)
	}
	e.varint(m.Type)
	switch m.Type {
	case FetchStandalone:
		e.namespace(m.Namespace)
		e.str(m.Track)
		e.location(m.Start)
		e.location(m.End)
	default:
		e.varint(m.Joining)
		e.varint(m.Offset)
	}
	p := m.Params
	if e.v != Draft14 {
		p = append(Params(nil), p...)
		p.SetVarint(ParamSubscriberPriority, uint64(m.Priority))
		p.SetVarint(ParamGroupOrder, uint64(m.GroupOrder))
	}
	appendParams(e, p, false)
}

func (m *Fetch) decode(d *decoder) {
	m.RequestID = d.varint()
	if requiredDelta(d.v) {
		d.varint()
	}
	m.Priority, m.GroupOrder = 128, GroupOrderAscending
	if d.v == Draft14 {
		m.Priority = d.u8()
		m.GroupOrder = d.u8()
	}
	m.Type = d.varint()
	switch m.Type {
	case FetchStandalone:
		m.Namespace = d.namespace()
		m.Track = d.str()
		m.Start = d.location()
		m.End = d.location()
	case FetchRelativeJoining, FetchAbsoluteJoining:
		m.Joining = d.varint()
		m.Offset = d.varint()
	default:
		d.fail("fetch type %d", m.Type)
		return
	}
	m.Params = decodeParams(d, false)
	if d.v != Draft14 {
		if x, ok := m.Params.Varint(ParamSubscriberPriority); ok {
			m.Priority = uint8(x)
		}
		if x, ok := m.Params.Varint(ParamGroupOrder); ok {
			m.GroupOrder = uint8(x)
		}
	}
}

// FetchOK is FETCH_OK: End is the largest location the fetch returns.
type FetchOK struct {
	RequestID  uint64 // drafts 14-16
	GroupOrder uint8  // draft 14
	EndOfTrack bool
	End        Location
	Params     Params
}

func (m *FetchOK) encode(e *encoder) {
	if e.v.RequestIDInResponses() {
		e.varint(m.RequestID)
	}
	if e.v == Draft14 {
		e.u8(m.GroupOrder)
	}
	e.bool(m.EndOfTrack)
	e.location(m.End)
	appendParams(e, m.Params, false)
}

func (m *FetchOK) decode(d *decoder) {
	if d.v.RequestIDInResponses() {
		m.RequestID = d.varint()
	}
	if d.v == Draft14 {
		m.GroupOrder = d.u8()
	}
	m.EndOfTrack = d.bool()
	m.End = d.location()
	m.Params = decodeParams(d, false)
	if d.v.readsTrackProperties() {
		decodeProperties(d)
	}
}

// RequestIDOf returns the request id a message body starts with (every
// request, and every response of drafts 14-16).
func RequestIDOf(body []byte, v Version) (uint64, error) {
	d := decoder{b: body, v: v}
	id := d.varint()
	return id, d.err
}

// AppendLocation appends a Location (group, object), as parameters such
// as LARGEST_OBJECT carry it.
func AppendLocation(b []byte, l Location, v Version) []byte {
	e := encoder{b: b, v: v}
	e.location(l)
	return e.b
}

// DecodeLocation decodes a parameter value holding exactly one Location.
func DecodeLocation(b []byte, v Version) (Location, error) {
	d := decoder{b: b, v: v}
	l := d.location()
	return l, d.finish()
}
