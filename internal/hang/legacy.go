package hang

import (
	"fmt"

	"github.com/moq-export/moq-export/internal/varint"
)

// LOC property ids.
const (
	locTimescale   = 0x08
	locTimestamp   = 0x10
	locTimestamp03 = 0x06
)

// maxProperties bounds the LOC property block.
const maxProperties = 64 << 10

// DecodeLegacy splits a legacy payload into its timestamp (microseconds)
// and codec payload. The codec payload aliases p.
func DecodeLegacy(p []byte) (int64, []byte, error) {
	ts, n, err := varint.Parse(p)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: legacy timestamp: %w", ErrMalformed, err)
	}
	return int64(ts), p[n:], nil
}

// AppendLegacy appends a legacy payload. Negative timestamps are written
// as 0 (the varint is unsigned).
func AppendLegacy(b []byte, ts int64, codec []byte) []byte {
	b = varint.Append(b, uint64(max(ts, 0)))
	return append(b, codec...)
}

// LegacyLen returns the size AppendLegacy produces.
func LegacyLen(ts int64, codec []byte) int { return varint.Len(uint64(max(ts, 0))) + len(codec) }

// DecodeLOC splits a LOC payload into its timestamp (converted to
// microseconds from the frame's timescale, microseconds by default) and
// codec payload. The codec payload aliases p.
func DecodeLOC(p []byte) (int64, []byte, error) { return DecodeLOCAt(p, Timescale) }

// DecodeLOCAt is DecodeLOC with defaultScale the timescale of a frame that
// names none (the track's, from its catalog).
func DecodeLOCAt(p []byte, defaultScale uint64) (int64, []byte, error) {
	plen, n, err := varint.Parse(p)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: loc properties length: %w", ErrMalformed, err)
	}
	p = p[n:]
	if plen > uint64(len(p)) || plen > maxProperties {
		return 0, nil, fmt.Errorf("%w: loc properties of %d bytes", ErrMalformed, plen)
	}
	props, codec := p[:plen], p[plen:]
	var typ, ts, scale uint64
	var haveTS bool
	for len(props) > 0 {
		delta, n, err := varint.Parse(props)
		if err != nil {
			return 0, nil, fmt.Errorf("%w: loc property type: %w", ErrMalformed, err)
		}
		props = props[n:]
		typ += delta
		if typ%2 == 1 {
			l, n, err := varint.Parse(props)
			if err != nil || l > uint64(len(props)-n) {
				return 0, nil, fmt.Errorf("%w: loc property %#x length", ErrMalformed, typ)
			}
			props = props[n+int(l):]
			continue
		}
		v, n, err := varint.Parse(props)
		if err != nil {
			return 0, nil, fmt.Errorf("%w: loc property %#x: %w", ErrMalformed, typ, err)
		}
		props = props[n:]
		switch typ {
		case locTimestamp, locTimestamp03:
			ts, haveTS = v, true
		case locTimescale:
			scale = v
		}
	}
	if !haveTS {
		return 0, nil, fmt.Errorf("%w: loc frame without timestamp", ErrMalformed)
	}
	if scale == 0 {
		scale = defaultScale
	}
	us, ok := Rescale(ts, scale)
	if !ok {
		return 0, nil, fmt.Errorf("%w: loc timestamp %d/%d out of range", ErrMalformed, ts, scale)
	}
	return us, codec, nil
}

// locPropsLen is the size of the property block AppendLOC writes.
func locPropsLen(ts int64) int { return varint.Len(locTimestamp) + varint.Len(uint64(max(ts, 0))) }

// AppendLOC appends a LOC payload with only the timestamp property (in
// microseconds), as moq-mux writes it.
func AppendLOC(b []byte, ts int64, codec []byte) []byte {
	b = varint.Append(b, uint64(locPropsLen(ts)))
	b = varint.Append(b, locTimestamp)
	b = varint.Append(b, uint64(max(ts, 0)))
	return append(b, codec...)
}

// LOCLen returns the size AppendLOC produces.
func LOCLen(ts int64, codec []byte) int {
	n := locPropsLen(ts)
	return varint.Len(uint64(n)) + n + len(codec)
}
