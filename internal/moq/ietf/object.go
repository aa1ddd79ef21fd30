package ietf

import (
	"bufio"
	"fmt"
	"io"

	"github.com/moq-export/moq-export/internal/varint"
)

// Data stream types other than subgroups.
const (
	StreamFetch = 0x05 // FETCH_HEADER
)

// Object statuses (of objects with an empty payload).
const (
	StatusNormal       = 0x0
	StatusDoesNotExist = 0x1
	StatusEndOfGroup   = 0x3
	StatusEndOfTrack   = 0x4
)

// Object extension (property) ids this package reads.
const (
	ExtTimescale     = 0x08
	ExtTimestamp     = 0x10
	ExtTimestampLoc3 = 0x06 // draft-ietf-moq-loc-03's Timestamp
)

const firstObjectBit = 0x40

// SubgroupHeader is SUBGROUP_HEADER, the start of a subgroup stream.
type SubgroupHeader struct {
	TrackAlias uint64
	Group      uint64
	Subgroup   uint64
	Priority   uint8
	// HasPriority is false for the types without a priority field (the
	// subscription's priority applies).
	HasPriority bool
	// Extensions says every object carries an extension block.
	Extensions bool
	// EndOfGroup says this subgroup holds the group's last object.
	EndOfGroup bool
	// SubgroupIsFirstObject says the subgroup id is the first object's id
	// (no Subgroup field on the wire).
	SubgroupIsFirstObject bool
	// ExplicitSubgroup says the Subgroup field is on the wire.
	ExplicitSubgroup bool
	// FirstObject (drafts 18+) says the stream starts at the subgroup's
	// first object; always true before draft 18.
	FirstObject bool
}

// IsSubgroupType reports whether stream type t starts a subgroup stream
// in v.
func IsSubgroupType(t uint64, v Version) bool {
	_, err := subgroupFlags(t, v)
	return err == nil
}

func subgroupFlags(t uint64, v Version) (SubgroupHeader, error) {
	h := SubgroupHeader{FirstObject: true}
	if v.firstObjectBit() {
		h.FirstObject = t&firstObjectBit != 0
		t &^= firstObjectBit
	}
	switch {
	case t >= 0x10 && t <= 0x1f:
		h.HasPriority = true
	case t >= 0x30 && t <= 0x3f:
		t -= 0x20
	default:
		return h, fmt.Errorf("%w: stream type %#x", ErrDecode, t)
	}
	h.Extensions = t&0x01 != 0
	h.SubgroupIsFirstObject = t&0x02 != 0
	h.ExplicitSubgroup = t&0x04 != 0
	h.EndOfGroup = t&0x08 != 0
	if h.SubgroupIsFirstObject && h.ExplicitSubgroup {
		return h, fmt.Errorf("%w: subgroup stream type %#x", ErrDecode, t)
	}
	return h, nil
}

// Type returns the stream type of h in v.
func (h SubgroupHeader) Type(v Version) uint64 {
	t := uint64(0x30)
	if h.HasPriority {
		t = 0x10
	}
	if h.Extensions {
		t |= 0x01
	}
	if h.SubgroupIsFirstObject {
		t |= 0x02
	} else if h.ExplicitSubgroup {
		t |= 0x04
	}
	if h.EndOfGroup {
		t |= 0x08
	}
	if v.firstObjectBit() && h.FirstObject {
		t |= firstObjectBit
	}
	return t
}

// AppendSubgroupHeader appends h, stream type first.
func AppendSubgroupHeader(b []byte, h SubgroupHeader, v Version) []byte {
	e := encoder{b: b, v: v}
	e.varint(h.Type(v))
	e.varint(h.TrackAlias)
	e.varint(h.Group)
	if h.ExplicitSubgroup && !h.SubgroupIsFirstObject {
		e.varint(h.Subgroup)
	}
	if h.HasPriority {
		e.u8(h.Priority)
	}
	return e.b
}

// ReadSubgroupHeader reads the rest of a subgroup header whose stream
// type t was read already.
func ReadSubgroupHeader(r io.ByteReader, t uint64, v Version) (SubgroupHeader, error) {
	h, err := subgroupFlags(t, v)
	if err != nil {
		return h, err
	}
	if h.TrackAlias, err = readField(r, v); err != nil {
		return h, err
	}
	if h.Group, err = readField(r, v); err != nil {
		return h, err
	}
	if h.ExplicitSubgroup {
		if h.Subgroup, err = readField(r, v); err != nil {
			return h, err
		}
	}
	if h.HasPriority {
		c, err := r.ReadByte()
		if err != nil {
			return h, unexpected(err)
		}
		h.Priority = c
	}
	return h, nil
}

func readField(r io.ByteReader, v Version) (uint64, error) {
	x, err := ReadVarint(r, v)
	return x, unexpected(err)
}

// unexpected turns an io.EOF inside a structure into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Object is one object of a data stream. An empty Payload comes with a
// Status; Extensions is the raw extension block.
type Object struct {
	Group      uint64
	ID         uint64
	Extensions []byte
	Payload    []byte
	Status     uint64
}

