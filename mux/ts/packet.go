package ts

import "bytes"

// The packet layer of the hot path: PES packets cut into 188-byte transport
// packets, and PCR-only packets. It is written here rather than through
// astits.Muxer.WriteData because astits builds every packet bit by bit
// through an astikit.BitsWriter that hands the output one byte at a time
// (each stuffing byte is a separate Write), copies each payload twice and
// allocates a stuffing adaptation field per frame: about 2 µs and 2
// allocations per frame, slower than ffmpeg. The layout below is the one
// astits writes (and the tests read back with its demuxer): adaptation
// field stuffing, never 0xFF padding after a PES payload; PES_packet_length
// zero for video, set for other streams when it fits 16 bits; PTS, and DTS
// only when it differs.

// tsHeaderSize is the 4-byte transport packet header.
const tsHeaderSize = 4

// Adaptation field flag bits (ISO 13818-1 2.4.3.4).
const (
	afDiscontinuity = 0x80
	afRandomAccess  = 0x40
	afPCR           = 0x10
)

// pesHeaderMax is the PES header with PTS and DTS: start code, stream id,
// length, flags, header length, 2x5 bytes of timestamps.
const pesHeaderMax = 6 + 3 + 10

// appendPESHeader appends the PES header of a payload of size n: PTS, and
// DTS when hasDTS. pts and dts are already wrapped to 33 bits.
func appendPESHeader(dst []byte, streamID uint8, n int, pts, dts int64, hasDTS bool) []byte {
	optLen := 3 + 5
	ptsFlags := byte(0x80)
	if hasDTS {
		optLen += 5
		ptsFlags = 0xC0
	}
	length := 0
	if streamID != streamIDVideo {
		// Video PES may exceed 64 KiB: their length is left unbounded.
		length = n + optLen
		if length > 0xFFFF {
			length = 0
		}
	}
	dst = append(dst, 0, 0, 1, streamID, byte(length>>8), byte(length),
		0x84, // marker bits '10', data_alignment_indicator
		ptsFlags, byte(optLen-3))
	if !hasDTS {
		return appendTimestamp(dst, 0x2, pts)
	}
	dst = appendTimestamp(dst, 0x3, pts)
	return appendTimestamp(dst, 0x1, dts)
}

// appendTimestamp appends a 5-byte PTS or DTS field with the 4-bit prefix.
func appendTimestamp(dst []byte, prefix byte, t int64) []byte {
	return append(dst,
		prefix<<4|byte(t>>29)&0x0E|1,
		byte(t>>22),
		byte(t>>14)|1,
		byte(t>>7),
		byte(t<<1)|1)
}

// appendPCR appends the 6-byte program_clock_reference with base pcr
// (wrapped to 33 bits) and a zero extension.
func appendPCR(dst []byte, pcr int64) []byte {
	return append(dst,
		byte(pcr>>25), byte(pcr>>17), byte(pcr>>9), byte(pcr>>1),
		byte(pcr<<7)|0x7E, 0)
}

// appendPacketHeader appends the 4-byte transport packet header.
func appendPacketHeader(dst []byte, pid uint16, pusi, hasAF, hasPayload bool, cc uint8) []byte {
	b1 := byte(pid>>8) & 0x1F
	if pusi {
		b1 |= 0x40
	}
	b3 := cc & 0x0F
	if hasAF {
		b3 |= 0x20
	}
	if hasPayload {
		b3 |= 0x10
	}
	return append(dst, 0x47, b1, byte(pid), b3)
}

// stuffing is a packet's worth of stuffing bytes.
var stuffing = bytes.Repeat([]byte{0xFF}, packetSize)

// appendStuffing appends n (at most a packet) bytes of 0xFF.
func appendStuffing(dst []byte, n int) []byte {
	return append(dst, stuffing[:n]...)
}

// pesPacket describes one PES for appendPES.
type pesPacket struct {
	pid      uint16
	streamID uint8
	pts, dts int64 // wrapped to 33 bits
	hasDTS   bool
	// afFlags are the adaptation field flags of the first packet
	// (afDiscontinuity, afRandomAccess, afPCR); pcr is its PCR base.
	afFlags byte
	pcr     int64
	data    []byte
}

// appendPES appends the transport packets of p to dst. cc is the PID's
// continuity_counter, advanced once per packet (every packet carries
// payload). A packet whose payload does not fill it is completed with
// adaptation field stuffing.
func appendPES(dst []byte, p *pesPacket, cc *uint8) []byte {
	var hdr [pesHeaderMax]byte
	h := appendPESHeader(hdr[:0], p.streamID, len(p.data), p.pts, p.dts, p.hasDTS)
	data := p.data
	first := true
	for first || len(data) > 0 {
		*cc = (*cc + 1) & 0x0F
		room := packetSize - tsHeaderSize
		afLen := 0 // adaptation field bytes before stuffing, length byte included
		if first && p.afFlags != 0 {
			afLen = 2
			if p.afFlags&afPCR != 0 {
				afLen += 6
			}
		}
		room -= afLen
		if first {
			room -= len(h)
		}
		n := min(room, len(data))
		stuff := room - n
		dst = appendPacketHeader(dst, p.pid, first, afLen+stuff > 0, true, *cc)
		switch {
		case afLen > 0:
			dst = append(dst, byte(afLen-1+stuff), p.afFlags)
			if p.afFlags&afPCR != 0 {
				dst = appendPCR(dst, p.pcr)
			}
			dst = appendStuffing(dst, stuff)
		case stuff == 1:
			dst = append(dst, 0) // adaptation_field_length 0
		case stuff > 1:
			dst = append(dst, byte(stuff-1), 0)
			dst = appendStuffing(dst, stuff-2)
		}
		if first {
			dst = append(dst, h...)
			first = false
		}
		dst = append(dst, data[:n]...)
		data = data[n:]
	}
	return dst
}

// appendPCRPacket appends an adaptation-field-only packet carrying a PCR.
// cc must repeat the PID's last continuity_counter: a packet without
// payload does not advance it (ISO 13818-1 2.4.3.3).
func appendPCRPacket(dst []byte, pid uint16, cc uint8, pcr int64, disc bool) []byte {
	flags := byte(afPCR)
	if disc {
		flags |= afDiscontinuity
	}
	dst = appendPacketHeader(dst, pid, false, true, false, cc)
	// 183 bytes of adaptation field: flags (1) + PCR (6) + stuffing.
	dst = append(dst, packetSize-tsHeaderSize-1, flags)
	dst = appendPCR(dst, pcr)
	return appendStuffing(dst, packetSize-tsHeaderSize-1-1-6)
}
