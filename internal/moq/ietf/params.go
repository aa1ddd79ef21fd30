package ietf

import (
	"slices"

	"github.com/moq-export/moq-export/internal/varint"
)

// Setup parameter ids (the Setup Options of drafts 17+).
const (
	SetupPath               = 0x01 // bytes: path and query (raw QUIC only)
	SetupMaxRequestID       = 0x02 // varint: the first request id the peer may not use
	SetupAuthorizationToken = 0x03 // bytes: a Token structure
	SetupMaxAuthTokenCache  = 0x04
	SetupAuthority          = 0x05 // bytes: host[:port] (raw QUIC only)
	SetupImplementation     = 0x07 // bytes: free text
)

// Message parameter ids.
const (
	ParamDeliveryTimeout    = 0x02
	ParamAuthorizationToken = 0x03
	ParamMaxCacheDuration   = 0x04
	ParamExpires            = 0x08
	ParamLargestObject      = 0x09 // location
	ParamPublisherPriority  = 0x0e // u8 (17+)
	ParamForward            = 0x10 // bool (17+)
	ParamSubscriberPriority = 0x20 // u8 (17+)
	ParamSubscriptionFilter = 0x21 // bytes: the filter
	ParamGroupOrder         = 0x22 // u8 (17+)
)

// Token alias types of the AUTHORIZATION TOKEN structure.
const tokenUseValue = 0x03

// AppendToken returns the value of an AUTHORIZATION TOKEN parameter that
// carries token itself (alias type USE_VALUE, token type 0: unspecified).
func AppendToken(b []byte, token string, v Version) []byte {
	b = AppendVarint(b, tokenUseValue, v)
	b = AppendVarint(b, 0, v)
	return append(b, token...)
}

// ParseToken reads the value of an AUTHORIZATION TOKEN parameter that
// carries a token itself (alias type USE_VALUE): its token type, then the
// token to the end. Other alias types (registered aliases) carry none.
func ParseToken(b []byte, v Version) (string, bool) {
	d := decoder{b: b, v: v}
	if d.varint() != tokenUseValue || d.err != nil {
		return "", false
	}
	d.varint() // token type: 0, unspecified, for a JWT
	if d.err != nil || len(d.b) == 0 {
		return "", false
	}
	return string(d.b), true
}

// Param is one parameter: a varint (even ids, and the u8/bool kinds of
// drafts 17+) or a byte string (Bytes non-nil).
type Param struct {
	ID    uint64
	Value uint64
	Bytes []byte
}

// Params is a parameter list in wire order.
type Params []Param

// Varint returns the value of parameter id.
func (p Params) Varint(id uint64) (uint64, bool) {
	for _, x := range p {
		if x.ID == id && x.Bytes == nil {
			return x.Value, true
		}
	}
	return 0, false
}

// Bytes returns the value of byte-string parameter id.
func (p Params) Bytes(id uint64) ([]byte, bool) {
	for _, x := range p {
		if x.ID == id && x.Bytes != nil {
			return x.Bytes, true
		}
	}
	return nil, false
}

// SetVarint sets parameter id to x.
func (p *Params) SetVarint(id, x uint64) { p.set(Param{ID: id, Value: x}) }

// SetBytes sets parameter id to b.
func (p *Params) SetBytes(id uint64, b []byte) {
	if b == nil {
		b = []byte{}
	}
	p.set(Param{ID: id, Bytes: b})
}

func (p *Params) set(x Param) {
	for i := range *p {
		if (*p)[i].ID == x.ID {
			(*p)[i] = x
			return
		}
	}
	*p = append(*p, x)
}

// paramKind says how a message parameter's value is laid out.
type paramKind int

const (
	kindVarint paramKind = iota
	kindBytes            // length-prefixed (also locations)
	kindByte             // one raw byte (u8 and bool of drafts 17+)
	kindFilter           // draft 22's LOCATION_FILTER: a type and its fields, no length
)

func messageParamKind(id uint64, v Version) paramKind {
	if id == ParamSubscriptionFilter && v.typedFilter() {
		return kindFilter
	}
	if v.typedParams() {
		switch id {
		case ParamPublisherPriority, ParamForward, ParamSubscriberPriority, ParamGroupOrder:
			return kindByte
		}
	}
	if id%2 == 0 {
		return kindVarint
	}
	return kindBytes
}

func setupParamKind(id uint64, _ Version) paramKind {
	if id%2 == 0 {
		return kindVarint
	}
	return kindBytes
}

// appendParams writes p: a count (except SETUP in drafts 17+), then each
// parameter with its type (delta-encoded in ascending order from draft
// 16) and value.
func appendParams(e *encoder, p Params, setup bool) {
	kind := messageParamKind
	if setup {
		kind = setupParamKind
	}
	if !(setup && e.v >= Draft17) {
		e.varint(uint64(len(p)))
	}
	if e.v.deltaParams() {
		p = slices.Clone(p)
		slices.SortStableFunc(p, func(a, b Param) int {
			switch {
			case a.ID < b.ID:
				return -1
			case a.ID > b.ID:
				return 1
			}
			return 0
		})
	}
	var prev uint64
	for _, x := range p {
		if e.v.deltaParams() {
			e.varint(x.ID - prev)
			prev = x.ID
		} else {
			e.varint(x.ID)
		}
		switch kind(x.ID, e.v) {
		case kindVarint:
			e.varint(x.Value)
		case kindByte:
			e.u8(uint8(x.Value))
		case kindFilter:
			e.b = append(e.b, x.Bytes...)
		default:
			e.bytes(x.Bytes)
		}
	}
}

// decodeParams reads a parameter list written by appendParams. Duplicate
// ids are an error.
func decodeParams(d *decoder, setup bool) Params {
	kind := messageParamKind
	if setup {
		kind = setupParamKind
	}
	untilEnd := setup && d.v >= Draft17
	var n uint64
	if !untilEnd {
		n = d.varint()
		if n > MaxParams {
			d.fail("%d parameters", n)
			return nil
		}
	}
	var p Params
	var prev uint64
	for i := uint64(0); d.err == nil; i++ {
		if untilEnd {
			if len(d.b) == 0 {
				break
			}
			if i == MaxParams {
				d.fail("more than %d parameters", MaxParams)
				break
			}
		} else if i == n {
			break
		}
		id := d.varint()
		if d.v.deltaParams() {
			if id > varint.Max-prev {
				d.fail("parameter type overflows")
				return nil
			}
			id += prev
			prev = id
		}
		x := Param{ID: id}
		switch kind(id, d.v) {
		case kindVarint:
			x.Value = d.varint()
		case kindByte:
			x.Value = uint64(d.u8())
		case kindFilter:
			x.Bytes = d.typedFilter()
		default:
			x.Bytes = d.bytes()
			if x.Bytes == nil {
				x.Bytes = []byte{}
			}
		}
		if d.err != nil {
			break
		}
		if slices.ContainsFunc(p, func(y Param) bool { return y.ID == id }) {
			d.fail("duplicate parameter %#x", id)
			break
		}
		p = append(p, x)
	}
	return p
}
