package objstore

import (
	"path"
	"strings"
)

// A muxer's write, as the part cutter sees it: the container's header
// (and its trailer, rewrites), media, or media a player can start
// decoding at (a sync point).
type writeKind uint8

const (
	writeHeader writeKind = iota
	writeMedia
	writeSync
)

// sniffer classifies a muxer write by its first bytes. Each muxer writes
// whole units (MP4: a fragment; MKV: a block, with the Cluster it opens;
// FLV: a tag), so the first bytes say what the write is. Parts are cut
// before a sync point, so that the file's header (its bytes before the
// first media write, uploaded on its own: the init) followed by any run of
// parts from the second on is a file players decode from its first frame:
// what RecoverStore makes of a recording whose head part never left its
// spool.
type sniffer func(p []byte) writeKind

// snifferFor returns the sniffer of the container of key, nil for TS
// (a TS needs no header: any run of whole packets decodes from its next
// PAT/PMT and keyframe) and for what is not a recording.
func snifferFor(key string) sniffer {
	switch strings.ToLower(path.Ext(key)) {
	case ".mp4", ".m4a", ".m4v", ".mov":
		return sniffMP4
	case ".mkv", ".mka", ".webm":
		return sniffMKV
	case ".flv":
		return (&flvSniffer{}).sniff
	}
	return nil
}

// sniffMP4: the writes of a fragmented MP4 are its header (ftyp, moov)
// and whole fragments (moof, mdat), each cut at a keyframe of the video.
func sniffMP4(p []byte) writeKind {
	if len(p) >= 8 && string(p[4:8]) == "moof" {
		return writeSync
	}
	return writeHeader
}

// Matroska element ids.
const (
	ebmlCluster     = 0x1F43B675
	ebmlTimestamp   = 0xE7
	ebmlSimpleBlock = 0xA3
	ebmlBlockGroup  = 0xA0
)

// sniffMKV: a write that opens a Cluster whose first block is a keyframe
// (a new Cluster starts at every video keyframe; audio blocks are all
// keyframes) is a sync point; other blocks are media.
func sniffMKV(p []byte) writeKind {
	if len(p) > 0 && (p[0] == ebmlSimpleBlock || p[0] == ebmlBlockGroup) {
		return writeMedia
	}
	if len(p) < 4 || uint32(p[0])<<24|uint32(p[1])<<16|uint32(p[2])<<8|uint32(p[3]) != ebmlCluster {
		return writeHeader
	}
	rest := p[4:]
	if _, n := ebmlVint(rest); n > 0 { // the Cluster's size (unknown)
		rest = rest[n:]
	} else {
		return writeMedia
	}
	if len(rest) < 2 || rest[0] != ebmlTimestamp {
		return writeMedia
	}
	size, n := ebmlVint(rest[1:])
	if n == 0 || uint64(len(rest)) < 1+uint64(n)+size {
		return writeMedia
	}
	rest = rest[1+n+int(size):]
	if len(rest) < 2 || rest[0] != ebmlSimpleBlock {
		return writeMedia
	}
	_, n = ebmlVint(rest[1:]) // the block's size
	if n == 0 {
		return writeMedia
	}
	rest = rest[1+n:]
	_, n = ebmlVint(rest) // the track number
	if n == 0 || len(rest) < n+3 {
		return writeMedia
	}
	if rest[n+2]&0x80 != 0 { // flags: keyframe
		return writeSync
	}
	return writeMedia
}

// ebmlVint reads an EBML variable-size integer (its marker bit removed)
// and its length; 0 when p does not hold one.
func ebmlVint(p []byte) (uint64, int) {
	if len(p) == 0 || p[0] == 0 {
		return 0, 0
	}
	n := 1
	for p[0]&(0x80>>(n-1)) == 0 {
		n++
	}
	if len(p) < n {
		return 0, 0
	}
	v := uint64(p[0] & (0xFF >> n))
	for _, b := range p[1:n] {
		v = v<<8 | uint64(b)
	}
	return v, n
}

// flvSniffer classifies FLV tags: script data and codec configurations
// (sequence headers) are the header; a video keyframe is a sync point, and
// so is every audio frame of a file without video (its header says).
type flvSniffer struct{ audioOnly bool }

func (s *flvSniffer) sniff(p []byte) writeKind {
	if len(p) >= 5 && string(p[:3]) == "FLV" {
		s.audioOnly = p[4]&0x01 == 0
		return writeHeader
	}
	if len(p) < 13 {
		return writeHeader
	}
	b := p[11]
	switch p[0] {
	case 9: // video
		var frame byte
		if b&0x80 != 0 { // Enhanced RTMP: 0x80 | FrameType<<4 | PacketType
			if pt := b & 0x0F; pt != 1 && pt != 3 { // not coded frames
				return writeHeader
			}
			frame = b >> 4 & 0x07
		} else {
			if codec := b & 0x0F; (codec == 7 || codec == 12) && p[12] != 1 { // AVC/HEVC: not a NALU
				return writeHeader
			}
			frame = b >> 4
		}
		if frame == 1 {
			return writeSync
		}
		return writeMedia
	case 8: // audio
		switch b >> 4 {
		case 10: // AAC
			if p[12] != 1 {
				return writeHeader
			}
		case 9: // Enhanced RTMP
			if b&0x0F != 1 {
				return writeHeader
			}
		}
		if s.audioOnly {
			return writeSync
		}
		return writeMedia
	}
	return writeHeader
}
