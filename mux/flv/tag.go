package flv

// FLV framing (Adobe FLV spec 10.1, E-RTMP v2). Hand-written: the only Go
// FLV library, github.com/yutopp/go-flv, is not served by the module proxy,
// and the framing is a few fixed-size headers.

// Tag types.
const (
	tagAudio  = 8
	tagVideo  = 9
	tagScript = 18
)

const (
	fileHeaderSize = 9  // "FLV", version, flags, data offset
	tagHeaderSize  = 11 // type, size(24), timestamp(24), ext(8), stream id(24)
	prevSizeSize   = 4  // PreviousTagSize after every tag
	maxTagBody     = 1<<24 - 1
)

// Header flags.
const (
	flagAudio = 0x04
	flagVideo = 0x01
)

// Classic video: FrameType<<4 | CodecID.
const (
	frameKey   = 1
	frameInter = 2

	codecAVC = 7

	avcSequenceHeader = 0
	avcNALU           = 1
)

// Enhanced RTMP video: 0x80 | FrameType<<4 | PacketType, then a FourCC.
const (
	exHeader = 0x80

	pktSequenceStart = 0
	pktCodedFrames   = 1 // with SI24 composition time (avc1, hvc1 only)
	pktCodedFramesX  = 3 // composition time 0, omitted
)

// Classic audio: SoundFormat<<4 | rate<<2 | size<<1 | type.
const (
	soundMP3 = 2
	soundAAC = 10
	// soundEx is the Enhanced RTMP audio marker; the low nibble is then the
	// AudioPacketType and a FourCC follows.
	soundEx = 9

	aacSequenceHeader = 0
	aacRaw            = 1

	audioPktSequenceStart = 0
	audioPktCodedFrames   = 1
)

// appendFileHeader appends the 9-byte FLV header and PreviousTagSize0.
func appendFileHeader(b []byte, flags byte) []byte {
	return append(b, 'F', 'L', 'V', 1, flags, 0, 0, 0, fileHeaderSize, 0, 0, 0, 0)
}

// appendTagHeader appends an 11-byte tag header. ts is the 32-bit
// millisecond timestamp: the low 24 bits, then the extension byte with the
// upper 8 bits.
func appendTagHeader(b []byte, typ byte, size int, ts uint32) []byte {
	return append(b, typ,
		byte(size>>16), byte(size>>8), byte(size),
		byte(ts>>16), byte(ts>>8), byte(ts), byte(ts>>24),
		0, 0, 0)
}

// appendU32 appends v big-endian (PreviousTagSize, FourCC).
func appendU32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// appendSI24 appends a signed 24-bit big-endian value, clamped to its range.
func appendSI24(b []byte, v int64) []byte {
	const lim = 1<<23 - 1
	if v > lim {
		v = lim
	} else if v < -lim-1 {
		v = -lim - 1
	}
	u := uint32(v)
	return append(b, byte(u>>16), byte(u>>8), byte(u))
}

// fourCC returns the FourCC as a big-endian number.
func fourCC(s string) uint32 {
	return uint32(s[0])<<24 | uint32(s[1])<<16 | uint32(s[2])<<8 | uint32(s[3])
}
