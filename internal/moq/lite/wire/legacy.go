package wire

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/moq-export/moq-export/internal/varint"
)

// The legacy SETUP exchange (ALPNLegacy, or a WebTransport session without
// a protocol): the client opens a bidi stream with CLIENT_SETUP, the server
// answers SERVER_SETUP with the version it chose. Both use the draft-14
// framing: a varint type (not length-prefixed), a 16-bit big-endian length,
// then the body. If a moq-lite version wins, the stream stays open as the
// session stream carrying SESSION_INFO (ordinary length-prefixed messages).

// Stream types of the legacy SETUP exchange.
const (
	StreamClientSetup = 0x20
	StreamServerSetup = 0x21
)

// Legacy SETUP parameter ids (draft-14 setup parameters). Even ids carry a
// varint, odd ids bytes.
const (
	LegacyParamPath           = 0x01
	LegacyParamMaxRequestID   = 0x02
	LegacyParamImplementation = 0x07
)

// MaxLegacyVersions bounds the version list of CLIENT_SETUP.
const MaxLegacyVersions = 128

// ClientSetup offers versions in the legacy exchange.
type ClientSetup struct {
	Versions []uint64
	Params   []Param
}

// ServerSetup answers ClientSetup with the chosen version.
type ServerSetup struct {
	Version uint64
	Params  []Param
}

// Append appends the 16-bit length and the body (without the stream type).
func (m *ClientSetup) Append(b []byte) []byte {
	body := varint.Append(nil, uint64(len(m.Versions)))
	for _, v := range m.Versions {
		body = varint.Append(body, v)
	}
	return appendLegacyMessage(b, appendLegacyParams(body, m.Params))
}

// Decode parses a body.
func (m *ClientSetup) Decode(body []byte) error {
	d := dec{b: body}
	n := d.varint()
	if d.err == nil && n > MaxLegacyVersions {
		d.fail("%d versions", n)
	}
	m.Versions = nil
	for i := uint64(0); i < n && d.err == nil; i++ {
		m.Versions = append(m.Versions, d.varint())
	}
	m.Params = decodeLegacyParams(&d)
	return d.done()
}

// Append appends the 16-bit length and the body (without the stream type).
func (m *ServerSetup) Append(b []byte) []byte {
	return appendLegacyMessage(b, appendLegacyParams(varint.Append(nil, m.Version), m.Params))
}

// Decode parses a body.
func (m *ServerSetup) Decode(body []byte) error {
	d := dec{b: body}
	m.Version = d.varint()
	m.Params = decodeLegacyParams(&d)
	return d.done()
}

// LegacyVarintParam returns a varint parameter (even id) of the legacy
// exchange.
func LegacyVarintParam(id, v uint64) Param { return Param{ID: id, Value: varint.Append(nil, v)} }

// appendLegacyParams appends count and parameters: an even id's Value is
// its varint as encoded, an odd id's Value is length-prefixed.
func appendLegacyParams(b []byte, ps []Param) []byte {
	b = varint.Append(b, uint64(len(ps)))
	for _, p := range ps {
		b = varint.Append(b, p.ID)
		if p.ID%2 == 1 {
			b = varint.Append(b, uint64(len(p.Value)))
		}
		b = append(b, p.Value...)
	}
	return b
}

func decodeLegacyParams(d *dec) []Param {
	n := d.varint()
	if d.err == nil && n > MaxSetupParams {
		d.fail("%d setup parameters", n)
	}
	var ps []Param
	for i := uint64(0); i < n && d.err == nil; i++ {
		id := d.varint()
		var v []byte
		if id%2 == 1 {
			v = d.bytes()
		} else {
			before := d.b
			d.varint()
			v = before[:len(before)-len(d.b)]
		}
		for _, p := range ps {
			if p.ID == id && d.err == nil {
				d.fail("duplicate setup parameter %d", id)
			}
		}
		ps = append(ps, Param{ID: id, Value: v})
	}
	return ps
}

func appendLegacyMessage(b, body []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(body)))
	return append(b, body...)
}

// ReadLegacyMessage reads one 16-bit length-prefixed body. A clean EOF
// before the length is io.EOF.
func ReadLegacyMessage(r ByteReader) ([]byte, error) {
	var l [2]byte
	if _, err := io.ReadFull(r, l[:1]); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(r, l[1:]); err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	body := make([]byte, binary.BigEndian.Uint16(l[:]))
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("legacy SETUP: %w", err)
	}
	return body, nil
}

// SessionInfo is the lite-01/02 session stream message: the sender's
// estimated bitrate (bit/s).
type SessionInfo struct {
	Bitrate uint64
}

// Append appends the length-prefixed message.
func (m *SessionInfo) Append(b []byte) []byte {
	return appendMessage(b, func(b []byte) []byte { return varint.Append(b, m.Bitrate) })
}

// Decode parses a message body.
func (m *SessionInfo) Decode(body []byte) error {
	d := dec{b: body}
	m.Bitrate = d.varint()
	return d.done()
}
