package mp4_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux/mp4"
)

// TestFinishHeadMakesARegularMP4OfTheBytesAsWritten: with FinishHead (an
// output that uploaded what it wrote), Close rewrites nothing: the head it
// hands over, followed by the written bytes from the offset it names, is a
// regular fast-start MP4 with every frame in place.
func TestFinishHeadMakesARegularMP4OfTheBytesAsWritten(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	for _, tc := range []struct {
		name string
		ins  []mediatest.Input
	}{
		{"h264+aac", []mediatest.Input{loop(mediatest.SampleInput("h264", 1), 3), loop(mediatest.SampleInput("aac", 2), 3)}},
		{"aac", []mediatest.Input{loop(mediatest.SampleInput("aac", 1), 2)}},
		{"two h264 frames", []mediatest.Input{firstFrames(mediatest.SampleInput("h264", 1), 2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			var head []byte
			from := int64(-1)
			w := mp4.NewWriter(&out, mp4.Options{FinishHead: func(h []byte, f int64) error { head, from = h, f; return nil }})
			mediatest.Feed(t, w, tc.ins...)
			written := bytes.Clone(out.Bytes())
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(out.Bytes(), written) || head == nil || from <= 0 || from > int64(out.Len()) || !w.Counters().Finished {
				t.Fatalf("head of %d bytes, from %d of %d written; counters %+v", len(head), from, out.Len(), w.Counters())
			}
			path := filepath.Join(t.TempDir(), "finished.mp4")
			if err := os.WriteFile(path, append(head, out.Bytes()[from:]...), 0o644); err != nil {
				t.Fatal(err)
			}
			if boxes := compactBoxes(topBoxes(t, path)); boxes != "ftyp,moov,mdat" {
				t.Fatalf("boxes %s, want ftyp,moov,mdat", boxes)
			}
			mediatest.DecodeClean(t, path)
			p := mediatest.Probe(t, path)
			o := origin(tc.ins...)
			for i, in := range tc.ins {
				checkPackets(t, path, p, i, in, o, 1000)
			}
		})
	}
}
