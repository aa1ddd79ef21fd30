package mp4_test

import (
	"bytes"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/mp4"
)

// FuzzWriteFrame feeds arbitrary payloads to tracks whose configuration
// the Writer parses from their frames (Annex B H.264/H.265, AV1 without
// av1C, VP9, AC-3, MP3 without a sample rate) and to ready tracks: it must
// never panic, and whatever it wrote must end in a Close without a panic.
func FuzzWriteFrame(f *testing.F) {
	for _, name := range []string{"h264-annexb", "h265-annexb", "av1", "vp9", "ac3", "mp3", "aac"} {
		s := mediatest.LoadSample(name)
		f.Add(uint8(len(f.Name())%7), s.Frames[0].Payload, true)
		f.Add(uint8(0), s.Frames[1].Payload, false)
	}
	tracks := func() []mux.Track {
		var out []mux.Track
		for i, name := range []string{"h264-annexb", "h265-annexb", "av1", "vp9", "ac3", "mp3", "aac"} {
			tr := mediatest.TrackOf(mediatest.LoadSample(name), i+1)
			if name == "av1" {
				tr.Description = nil
			}
			if name == "mp3" {
				tr.SampleRate, tr.Channels = 0, 0
			}
			out = append(out, tr)
		}
		return out
	}()
	f.Fuzz(func(t *testing.T, track uint8, payload []byte, key bool) {
		var buf bytes.Buffer
		w := mp4.NewWriter(&buf, mp4.Options{})
		for _, tr := range tracks {
			if err := w.AddTrack(tr); err != nil {
				t.Fatal(err)
			}
		}
		id := int(track%uint8(len(tracks))) + 1
		for i := range 3 {
			_ = w.WriteFrame(mux.Frame{TrackID: id, Timestamp: int64(i) * 33_000, Keyframe: key || i == 0, Payload: payload})
			_ = w.WriteFrame(mux.Frame{TrackID: len(tracks), Timestamp: int64(i) * 21_000, Keyframe: true, Payload: payload})
		}
		_ = w.Close()
	})
}
