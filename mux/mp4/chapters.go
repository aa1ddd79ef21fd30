package mp4

import (
	"errors"
	"unicode/utf8"

	"github.com/moq-export/moq-export/mux"
)

// chapter is a mark asked for by Chapter: a timestamp (µs, on the
// WriteFrame timeline) and a name.
type chapter struct {
	ts   int64
	name string
}

// maxChapters is what a Nero chapter list (chpl) counts in its one byte.
const maxChapters = 255

var _ mux.Chapterer = (*Writer)(nil)

// Chapter implements mux.Chapterer: a chapter called name starting at ts.
// The finished file lists the chapters in a Nero chapter list (moov/udta/
// chpl: ffmpeg, mpv, VLC and most MP4 readers show it; names are cut to
// 255 bytes); a live stream, never finished, gets none.
func (w *Writer) Chapter(ts int64, name string) error {
	if !w.Seekable() {
		return errors.New("mp4: chapters are written when the file is finished: a live stream cannot hold them")
	}
	if len(w.chapters) >= maxChapters {
		return errors.New("mp4: a file holds at most 255 chapters")
	}
	for len(name) > 255 {
		_, n := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-n]
	}
	w.chapters = append(w.chapters, chapter{ts: ts, name: name})
	return nil
}

// appendChapters appends moov's udta with the chapter list, times from
// start (µs after the origin, where the file's timeline begins) in units
// of 100 ns.
func (w *Writer) appendChapters(b *builder, start int64) {
	if len(w.chapters) == 0 {
		return
	}
	udta := b.start("udta")
	chpl := b.fullBox("chpl", 1, 0)
	b.u32(0) // reserved
	b.b = append(b.b, byte(len(w.chapters)))
	for _, c := range w.chapters {
		b.u64(uint64(max(c.ts-w.origin-start, 0)) * 10)
		b.b = append(b.b, byte(len(c.name)))
		b.b = append(b.b, c.name...)
	}
	b.end(chpl)
	b.end(udta)
}
