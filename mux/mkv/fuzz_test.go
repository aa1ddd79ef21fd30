package mkv

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
)

// FuzzWriteFrame feeds arbitrary frames (track, timestamp, keyframe flag,
// payload) to writers of both forms over tracks that take their
// configuration from the catalog and tracks that wait for it in-band. The
// writer must never panic and must only fail with its documented errors.
// Each record of data is: track byte, keyframe byte, 8-byte timestamp,
// length byte, payload.
func FuzzWriteFrame(f *testing.F) {
	for i, name := range []string{"vp8", "av1", "opus", "h264", "h264", "h265"} {
		in := mediatest.SampleInput(name, 1)
		id := []byte{0, 1, 4, 3, 6, 7}[i]
		if i >= 4 {
			toAnnexB(&in)
		}
		var rec []byte
		for _, fr := range in.Frames[:min(3, len(in.Frames))] {
			p := fr.Payload[:min(len(fr.Payload), 255)]
			rec = append(rec, id, 1)
			rec = binary.BigEndian.AppendUint64(rec, uint64(fr.Timestamp))
			rec = append(rec, byte(len(p)))
			rec = append(rec, p...)
		}
		f.Add(rec, false)
	}
	f.Add([]byte{0, 1, 0x80, 0, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3, 1, 0, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 9}, true)
	f.Add([]byte{5, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0xff}, true)

	a := mediatest.SampleInput("opus", 0).Track
	tracks := []mux.Track{
		{ID: 0, Kind: mux.Video, Codec: "vp8"},           // size from keyframe
		{ID: 1, Kind: mux.Video, Codec: "av01.0.04M.08"}, // av1C from keyframe
		{ID: 2, Kind: mux.Video, Codec: "vp09.00.10.08", Width: 320, Height: 180},
		{ID: 3, Kind: mux.Video, Codec: "avc1.64000d", Description: mediatest.SampleInput("h264", 3).Track.Description, Width: 320, Height: 180},
		{ID: 4, Kind: mux.Audio, Codec: "opus", Description: a.Description},
		{ID: 5, Kind: mux.Audio, Codec: "mp4a.40.2", SampleRate: 48000, Channels: 2},
		{ID: 6, Kind: mux.Video, Codec: "avc1.64000d"},     // Annex B, avcC from keyframe
		{ID: 7, Kind: mux.Video, Codec: "hev1.1.6.L93.B0"}, // Annex B, hvcC from keyframe
	}
	f.Fuzz(func(t *testing.T, data []byte, seekable bool) {
		var out seekBuffer
		var w *Writer
		if seekable {
			w = NewWriter(&out, Options{HeaderWait: 1})
		} else {
			w = NewWriter(nonSeeker{&out}, Options{})
		}
		for _, tr := range tracks {
			if err := w.AddTrack(tr); err != nil {
				t.Fatal(err)
			}
		}
		for len(data) >= 11 {
			n := int(data[10])
			fr := mux.Frame{
				TrackID:   int(data[0] % 9), // 8 is unknown
				Keyframe:  data[1]&1 == 1,
				Timestamp: int64(binary.BigEndian.Uint64(data[2:])),
			}
			data = data[11:]
			fr.Payload = data[:min(n, len(data))]
			data = data[len(fr.Payload):]
			if data := fr.Payload; len(data) > 0 && data[0] == 0xd1 {
				fr.Discontinuity = true
			}
			if err := w.WriteFrame(fr); err != nil && !errors.Is(err, mux.ErrUnknownTrack) {
				t.Fatalf("WriteFrame: %v", err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	})
}
