package ts

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/asticode/go-astits"
)

// astitsPES packetizes p with astits' own muxer, the reference layout the
// hand-written packetizer follows.
func astitsPES(t *testing.T, p *pesPacket) []byte {
	t.Helper()
	var out bytes.Buffer
	m := astits.NewMuxer(context.Background(), &out, astits.MuxerOptTablesRetransmitPeriod(math.MaxInt))
	for _, pid := range []uint16{p.pid, p.pid + 1} {
		if err := m.AddElementaryStream(astits.PMTElementaryStream{ElementaryPID: pid, StreamType: astits.StreamTypeH264Video}); err != nil {
			t.Fatal(err)
		}
	}
	m.SetPCRPID(p.pid + 1) // keeps astits from sending tables before a random access point
	oh := astits.PESOptionalHeader{
		MarkerBits:             2,
		DataAlignmentIndicator: true,
		PTSDTSIndicator:        astits.PTSDTSIndicatorOnlyPTS,
		PTS:                    &astits.ClockReference{Base: p.pts},
	}
	if p.hasDTS {
		oh.PTSDTSIndicator = astits.PTSDTSIndicatorBothPresent
		oh.DTS = &astits.ClockReference{Base: p.dts}
	}
	d := astits.MuxerData{
		PID: p.pid,
		PES: &astits.PESData{Header: &astits.PESHeader{StreamID: p.streamID, OptionalHeader: &oh}, Data: p.data},
	}
	if p.afFlags != 0 {
		d.AdaptationField = &astits.PacketAdaptationField{
			DiscontinuityIndicator: p.afFlags&afDiscontinuity != 0,
			RandomAccessIndicator:  p.afFlags&afRandomAccess != 0,
			HasPCR:                 p.afFlags&afPCR != 0,
			PCR:                    &astits.ClockReference{Base: p.pcr},
		}
	}
	if _, err := m.WriteData(&d); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestPESPacketsMatchTheAstitsLayout compares the hand-written packetizer
// with astits on payload sizes around every stuffing case (no stuffing, one
// byte, two bytes, a full stuffing field) for each header shape.
func TestPESPacketsMatchTheAstitsLayout(t *testing.T) {
	var sizes []int
	for n := 1; n <= 3*packetSize; n++ {
		sizes = append(sizes, n)
	}
	sizes = append(sizes, 0xFFFF-13, 0xFFFF-12, 70_000)
	for _, tc := range []struct {
		name     string
		streamID uint8
		hasDTS   bool
		flags    byte
	}{
		{"VideoPTS", streamIDVideo, false, 0},
		{"VideoDTSKeyPCR", streamIDVideo, true, afRandomAccess | afPCR},
		{"VideoDTSDiscontinuity", streamIDVideo, true, afDiscontinuity},
		{"AudioRandomAccess", streamIDAudio, false, afRandomAccess},
		{"PrivatePCRDiscontinuity", streamIDPrivate, false, afPCR | afDiscontinuity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range sizes {
				data := make([]byte, n)
				for i := range data {
					data[i] = byte(i*7 + n)
				}
				p := pesPacket{
					pid: 0x101, streamID: tc.streamID,
					pts: wrap33 - 1 - int64(n), dts: int64(n) * 1001, hasDTS: tc.hasDTS,
					afFlags: tc.flags, pcr: 0x1_2345_6789,
				}
				p.data = data
				cc := uint8(15)
				got := appendPES(nil, &p, &cc)
				want := astitsPES(t, &p)
				if !bytes.Equal(got, want) {
					t.Fatalf("payload %d: %d bytes differ from astits' %d:\n%s", n, len(got), len(want), firstDiff(got, want))
				}
				if want := uint8(len(got)/packetSize-1) & 0x0F; cc != want {
					t.Fatalf("payload %d: continuity counter ends at %d, want %d", n, cc, want)
				}
			}
		})
	}
}

// TestPCRPacketMatchesTheAstitsLayout compares a PCR-only packet with the
// one astits writes from the same fields.
func TestPCRPacketMatchesTheAstitsLayout(t *testing.T) {
	for _, disc := range []bool{false, true} {
		var out bytes.Buffer
		m := astits.NewMuxer(context.Background(), &out)
		_, err := m.WritePacket(&astits.Packet{
			Header: astits.PacketHeader{HasAdaptationField: true, PID: 0x1FF, ContinuityCounter: 9},
			AdaptationField: &astits.PacketAdaptationField{
				DiscontinuityIndicator: disc,
				HasPCR:                 true,
				PCR:                    &astits.ClockReference{Base: wrap33 - 3},
				StuffingLength:         packetSize - 4 - 1 - 1 - 6,
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		got := appendPCRPacket(nil, 0x1FF, 9, wrap33-3, disc)
		if !bytes.Equal(got, out.Bytes()) {
			t.Fatalf("discontinuity %v: differs from astits:\n%s", disc, firstDiff(got, out.Bytes()))
		}
	}
}

// firstDiff describes where a and b first differ.
func firstDiff(a, b []byte) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			lo := i - i%packetSize
			return fmt.Sprintf("packet %d byte %d: % x\nwant % x", i/packetSize, i%packetSize,
				a[lo:min(lo+32, len(a))], b[lo:min(lo+32, len(b))])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(a), len(b))
}