// ObjectReader reads the objects of one subgroup stream after its header.
type ObjectReader struct {
	R      *bufio.Reader
	V      Version
	Header SubgroupHeader

	n    uint64 // objects read
	prev uint64 // previous object id
}

// Next returns the next object: io.EOF at the clean end of the stream,
// io.ErrUnexpectedEOF inside an object. Object ids are delta-encoded: the
// first is absolute, each later one is the previous plus the delta plus
// one.
func (o *ObjectReader) Next() (Object, error) {
	var obj Object
	delta, err := ReadVarint(o.R, o.V)
	if err != nil {
		return obj, err
	}
	if o.n == 0 {
		obj.ID = delta
	} else {
		if delta >= varint.Max-o.prev {
			return obj, fmt.Errorf("%w: object id overflows", ErrDecode)
		}
		obj.ID = o.prev + delta + 1
	}
	obj.Group = o.Header.Group
	if o.Header.Extensions {
		if obj.Extensions, err = readBlock(o.R, o.V, MaxExtensions); err != nil {
			return obj, err
		}
	}
	if obj.Payload, obj.Status, err = readPayload(o.R, o.V, true); err != nil {
		return obj, err
	}
	o.n++
	o.prev = obj.ID
	return obj, nil
}

// readBlock reads a varint length and that many bytes (at most limit).
func readBlock(r *bufio.Reader, v Version, limit uint64) ([]byte, error) {
	n, err := readField(r, v)
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("%w: block of %d bytes", ErrTooLarge, n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, unexpected(err)
	}
	return b, nil
}

// readPayload reads Object Payload Length, the status of an empty object
// (when withStatus) and the payload.
func readPayload(r *bufio.Reader, v Version, withStatus bool) ([]byte, uint64, error) {
	p, err := readBlock(r, v, MaxObject)
	if err != nil {
		return nil, 0, err
	}
	if len(p) > 0 || !withStatus {
		return p, StatusNormal, nil
	}
	st, err := readField(r, v)
	if err != nil {
		return nil, 0, err
	}
	switch st {
	case StatusNormal, StatusDoesNotExist, StatusEndOfGroup, StatusEndOfTrack:
	default:
		return nil, 0, fmt.Errorf("%w: object status %#x", ErrDecode, st)
	}
	return p, st, nil
}

// AppendObject appends one object of a subgroup stream: delta is the
// object id for the stream's first object, the id minus the previous id
// minus one afterwards.
func AppendObject(b []byte, h SubgroupHeader, delta uint64, ext, payload []byte, status uint64, v Version) []byte {
	e := encoder{b: b, v: v}
	e.varint(delta)
	if h.Extensions {
		e.bytes(ext)
	}
	e.bytes(payload)
	if len(payload) == 0 {
		e.varint(status)
	}
	return e.b
}

// AppendTimestampExt03 appends an extension block holding only the
// Timestamp property ts under draft-ietf-moq-loc-03's id (0x06), as
// MediaMTX writes it (in its media clock).
func AppendTimestampExt03(b []byte, ts uint64, v Version) []byte {
	b = AppendVarint(b, ExtTimestampLoc3, v)
	return AppendVarint(b, ts, v)
}

// AppendTimestampExt appends an extension block holding only the
// Timestamp property ts (in the track's timescale).
func AppendTimestampExt(b []byte, ts uint64, v Version) []byte {
	b = AppendVarint(b, ExtTimestamp, v)
	return AppendVarint(b, ts, v)
}

// ObjectTimestamp reads the Timestamp property of an extension block:
// ts in units of scale (the block's own Timescale property, else
// defaultScale). ok is false when the block has no Timestamp.
func ObjectTimestamp(ext []byte, defaultScale uint64, v Version) (ts, scale uint64, ok bool, err error) {
	d := decoder{b: ext, v: v}
	scale = defaultScale
	var prev uint64
	for i := 0; len(d.b) > 0 && d.err == nil; i++ {
		id := d.varint()
		if v.deltaProperties() && i > 0 {
			if id > varint.Max-prev {
				return 0, 0, false, fmt.Errorf("%w: property type overflows", ErrDecode)
			}
			id += prev
		}
		prev = id
		if id%2 == 1 {
			d.bytes()
			continue
		}
		x := d.varint()
		switch id {
		case ExtTimestamp, ExtTimestampLoc3:
			ts, ok = x, true
		case ExtTimescale:
			if x == 0 {
				d.fail("timescale 0")
			}
			scale = x
		}
	}
	if err := d.finish(); err != nil {
		return 0, 0, false, err
	}
	return ts, scale, ok, nil
}

// FetchHeader is FETCH_HEADER, the start of a fetch stream (after its
// stream type StreamFetch).
type FetchHeader struct{ RequestID uint64 }

// AppendFetchHeader appends the stream type and the header.
func AppendFetchHeader(b []byte, h FetchHeader, v Version) []byte {
	b = AppendVarint(b, StreamFetch, v)
	return AppendVarint(b, h.RequestID, v)
}

