package mkv

import (
	"io"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
)

// TestChaptersAreWrittenWhereFFprobeAndMkvmergeFindThem: chapters asked
// for while recording land in the finished file with their names and
// start times (rebased like the frames), each ending where the next
// starts; the file still decodes clean.
func TestChaptersAreWrittenWhereFFprobeAndMkvmergeFindThem(t *testing.T) {
	t.Parallel()
	f, path := mediatest.CreateFile(t, "chapters.mkv")
	w := NewWriter(f, Options{})
	v, a := mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2)
	frames := mediatest.Interleave(v, a)
	for _, tr := range mediatest.Tracks(v, a) {
		if err := w.AddTrack(tr); err != nil {
			t.Fatal(err)
		}
	}
	first := frames[0].Timestamp
	marks := map[int]string{0: "start", len(frames) / 2: "middle ✓"}
	var at []int64
	for i, fr := range frames {
		if name, ok := marks[i]; ok {
			if err := w.Chapter(fr.Timestamp, name); err != nil {
				t.Fatal(err)
			}
			at = append(at, fr.Timestamp-first)
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
	for i, name := range []string{"start", "middle ✓"} {
		c := p.Chapters[i]
		if c.Tags["title"] != name || abs(c.Start-float64(at[i])/1e6) > 0.001 {
			t.Errorf("chapter %d: %q at %.3f s, want %q at %.3f s", i, c.Tags["title"], c.Start, name, float64(at[i])/1e6)
		}
	}
	if p.Chapters[0].End != p.Chapters[1].Start || p.Chapters[1].End <= p.Chapters[1].Start {
		t.Errorf("chapters do not follow each other: %+v", p.Chapters)
	}
	mediatest.DecodeClean(t, path)
	mediatest.RequireTools(t, "mkvmerge")
	out, _ := mediatest.Run(t, "mkvmerge", "-J", path)
	if !strings.Contains(out, `"chapters": [`) || !strings.Contains(out, `"num_entries": 2`) {
		t.Errorf("mkvmerge -J does not see the 2 chapters:\n%s", out)
	}
}

// TestALiveStreamRefusesChapters: a stream is never rewritten, so it
// cannot take chapters, and says so.
func TestALiveStreamRefusesChapters(t *testing.T) {
	var c mux.Chapterer = NewWriter(nonSeeker{io.Discard}, Options{})
	if err := c.Chapter(0, "x"); err == nil {
		t.Error("a live stream took a chapter")
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}
