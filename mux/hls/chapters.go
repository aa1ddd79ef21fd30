package hls

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/moq-export/moq-export/mux"
)

// chapterState is one chapter of the package (Writer.Chapter): a named
// point of the timeline that lasts until the next one, or the end. Each
// media playlist carries it as an EXT-X-DATERANGE.
type chapterState struct {
	ID    string    `json:"id"`
	Start int64     `json:"start"` // µs on the package's timeline
	Date  time.Time `json:"date"`  // wall clock of Start
	Name  string    `json:"name"`
}

// chapterClass is the CLASS of the chapters' EXT-X-DATERANGE tags.
const chapterClass = "org.moq-export.chapter"

var (
	_ mux.Chapterer  = (*Writer)(nil)
	_ mux.FrameEnder = (*Writer)(nil)
)

// Chapter marks timestamp ts (µs, on the timeline of WriteFrame) with a
// chapter called name: an EXT-X-DATERANGE (CLASS "org.moq-export.chapter",
// the name in X-TITLE, START-DATE on the EXT-X-PROGRAM-DATE-TIME clock, a
// DURATION up to the next chapter or the end) in every media playlist
// from the next one written. A chapter asked for before the first frame
// starts at the first frame.
func (w *Writer) Chapter(ts int64, name string) error {
	if w.closed {
		return mux.ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	if err := w.load(); err != nil {
		return err
	}
	if !w.started {
		w.early = append(w.early, pendingChapter{ts, name})
		return nil
	}
	w.addChapter(ts-w.origin, name)
	return nil
}

// pendingChapter is a chapter asked for before the first frame.
type pendingChapter struct {
	ts   int64
	name string
}

// addChapter adds a chapter at rel (package µs), never before this run.
func (w *Writer) addChapter(rel int64, name string) {
	rel = max(rel, w.runStart)
	c := chapterState{ID: "chapter-" + strconv.Itoa(len(w.st.Chapters)+1), Start: rel, Name: name,
		Date: w.runWall.Add(time.Duration(rel-w.runStart) * time.Microsecond).UTC()}
	w.st.Chapters = append(w.st.Chapters, c)
	slices.SortStableFunc(w.st.Chapters, func(a, b chapterState) int { return int(min(max(a.Start-b.Start, -1), 1)) })
}

// dateRanges returns the EXT-X-DATERANGE lines of the chapters of a
// playlist that ends at end (package µs): the last chapter's DURATION
// runs to end when final, and is left out while recording.
func (w *Writer) dateRanges(end int64, final bool) []byte {
	var b []byte
	for i, c := range w.st.Chapters {
		b = fmt.Appendf(b, "#EXT-X-DATERANGE:ID=\"%s\",CLASS=\"%s\",START-DATE=\"%s\"", c.ID, chapterClass, c.Date.Format("2006-01-02T15:04:05.000Z07:00"))
		next := int64(-1)
		switch {
		case i+1 < len(w.st.Chapters):
			next = w.st.Chapters[i+1].Start
		case final:
			next = end
		}
		if next > c.Start {
			b = fmt.Appendf(b, ",DURATION=%.3f", float64(next-c.Start)/1e6)
		}
		b = fmt.Appendf(b, ",X-TITLE=\"%s\"\n", quoted(c.Name))
	}
	return b
}
