// Package container decodes and encodes the hang frame payload forms that
// carry their own timestamp: "legacy" (a varint microsecond timestamp before
// the codec payload) and "loc" (draft-ietf-moq-loc-04 properties before the
// codec payload). Hand-written: both are a few varints, and no Go library
// implements either.
package container

import (
	"errors"
	"fmt"
	"math"

	"github.com/moq-export/moq-export/catalog"

	"github.com/moq-export/moq-export/subscribe/internal/wire"
)

// ErrMalformed means a payload that does not parse.
var ErrMalformed = errors.New("container: malformed payload")

// Kinds of container, as the catalog names them (catalog.ContainerKind).
const (
	Legacy = string(catalog.ContainerLegacy)
	LOC    = string(catalog.ContainerLOC)
	CMAF   = string(catalog.ContainerCMAF)
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
	ts, n, err := wire.ParseVarint(p)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: legacy timestamp: %w", ErrMalformed, err)
	}
	return int64(ts), p[n:], nil
}

// AppendLegacy appends a legacy payload. Negative timestamps are written
// as 0 (the varint is unsigned).
func AppendLegacy(b []byte, ts int64, codec []byte) []byte {
	b = wire.AppendVarint(b, uint64(max(ts, 0)))
	return append(b, codec...)
}

// LegacyLen returns the size AppendLegacy produces.
func LegacyLen(ts int64, codec []byte) int { return wire.VarintLen(uint64(max(ts, 0))) + len(codec) }

// DecodeLOC splits a LOC payload into its timestamp (converted to
// microseconds from the frame's timescale, microseconds by default) and
// codec payload. The codec payload aliases p.
func DecodeLOC(p []byte) (int64, []byte, error) {
	plen, n, err := wire.ParseVarint(p)
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
		delta, n, err := wire.ParseVarint(props)
		if err != nil {
			return 0, nil, fmt.Errorf("%w: loc property type: %w", ErrMalformed, err)
		}
		props = props[n:]
		typ += delta
		if typ%2 == 1 {
			l, n, err := wire.ParseVarint(props)
			if err != nil || l > uint64(len(props)-n) {
				return 0, nil, fmt.Errorf("%w: loc property %#x length", ErrMalformed, typ)
			}
			props = props[n+int(l):]
			continue
		}
		v, n, err := wire.ParseVarint(props)
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
		scale = 1_000_000
	}
	us, ok := Rescale(ts, scale)
	if !ok {
		return 0, nil, fmt.Errorf("%w: loc timestamp %d/%d out of range", ErrMalformed, ts, scale)
	}
	return us, codec, nil
}

// AppendLOC appends a LOC payload with only the timestamp property (in
// microseconds), as moq-mux writes it.
func AppendLOC(b []byte, ts int64, codec []byte) []byte {
	var props []byte
	props = wire.AppendVarint(props, locTimestamp)
	props = wire.AppendVarint(props, uint64(max(ts, 0)))
	b = wire.AppendVarint(b, uint64(len(props)))
	b = append(b, props...)
	return append(b, codec...)
}

// Rescale converts v units of 1/scale seconds to microseconds without
// overflow; ok is false when the result does not fit an int64 or scale is 0.
func Rescale(v, scale uint64) (int64, bool) {
	if scale == 0 {
		return 0, false
	}
	if scale == 1_000_000 {
		if v > math.MaxInt64 {
			return 0, false
		}
		return int64(v), true
	}
	whole := v / scale
	if whole > math.MaxInt64/1_000_000 {
		return 0, false
	}
	rem := v % scale
	// rem < scale, so rem*1e6 fits unless scale is above ~1.8e13.
	var frac uint64
	if rem <= math.MaxUint64/1_000_000 {
		frac = rem * 1_000_000 / scale
	} else {
		frac = uint64(float64(rem) * 1e6 / float64(scale))
	}
	// whole*1e6 fits, but the fraction can still push the sum past MaxInt64.
	if whole*1_000_000 > math.MaxInt64-frac {
		return 0, false
	}
	return int64(whole*1_000_000 + frac), true
}

// RescaleSigned is Rescale for signed values.
func RescaleSigned(v int64, scale uint64) (int64, bool) {
	if v >= 0 {
		return Rescale(uint64(v), scale)
	}
	r, ok := Rescale(uint64(-v), scale)
	return -r, ok
}