// Serialization flags of fetch objects (drafts 15+).
const (
	fetchSubgroupBits = 0x03
	fetchObjectID     = 0x04
	fetchGroupID      = 0x08
	fetchPriority     = 0x10
	fetchExtensions   = 0x20
	fetchDatagram     = 0x40
)

// FetchObjectReader reads the objects of one fetch stream after its
// header.
type FetchObjectReader struct {
	R *bufio.Reader
	V Version

	n                 uint64
	group, sub, objID uint64
}

// Next returns the next object (io.EOF at the clean end). End of Range
// markers (drafts 15+) are skipped.
func (f *FetchObjectReader) Next() (Object, error) {
	var obj Object
	if f.V == Draft14 {
		// Group, Subgroup, Object, Priority, extensions, payload.
		g, err := ReadVarint(f.R, f.V)
		if err != nil {
			return obj, err
		}
		obj.Group = g
		if _, err = readField(f.R, f.V); err != nil {
			return obj, err
		}
		if obj.ID, err = readField(f.R, f.V); err != nil {
			return obj, err
		}
		if _, err := f.R.ReadByte(); err != nil {
			return obj, unexpected(err)
		}
		if obj.Extensions, err = readBlock(f.R, f.V, MaxExtensions); err != nil {
			return obj, err
		}
		if obj.Payload, obj.Status, err = readPayload(f.R, f.V, true); err != nil {
			return obj, err
		}
		return obj, nil
	}
	for {
		flags, err := ReadVarint(f.R, f.V)
		if err != nil {
			return obj, err
		}
		if flags >= 0x80 {
			switch flags {
			case 0x8c, 0x10c, 0x20c: // End of Range: group and object deltas
				if _, err := readField(f.R, f.V); err != nil {
					return obj, err
				}
				if _, err := readField(f.R, f.V); err != nil {
					return obj, err
				}
				continue
			}
			return obj, fmt.Errorf("%w: fetch serialization flags %#x", ErrDecode, flags)
		}
		first := f.n == 0
		if flags&fetchGroupID != 0 {
			g, err := readField(f.R, f.V)
			if err != nil {
				return obj, err
			}
			if first {
				f.group = g
			} else {
				// A later group: the previous plus the delta plus one
				// (ascending order, which this reader asks for).
				f.group += g + 1
			}
		} else if first {
			return obj, fmt.Errorf("%w: first fetch object without a group id", ErrDecode)
		}
		if flags&fetchDatagram == 0 && flags&fetchSubgroupBits == 3 {
			if f.sub, err = readField(f.R, f.V); err != nil {
				return obj, err
			}
		}
		switch {
		case flags&fetchObjectID != 0:
			id, err := readField(f.R, f.V)
			if err != nil {
				return obj, err
			}
			if flags&fetchGroupID != 0 {
				f.objID = id
			} else {
				f.objID += id
			}
		case first:
			return obj, fmt.Errorf("%w: first fetch object without an object id", ErrDecode)
		default:
			f.objID++
		}
		if flags&fetchPriority != 0 {
			if _, err := f.R.ReadByte(); err != nil {
				return obj, unexpected(err)
			}
		}
		if flags&fetchExtensions != 0 {
			if obj.Extensions, err = readBlock(f.R, f.V, MaxExtensions); err != nil {
				return obj, err
			}
		}
		if obj.Payload, _, err = readPayload(f.R, f.V, false); err != nil {
			return obj, err
		}
		f.n++
		obj.Group, obj.ID = f.group, f.objID
		return obj, nil
	}
}

// FetchObjectWriter appends the objects of one fetch stream, in
// ascending group order.
type FetchObjectWriter struct {
	V Version

	n             uint64
	group, object uint64
}

// Append appends object (group, object) with its extension block (nil:
// none) and payload.
func (w *FetchObjectWriter) Append(b []byte, group, object uint64, ext, payload []byte) []byte {
	e := encoder{b: b, v: w.V}
	if w.V == Draft14 {
		e.varint(group)
		e.varint(0)
		e.varint(object)
		e.u8(0)
		e.bytes(ext)
		e.bytes(payload)
		if len(payload) == 0 {
			e.varint(StatusNormal)
		}
		return e.b
	}
	first := w.n == 0
	var flags uint64
	switch {
	case first:
		flags = fetchGroupID | fetchObjectID | fetchPriority
	case group != w.group:
		flags = fetchGroupID | fetchObjectID
	case object != w.object+1:
		flags = fetchObjectID
	}
	if ext != nil {
		flags |= fetchExtensions
	}
	e.varint(flags)
	if flags&fetchGroupID != 0 {
		if first {
			e.varint(group)
		} else {
			e.varint(group - w.group - 1)
		}
	}
	if flags&fetchObjectID != 0 {
		if flags&fetchGroupID != 0 {
			e.varint(object)
		} else {
			e.varint(object - w.object)
		}
	}
	if flags&fetchPriority != 0 {
		e.u8(0)
	}
	if ext != nil {
		e.bytes(ext)
	}
	e.bytes(payload)
	w.n++
	w.group, w.object = group, object
	return e.b
}
