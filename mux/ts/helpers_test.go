package ts_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/asticode/go-astits"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/ts"
)

// input is one track and its frames in decode order.
type input = mediatest.Input

// muxAll writes the inputs, interleaved, through a Writer and returns the
// output.
func muxAll(t testing.TB, opts ts.Options, ins ...input) ([]byte, *ts.Writer) {
	t.Helper()
	var buf bytes.Buffer
	w := ts.NewWriter(&buf, opts)
	mediatest.Feed(t, w, ins...)
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return buf.Bytes(), w
}

// startWriter returns a Writer with opts on a buffer, the inputs' tracks
// added.
func startWriter(t testing.TB, opts ts.Options, ins ...input) (*ts.Writer, *bytes.Buffer) {
	t.Helper()
	buf := &bytes.Buffer{}
	w := ts.NewWriter(buf, opts)
	mediatest.Write(t, w, mediatest.Tracks(ins...), nil)
	return w, buf
}

// writeAddingLate writes frames to w, adding track late just before its
// first frame, and closes w.
func writeAddingLate(t testing.TB, w *ts.Writer, late mux.Track, frames []mux.Frame) {
	t.Helper()
	added := false
	for _, f := range frames {
		if f.TrackID == late.ID && !added {
			if err := w.AddTrack(late); err != nil {
				t.Fatal(err)
			}
			added = true
		}
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeRemovingAt writes frames to w, removing track id before the first
// frame at or after at (µs); its frames after that must fail with
// mux.ErrUnknownTrack. It closes w and returns how many frames of track id
// were written.
func writeRemovingAt(t testing.TB, w *ts.Writer, frames []mux.Frame, id int, at int64) int {
	t.Helper()
	removed, written := false, 0
	for _, f := range frames {
		if f.Timestamp >= at && !removed {
			if err := w.RemoveTrack(id); err != nil {
				t.Fatal(err)
			}
			removed = true
		}
		err := w.WriteFrame(f)
		if f.TrackID == id && removed {
			if !errors.Is(err, mux.ErrUnknownTrack) {
				t.Fatalf("frame of a removed track: %v, want ErrUnknownTrack", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if f.TrackID == id {
			written++
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return written
}

// writeFile stores b under t.TempDir.
func writeFile(t testing.TB, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "out.ts")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// pidStream returns the stream with MPEG-TS PID pid.
func pidStream(t testing.TB, p mediatest.ProbeResult, pid uint16) mediatest.Stream {
	t.Helper()
	for _, s := range p.Streams {
		if s.ID == fmt.Sprintf("%#x", pid) {
			return s
		}
	}
	t.Fatalf("ffprobe shows no stream with PID %#x: %+v", pid, p.Streams)
	return mediatest.Stream{}
}

// checkStream asserts what ffprobe sees of one track: codec, packet count,
// first PTS and strictly increasing DTS.
func checkStream(t testing.TB, p mediatest.ProbeResult, pid uint16, codec string, frames int, firstPTS int64) {
	t.Helper()
	s := pidStream(t, p, pid)
	if s.CodecName != codec {
		t.Errorf("PID %#x: codec %q, want %q", pid, s.CodecName, codec)
	}
	pk := p.PacketsOf(s.Index)
	if len(pk) != frames {
		t.Errorf("PID %#x (%s): ffprobe counts %d packets, want %d", pid, codec, len(pk), frames)
	}
	if len(pk) == 0 {
		return
	}
	if pk[0].PTS == nil || *pk[0].PTS != firstPTS {
		t.Errorf("PID %#x (%s): first PTS %v, want %d", pid, codec, ptr(pk[0].PTS), firstPTS)
	}
	var last int64 = -1 << 62
	for i, x := range pk {
		if x.DTS == nil {
			t.Errorf("PID %#x: packet %d has no DTS", pid, i)
			continue
		}
		if *x.DTS <= last {
			t.Errorf("PID %#x (%s): DTS not increasing at packet %d: %d after %d", pid, codec, i, *x.DTS, last)
			return
		}
		last = *x.DTS
		if x.PTS != nil && *x.PTS < *x.DTS {
			t.Errorf("PID %#x: packet %d PTS %d below DTS %d", pid, i, *x.PTS, *x.DTS)
		}
	}
}

func ptr(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// tsReport is what the astits demuxer and a packet walk see in an output.
type tsReport struct {
	pmtStreams  map[uint16]astits.StreamType // last PMT
	pmtVersions []uint8                      // version of each PMT section
	pcrPID      uint16
	pes         map[uint16]int // PES count per PID
	rai         map[uint16]int // PES starts with random_access_indicator
	di          map[uint16]int // packets with discontinuity_indicator
	pcrs        []int64        // PCR bases in stream order
	pcrGaps     int            // PCR distances above 40 ms (excluding DI)
	lateDTS     []string       // PES whose DTS is below the PCR before them
	tablesAt    []int          // packet index of each PAT
	packets     int
	ccErrors    []string
}

// demux walks every packet (continuity counters, PCR, flags) and every PES
// of b with go-astits' demuxer.
func demux(t testing.TB, b []byte) tsReport {
	t.Helper()
	if len(b)%188 != 0 {
		t.Fatalf("output is %d bytes, not a whole number of packets", len(b))
	}
	r := tsReport{pes: map[uint16]int{}, rai: map[uint16]int{}, di: map[uint16]int{}, pmtStreams: map[uint16]astits.StreamType{}}
	dmx := astits.NewDemuxer(context.Background(), bytes.NewReader(b))
	cc := map[uint16]int{}
	var lastPCR int64 = -1
	for {
		p, err := dmx.NextPacket()
		if errors.Is(err, astits.ErrNoMorePackets) {
			break
		}
		if err != nil {
			t.Fatalf("packet %d: %v", r.packets, err)
		}
		h := p.Header
		af := p.AdaptationField
		disc := af != nil && af.DiscontinuityIndicator
		if last, ok := cc[h.PID]; ok && !disc {
			want := last
			if h.HasPayload {
				want = (last + 1) & 15
			}
			if int(h.ContinuityCounter) != want {
				r.ccErrors = append(r.ccErrors, fmt.Sprintf("PID %#x: cc %d, want %d at packet %d", h.PID, h.ContinuityCounter, want, r.packets))
			}
		}
		cc[h.PID] = int(h.ContinuityCounter)
		if h.PID == 0 && h.PayloadUnitStartIndicator {
			r.tablesAt = append(r.tablesAt, r.packets)
		}
		if h.PID == 0x1000 && h.PayloadUnitStartIndicator && len(p.Payload) > 6 {
			ptr := int(p.Payload[0])
			r.pmtVersions = append(r.pmtVersions, p.Payload[1+ptr+5]>>1&0x1F)
		}
		if disc {
			r.di[h.PID]++
		}
		if h.PayloadUnitStartIndicator && h.PID >= 0x100 && h.PID < 0x1000 && af != nil && af.RandomAccessIndicator {
			r.rai[h.PID]++
		}
		if h.PayloadUnitStartIndicator && h.PID >= 0x100 && h.PID < 0x1000 && lastPCR >= 0 {
			if dts, ok := pesDTS(p.Payload); ok && dts < lastPCR && lastPCR-dts < 1<<32 {
				r.lateDTS = append(r.lateDTS, fmt.Sprintf("PID %#x DTS %d < PCR %d at packet %d", h.PID, dts, lastPCR, r.packets))
			}
		}
		if af != nil && af.HasPCR {
			v := af.PCR.Base
			if lastPCR >= 0 && !disc && v-lastPCR > 40*90 {
				r.pcrGaps++
			}
			lastPCR = v
			r.pcrs = append(r.pcrs, v)
		}
		r.packets++
	}
	dmx = astits.NewDemuxer(context.Background(), bytes.NewReader(b))
	for {
		d, err := dmx.NextData()
		if errors.Is(err, astits.ErrNoMorePackets) {
			break
		}
		if err != nil {
			t.Fatalf("astits NextData: %v", err)
		}
		switch {
		case d.PMT != nil:
			r.pcrPID = d.PMT.PCRPID
			clear(r.pmtStreams)
			for _, es := range d.PMT.ElementaryStreams {
				r.pmtStreams[es.ElementaryPID] = es.StreamType
			}
		case d.PES != nil:
			r.pes[d.PID]++
		}
	}
	if len(r.ccErrors) > 0 {
		t.Errorf("continuity errors: %v", r.ccErrors[:min(5, len(r.ccErrors))])
	}
	return r
}

// pesDTS reads the DTS (or the PTS when there is no DTS) of a PES header.
func pesDTS(b []byte) (int64, bool) {
	if len(b) < 19 || b[0] != 0 || b[1] != 0 || b[2] != 1 {
		return 0, false
	}
	read := func(x []byte) int64 {
		return int64(x[0]>>1&7)<<30 | int64(x[1])<<22 | int64(x[2]>>1)<<15 | int64(x[3])<<7 | int64(x[4]>>1)
	}
	switch b[7] >> 6 {
	case 3:
		return read(b[14:19]), true
	case 2:
		return read(b[9:14]), true
	}
	return 0, false
}

// us converts a duration to the microseconds of mux.Frame.Timestamp.
func us(d time.Duration) int64 { return d.Microseconds() }
