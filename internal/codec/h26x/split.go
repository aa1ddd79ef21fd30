package h26x

import (
	"bytes"
	"fmt"
	"slices"
)

// SplitAnnexB splits an Annex B byte stream (NAL units after 3- or 4-byte
// start codes) into NAL units. Leading zero bytes before the first start
// code and trailing zero bytes after a unit (trailing_zero_8bits) are
// dropped, as are empty units. The units alias b. An empty b gives no units
// and no error; a non-empty b that does not begin with a start code gives an
// error wrapping ErrNoStartCode.
func SplitAnnexB(b []byte) ([][]byte, error) {
	u, err := splitAnnexB(nil, b)
	if err != nil {
		return nil, err
	}
	return u, nil
}

var startCode = []byte{0, 0, 1}

func splitAnnexB(dst [][]byte, b []byte) ([][]byte, error) {
	if len(b) == 0 {
		return dst, nil
	}
	i := 0
	for i < len(b) && b[i] == 0 {
		i++
	}
	if i < 2 || i == len(b) || b[i] != 1 {
		return dst, fmt.Errorf("%w (first bytes % x)", ErrNoStartCode, b[:min(len(b), 4)])
	}
	pos := i + 1
	for pos < len(b) {
		next := bytes.Index(b[pos:], startCode)
		end := len(b)
		if next >= 0 {
			end = pos + next
		}
		unit := b[pos:end]
		for len(unit) > 0 && unit[len(unit)-1] == 0 {
			unit = unit[:len(unit)-1]
		}
		if len(unit) > 0 {
			dst = append(dst, unit)
		}
		if next < 0 {
			break
		}
		pos = end + len(startCode)
	}
	return dst, nil
}

// SplitAVCC splits length-prefixed NAL units (AVCC/HVCC sample format) with
// big-endian lengths of lengthSize bytes (1, 2, 3 or 4; the decoder
// configuration record's lengthSizeMinusOne+1). Zero-length units are
// skipped. The units alias b. A length running past the end of b gives an
// error wrapping ErrTruncated.
func SplitAVCC(b []byte, lengthSize int) ([][]byte, error) {
	u, err := splitAVCC(nil, b, lengthSize)
	if err != nil {
		return nil, err
	}
	return u, nil
}

func splitAVCC(dst [][]byte, b []byte, lengthSize int) ([][]byte, error) {
	if lengthSize < 1 || lengthSize > 4 {
		return dst, fmt.Errorf("%w: NAL unit length size %d", ErrBadConfig, lengthSize)
	}
	pos := 0
	for pos < len(b) {
		if len(b)-pos < lengthSize {
			return dst, fmt.Errorf("%w: %d-byte length prefix at offset %d of %d", ErrTruncated, lengthSize, pos, len(b))
		}
		n := 0
		for _, c := range b[pos : pos+lengthSize] {
			n = n<<8 | int(c)
		}
		pos += lengthSize
		if n > len(b)-pos {
			return dst, fmt.Errorf("%w: NAL unit of %d bytes at offset %d, %d left", ErrTruncated, n, pos, len(b)-pos)
		}
		if n > 0 {
			dst = append(dst, b[pos:pos+n])
		}
		pos += n
	}
	return dst, nil
}

// AppendAVCC appends nalus to dst, each after a 4-byte big-endian length, and
// returns the extended slice.
func AppendAVCC(dst []byte, nalus [][]byte) []byte {
	dst = grow(dst, nalus)
	for _, n := range nalus {
		l := len(n)
		dst = append(dst, byte(l>>24), byte(l>>16), byte(l>>8), byte(l))
		dst = append(dst, n...)
	}
	return dst
}

// AppendAnnexB appends nalus to dst, each after a 4-byte start code
// 00 00 00 01, and returns the extended slice.
func AppendAnnexB(dst []byte, nalus [][]byte) []byte {
	dst = grow(dst, nalus)
	for _, n := range nalus {
		dst = append(dst, 0, 0, 0, 1)
		dst = append(dst, n...)
	}
	return dst
}

func grow(dst []byte, nalus [][]byte) []byte {
	n := 0
	for _, u := range nalus {
		n += 4 + len(u)
	}
	return slices.Grow(dst, n)
}
