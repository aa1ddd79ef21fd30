package mkv

import (
	"bytes"
	"encoding/binary"
	"math"
	"time"

	"github.com/at-wat/ebml-go"
	"github.com/at-wat/ebml-go/webm"
)

// Element IDs written by hand (the hot path and the patches at Close).
const (
	idSegment     = 0x18538067
	idCluster     = 0x1F43B675
	idSimpleBlock = 0xA3
	// A BlockGroup holds a Block and its BlockDuration (subtitles, and a
	// frame whose end its publisher marked); ReferenceBlock marks a frame
	// that is not a keyframe.
	idBlockGroup     = 0xA0
	idBlock          = 0xA1
	idBlockDuration  = 0x9B
	idReferenceBlock = 0xFB
	idTimestamp      = 0xE7 // a Cluster's Timestamp (Timecode)
	idVoid           = 0xEC
)

// sizeUnknown is the 8-byte EBML data size meaning "unknown": ebml-go writes
// the same bytes for `size=unknown`.
const sizeUnknown = 0x01FFFFFFFFFFFFFF

// Per-element layouts marshalled with ebml-go. The webm package of ebml-go
// has most of them; the ones it lacks or shapes differently are here.

type ebmlHeaderOnly struct {
	Header webm.EBMLHeader `ebml:"EBML"`
}

type segmentStart struct {
	Segment struct{} `ebml:"Segment,size=unknown"`
}

type seekEntry struct {
	SeekID       []byte `ebml:"SeekID"`
	SeekPosition uint64 `ebml:"SeekPosition,size=8"`
}

type segmentInfo struct {
	TimestampScale uint64    `ebml:"TimecodeScale"`
	Duration       float64   `ebml:"Duration,omitempty"`
	DateUTC        time.Time `ebml:"DateUTC,omitempty"`
	MuxingApp      string    `ebml:"MuxingApp"`
	WritingApp     string    `ebml:"WritingApp"`
}

// headRegion is the start of the Segment that Close rewrites in place:
// SeekHead and Info, followed by a Void up to a fixed size.
type headRegion struct {
	SeekHead struct {
		Seek []seekEntry `ebml:"Seek"`
	} `ebml:"SeekHead"`
	Info segmentInfo `ebml:"Info"`
}

type trackEntry struct {
	TrackNumber  uint64 `ebml:"TrackNumber"`
	TrackUID     uint64 `ebml:"TrackUID"`
	TrackType    uint64 `ebml:"TrackType"`
	FlagLacing   uint64 `ebml:"FlagLacing"`
	Name         string `ebml:"Name,omitempty"`
	Language     string `ebml:"Language,omitempty"`
	LanguageIETF string `ebml:"LanguageIETF,omitempty"`
	CodecID      string `ebml:"CodecID"`
	CodecPrivate []byte `ebml:"CodecPrivate,omitempty"`
	CodecDelay   uint64 `ebml:"CodecDelay,omitempty"`
	SeekPreRoll  uint64 `ebml:"SeekPreRoll,omitempty"`
	Video        *video `ebml:"Video,omitempty"`
	Audio        *audio `ebml:"Audio,omitempty"`
}

type video struct {
	PixelWidth  uint64 `ebml:"PixelWidth"`
	PixelHeight uint64 `ebml:"PixelHeight"`
}

type audio struct {
	SamplingFrequency float64 `ebml:"SamplingFrequency"`
	Channels          uint64  `ebml:"Channels"`
	BitDepth          uint64  `ebml:"BitDepth,omitempty"`
}

type tracksElement struct {
	Tracks struct {
		TrackEntry []trackEntry `ebml:"TrackEntry"`
	} `ebml:"Tracks"`
}

type cuesElement struct {
	Cues webm.Cues `ebml:"Cues"`
}

// marshal encodes v with ebml-go into a fresh byte slice.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := ebml.Marshal(v, &b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// appendVoid appends a Void element of exactly n bytes (n >= 2).
func appendVoid(b []byte, n int) []byte {
	if n-2 <= 126 {
		b = append(b, idVoid, 0x80|byte(n-2))
		return append(b, make([]byte, n-2)...)
	}
	// 8-byte size: room for any padding we ever need.
	b = append(b, idVoid)
	b = appendSize8(b, uint64(n-9))
	return append(b, make([]byte, n-9)...)
}

