package mkv

import (
	"fmt"

	"github.com/moq-export/moq-export/mux"
)

// chapter is a mark asked for by Chapter: a timestamp (µs, on the
// WriteFrame timeline) and a name.
type chapter struct {
	ts   int64
	name string
}

type chapterAtom struct {
	ChapterUID       uint64 `ebml:"ChapterUID"`
	ChapterTimeStart uint64 `ebml:"ChapterTimeStart"`
	ChapterTimeEnd   uint64 `ebml:"ChapterTimeEnd,omitempty"`
	ChapterDisplay   struct {
		ChapString   string `ebml:"ChapString"`
		ChapLanguage string `ebml:"ChapLanguage"`
	} `ebml:"ChapterDisplay"`
}

type chaptersElement struct {
	Chapters struct {
		EditionEntry struct {
			EditionUID  uint64        `ebml:"EditionUID"`
			ChapterAtom []chapterAtom `ebml:"ChapterAtom"`
		} `ebml:"EditionEntry"`
	} `ebml:"Chapters"`
}

var _ mux.Chapterer = (*Writer)(nil)

// Chapter implements mux.Chapterer: a chapter called name starting at ts,
// lasting until the next one or the end. Chapters are written when the
// file is finalized, into the room the header keeps after Tracks (before
// the first Cluster, where every reader looks), so a file needs to be
// seekable; a live stream gets none.
func (w *Writer) Chapter(ts int64, name string) error {
	if w.ws == nil {
		return fmt.Errorf("mkv: chapters are written when the file is finished: a live stream cannot hold them")
	}
	if w.out.Closed {
		return fmt.Errorf("mkv: the file is finished")
	}
	w.chapters = append(w.chapters, chapter{ts: ts, name: name})
	return nil
}

// writeChapters writes the chapters asked for after Tracks, in the room
// the header keeps there; chapters that do not fit are left out, logged.
func (w *Writer) writeChapters() error {
	if len(w.chapters) == 0 || !w.originSet {
		return nil
	}
	tb, err := w.tracksElement()
	if err != nil {
		return w.out.Fail(err)
	}
	for n := len(w.chapters); n > 0; n-- {
		var ce chaptersElement
		ce.Chapters.EditionEntry.EditionUID = 1
		for i, c := range w.chapters[:n] {
			start := max(c.ts-w.origin, 0) * 1000 // ns
			a := chapterAtom{ChapterUID: uint64(i + 1), ChapterTimeStart: uint64(start)}
			if i+1 < n {
				a.ChapterTimeEnd = uint64(max(w.chapters[i+1].ts-w.origin, 0) * 1000)
			} else if end := uint64(w.endMs) * 1_000_000; end > uint64(start) {
				a.ChapterTimeEnd = end
			}
			a.ChapterDisplay.ChapString = c.name
			a.ChapterDisplay.ChapLanguage = "eng"
			ce.Chapters.EditionEntry.ChapterAtom = append(ce.Chapters.EditionEntry.ChapterAtom, a)
		}
		cb, err := marshal(&ce)
		if err != nil {
			return w.out.Fail(fmt.Errorf("mkv: chapters: %w", err))
		}
		b := append(tb, cb...)
		rest := w.tracksSpan - len(b)
		if rest != 0 && rest < 2 {
			continue
		}
		if n < len(w.chapters) {
			w.log.Warn("mkv: chapters left out: no room for them in the header", "kept", n, "asked", len(w.chapters))
		}
		if rest > 0 {
			b = appendVoid(b, rest)
		}
		if _, err := w.ws.Seek(w.base+w.segData+w.tracksPos, 0); err != nil {
			return w.out.Fail(fmt.Errorf("mkv: writing chapters: %w", err))
		}
		if _, err := w.ws.Write(b); err != nil {
			return w.out.Fail(fmt.Errorf("mkv: writing chapters: %w", err))
		}
		return nil
	}
	w.log.Warn("mkv: no room for chapters in the header", "asked", len(w.chapters))
	return nil
}
