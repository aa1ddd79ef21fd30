package ts_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/asticode/go-astits"

	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/ts"
)

// fuzzTracks are the tracks every fuzz run starts with: both H.264 forms,
// H.265 and each audio codec.
func fuzzTracks() []mux.Track {
	var out []mux.Track
	for i, name := range []string{"h264", "h265", "aac", "opus", "ac3", "mp3"} {
		out = append(out, mediatest.TrackOf(samples.MustLoadSample(name), i+1))
	}
	annexB := out[0]
	annexB.ID, annexB.Description = len(out)+1, nil
	return append(out, annexB)
}

// FuzzWriter drives a Writer with operations decoded from the input:
// frames with arbitrary payloads, timestamps and flags for any track,
// discontinuities, removals and re-adds. It must never panic, WriteFrame
// errors must be the documented ones, and the output must stay a valid
// packet sequence.
func FuzzWriter(f *testing.F) {
	h264 := samples.MustLoadSample("h264")
	aac := samples.MustLoadSample("aac")
	seed := func(ops ...[]byte) []byte { return bytes.Join(ops, nil) }
	frame := func(track byte, key bool, dt int16, p []byte) []byte {
		flags := track << 2
		if key {
			flags |= 1
		}
		b := []byte{0, flags}
		b = binary.BigEndian.AppendUint16(b, uint16(dt))
		b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
		return append(b, p...)
	}
	f.Add(seed(
		frame(1, true, 0, h264.Frames[0].Payload),
		frame(3, true, 0, aac.Frames[0].Payload),
		frame(1, false, 3333, h264.Frames[1].Payload),
		[]byte{1, 0xFF},
		frame(3, true, 2133, aac.Frames[1].Payload),
	))
	f.Add(seed(frame(7, true, 0, []byte{0, 0, 0, 1, 0x67, 0x42}), frame(4, true, -5, []byte{0xFC})))
	f.Add(seed(frame(2, true, 0, []byte{0, 0, 0, 9, 1, 2}), []byte{2, 3}, []byte{3, 3}, frame(5, true, 100, []byte{0x0B, 0x77})))
	f.Add([]byte{0, 5, 0x7F, 0xFF, 0xFF, 0xFF})

	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		w := ts.NewWriter(&out, ts.Options{KeepTimestamps: len(data)%2 == 1})
		tracks := fuzzTracks()
		for _, tr := range tracks {
			if err := w.AddTrack(tr); err != nil {
				t.Fatalf("AddTrack(%s): %v", tr.Codec, err)
			}
		}
		var now int64
		disc := map[int]bool{}
		for len(data) >= 2 {
			op, arg := data[0]%4, data[1]
			data = data[2:]
			id := int(arg>>2)%len(tracks) + 1
			switch op {
			case 0: // frame: [dt int16][len uint16][payload]
				if len(data) < 4 {
					return
				}
				now += int64(int16(binary.BigEndian.Uint16(data))) * 10
				n := min(int(binary.BigEndian.Uint16(data[2:])), len(data)-4)
				p := data[4 : 4+n]
				data = data[4+n:]
				err := w.WriteFrame(mux.Frame{TrackID: id, Timestamp: now, Keyframe: arg&1 == 1, Payload: p, Discontinuity: disc[id]})
				disc[id] = false
				if err != nil && !errors.Is(err, mux.ErrUnknownTrack) {
					t.Fatalf("WriteFrame: undocumented error %v", err)
				}
			case 1: // the track's next frame follows a break
				disc[id] = true
			case 2:
				if err := w.RemoveTrack(id); err != nil && !errors.Is(err, mux.ErrUnknownTrack) {
					t.Fatalf("RemoveTrack: %v", err)
				}
			case 3: // re-add under a fresh ID
				tr := tracks[id-1]
				tr.ID = 100 + len(tracks)
				tracks = append(tracks, tr)
				if err := w.AddTrack(tr); err != nil {
					t.Fatalf("AddTrack: %v", err)
				}
			}
		}
		if err := w.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		b := out.Bytes()
		if len(b)%188 != 0 {
			t.Fatalf("output of %d bytes is not whole packets", len(b))
		}
		dmx := astits.NewDemuxer(context.Background(), bytes.NewReader(b), astits.DemuxerOptPacketSize(188))
		for {
			_, err := dmx.NextPacket()
			if errors.Is(err, astits.ErrNoMorePackets) {
				break
			}
			if err != nil {
				t.Fatalf("output does not parse: %v", err)
			}
		}
	})
}