// appendSize8 appends an EBML data size coded on 8 bytes.
func appendSize8(b []byte, size uint64) []byte {
	return binary.BigEndian.AppendUint64(b, 0x01<<56|size)
}

// appendVint appends v as the shortest EBML variable-size integer
// (v < 2^56-1).
func appendVint(b []byte, v uint64) []byte {
	for n := 1; n <= 8; n++ {
		if v < 1<<(7*n)-1 {
			marker := uint64(1) << (7 * n)
			x := v | marker
			for i := n - 1; i >= 0; i-- {
				b = append(b, byte(x>>(8*i)))
			}
			return b
		}
	}
	return appendSize8(b, v)
}

// appendClusterStart appends the start of a Cluster of unknown size and its
// Timestamp, as ebml-go marshals clusterStart (the tests compare), without
// the reflection and the dozen allocations that costs at every cluster
// (every video keyframe).
func appendClusterStart(b []byte, ms uint64) []byte {
	b = binary.BigEndian.AppendUint32(b, idCluster)
	b = binary.BigEndian.AppendUint64(b, sizeUnknown)
	n := 1 // ebml-go writes unsigned integers in their fewest bytes, 0 in one
	for n < 8 && ms>>(8*n) != 0 {
		n++
	}
	b = append(b, idTimestamp, 0x80|byte(n))
	for i := n - 1; i >= 0; i-- {
		b = append(b, byte(ms>>(8*i)))
	}
	return b
}

// appendBlockGroup appends a BlockGroup holding one Block of payload and
// its BlockDuration (ms): how subtitles carry the time a cue shows, and a
// frame the time its publisher said it ends. ref, when not 0, is a
// ReferenceBlock: the time (ms, relative to this block) of the block the
// frame depends on; a Block without one is a keyframe.
func appendBlockGroup(b []byte, track uint64, rel int16, dur uint64, ref int64, payload []byte) []byte {
	var tn [8]byte
	tv := appendVint(tn[:0], track)
	blockSize := len(tv) + 3 + len(payload)
	var blk [8]byte
	blockSizeV := appendVint(blk[:0], uint64(blockSize))
	n := 1
	for n < 8 && dur>>(8*n) != 0 {
		n++
	}
	// ReferenceBlock is a signed integer in the fewest bytes.
	rn := 0
	if ref != 0 {
		rn = 1
		for rn < 8 && (ref < -(1<<(8*rn-1)) || ref >= 1<<(8*rn-1)) {
			rn++
		}
	}
	groupSize := 1 + len(blockSizeV) + blockSize + 2 + n
	if rn > 0 {
		groupSize += 2 + rn
	}
	b = append(b, idBlockGroup)
	b = appendVint(b, uint64(groupSize))
	b = append(b, idBlock)
	b = append(b, blockSizeV...)
	b = append(b, tv...)
	b = binary.BigEndian.AppendUint16(b, uint16(rel))
	b = append(b, 0) // no lacing
	b = append(b, payload...)
	b = append(b, idBlockDuration, 0x80|byte(n))
	for i := n - 1; i >= 0; i-- {
		b = append(b, byte(dur>>(8*i)))
	}
	if rn > 0 {
		b = append(b, idReferenceBlock, 0x80|byte(rn))
		for i := rn - 1; i >= 0; i-- {
			b = append(b, byte(ref>>(8*i)))
		}
	}
	return b
}

// appendSimpleBlockHeader appends the SimpleBlock element header and block
// header for a payload of n bytes. ebml-go's Block marshaller would do the
// same through reflection and an intermediate copy of the payload, which is
// the one thing worth avoiding on the per-frame path.
func appendSimpleBlockHeader(b []byte, track uint64, rel int16, keyframe bool, n int) []byte {
	var tn [8]byte
	tv := appendVint(tn[:0], track)
	b = append(b, idSimpleBlock)
	b = appendVint(b, uint64(len(tv)+3+n))
	b = append(b, tv...)
	b = binary.BigEndian.AppendUint16(b, uint16(rel))
	var flags byte
	if keyframe {
		flags |= 0x80
	}
	return append(b, flags)
}

// clampMs saturates v into [0, math.MaxInt64/2] so later arithmetic on
// cluster-relative times cannot overflow.
func clampMs(v int64) int64 {
	if v < 0 {
		return 0
	}
	if v > math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return v
}
