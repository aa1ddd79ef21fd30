package h26x

import (
	"errors"
	"fmt"
)

// ErrMalformedAU means an H.264/H.265 access unit that is not what its
// codec says: its NAL unit lengths do not add up to the payload, and it is
// no Annex B stream either.
var ErrMalformedAU = errors.New("NAL unit lengths do not add up")

// CheckAccessUnit reports whether p holds NAL units of codec c: length
// prefixed with lengthSize-byte lengths (1, 2 or 4, from the decoder
// configuration record; 4 when there is none) that end exactly at the end
// of p, each with a valid NAL unit header, or an Annex B stream (start
// codes). A muxer given anything else writes a frame no decoder reads.
func CheckAccessUnit(c Codec, p []byte, lengthSize int) error {
	if lengthSize != 1 && lengthSize != 2 {
		lengthSize = 4
	}
	q := p
	for len(q) > 0 {
		if len(q) < lengthSize {
			break
		}
		n := 0
		for _, b := range q[:lengthSize] {
			n = n<<8 | int(b)
		}
		q = q[lengthSize:]
		if n == 0 || n > len(q) || !validHeader(c, q[:n]) {
			break
		}
		q = q[n:]
	}
	if len(q) == 0 && len(p) > 0 {
		return nil
	}
	if annexB(c, p) {
		return nil
	}
	return fmt.Errorf("%w (%d bytes, first % x)", ErrMalformedAU, len(p), p[:min(len(p), 6)])
}
