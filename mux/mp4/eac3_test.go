package mp4_test

import (
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/mp4"
)

// eac3Input encodes 2 s of a tone to E-AC-3 with ffmpeg (no E-AC-3 sample
// is embedded) and splits the stream into its frames (frmsiz, ETSI TS 102
// 366 E.1.2: 16-bit words minus one; 6 blocks of 256 samples each at
// 48 kHz).
func eac3Input(t *testing.T, id int) mediatest.Input {
	t.Helper()
	raw, _ := mediatest.Run(t, "ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=2",
		"-ac", "2", "-c:a", "eac3", "-b:a", "96k", "-f", "eac3", "-")
	b := []byte(raw)
	in := mediatest.Input{Track: mux.Track{ID: id, Name: "eac3", Kind: mux.Audio, Codec: "ec-3", SampleRate: 48000, Channels: 2}}
	for ts := int64(0); len(b) >= 6; ts += 32_000 {
		if b[0] != 0x0b || b[1] != 0x77 {
			t.Fatalf("E-AC-3 stream lost sync at frame %d", len(in.Frames))
		}
		size := (int(b[2]&0x07)<<8 | int(b[3]) + 1) * 2
		if size > len(b) {
			break
		}
		in.Frames = append(in.Frames, mux.Frame{TrackID: id, Timestamp: ts, Keyframe: true, Payload: b[:size]})
		b = b[size:]
	}
	return in
}

// TestEAC3DecodesAndMatchesItsInput muxes E-AC-3 alone and with H.264.
func TestEAC3DecodesAndMatchesItsInput(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	a := eac3Input(t, 2)
	for _, fm := range forms {
		t.Run(fm.name, func(t *testing.T) {
			path := muxFile(t, "eac3.mp4", fm.finished, mp4.Options{FinishByCopy: fm.byCopy}, mediatest.SampleInput("h264", 1), a)
			mediatest.DecodeClean(t, path)
			p := mediatest.Probe(t, path)
			if len(p.Streams) != 2 || p.Streams[1].CodecName != "eac3" {
				t.Fatalf("streams %+v, want h264 and eac3", p.Streams)
			}
			checkPackets(t, path, p, 1, a, 0, 1000)
		})
	}
}
