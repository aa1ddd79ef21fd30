package codecconf

import (
	"encoding/binary"
	"fmt"
)

// opusSurround is the Vorbis channel mapping (RFC 7845 section 5.1.1.2)
// as libopus' surround encoder lays it out for 3 to 8 channels: stream
// count, coupled stream count, then the channel mapping.
var opusSurround = [...][]byte{
	3: {2, 1, 0, 2, 1},
	4: {2, 2, 0, 1, 2, 3},
	5: {3, 2, 0, 4, 1, 2, 3},
	6: {4, 2, 0, 4, 1, 2, 3, 5},
	7: {4, 3, 0, 4, 1, 2, 3, 5, 6},
	8: {5, 3, 0, 6, 1, 2, 3, 4, 5, 7},
}

// OpusHead builds an Opus identification header (RFC 7845 section 5.1)
// with output gain 0: channel mapping family 0 for one or two channels,
// family 1 (Vorbis order, as libopus' surround encoder lays it out) for
// three to eight. inputRate is informative; 0 means unknown. Other channel
// counts give an error wrapping ErrMissingFields.
func OpusHead(channels int, preSkip uint16, inputRate uint32) ([]byte, error) {
	if channels < 1 || channels > 8 {
		return nil, fmt.Errorf("%w: cannot build an OpusHead for %d channels", ErrMissingFields, channels)
	}
	h := make([]byte, 0, 19+2+8)
	h = append(h, "OpusHead"...)
	h = append(h, 1, byte(channels))
	h = binary.LittleEndian.AppendUint16(h, preSkip)
	h = binary.LittleEndian.AppendUint32(h, inputRate)
	h = append(h, 0, 0) // output gain
	if channels <= 2 {
		return append(h, 0), nil
	}
	h = append(h, 1) // mapping family 1: Vorbis order
	return append(h, opusSurround[channels]...), nil
}
