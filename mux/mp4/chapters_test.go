package mp4_test

import (
	"math"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/mp4"
)

// TestChaptersAreListedInTheFinishedMP4: chapters asked for while
// recording are in the finished file's chapter list with their names and
// start times (on the file's timeline); the file still decodes clean.
func TestChaptersAreListedInTheFinishedMP4(t *testing.T) {
	t.Parallel()
	f, path := mediatest.CreateFile(t, "chapters.mp4")
	w := mp4.NewWriter(f, mp4.Options{Path: path})
	v, a := mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2)
	frames := mediatest.Interleave(v, a)
	for _, tr := range mediatest.Tracks(v, a) {
		if err := w.AddTrack(tr); err != nil {
			t.Fatal(err)
		}
	}
	first := frames[0].Timestamp
	for _, fr := range frames {
		first = min(first, fr.Timestamp)
	}
	marks := map[int]string{0: "opening", len(frames) / 2: "the middle, ünïcode"}
	var at []float64
	for i, fr := range frames {
		if name, ok := marks[i]; ok {
			if err := w.Chapter(fr.Timestamp, name); err != nil {
				t.Fatal(err)
			}
			at = append(at, float64(fr.Timestamp-first)/1e6)
		}
		if err := w.WriteFrame(fr); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	p := mediatest.Probe(t, path, "-show_chapters")
	if len(p.Chapters) != 2 {
		t.Fatalf("ffprobe lists %d chapters, want 2: %+v", len(p.Chapters), p.Chapters)
	}
	for i, name := range []string{"opening", "the middle, ünïcode"} {
		c := p.Chapters[i]
		if c.Tags["title"] != name || math.Abs(c.Start-at[i]) > 0.001 {
			t.Errorf("chapter %d: %q at %.3f s, want %q at %.3f s", i, c.Tags["title"], c.Start, name, at[i])
		}
	}
	mediatest.DecodeClean(t, path)
}

// TestAStreamedMP4RefusesChapters: a stream is never finished, so it
// cannot list chapters, and says so.
func TestAStreamedMP4RefusesChapters(t *testing.T) {
	var c mux.Chapterer = mp4.NewWriter(nonSeekable{}, mp4.Options{})
	if err := c.Chapter(0, "x"); err == nil {
		t.Error("a stream took a chapter")
	}
}

type nonSeekable struct{}

func (nonSeekable) Write(p []byte) (int, error) { return len(p), nil }
