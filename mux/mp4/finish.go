package mp4

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// finish turns the fragmented file at Options.Path into a regular MP4:
// ftyp, a moov with the complete sample table, then one mdat holding the
// samples. In place (finishInPlace) unless Options.FinishByCopy asks for
// a compact copy (finishByCopy).
func (w *Writer) finish() error {
	began := time.Now()
	if f, ok := w.w.(interface{ Flush() error }); ok {
		if err := f.Flush(); err != nil {
			return w.out.Fail(fmt.Errorf("mp4: finish: flush: %w", err))
		}
	}
	if s, ok := w.w.(io.Seeker); ok {
		// A buffered file output flushes when it seeks (the CLI's does).
		if _, err := s.Seek(0, io.SeekCurrent); err != nil {
			return w.out.Fail(fmt.Errorf("mp4: finish: %w", err))
		}
	}
	path := w.opts.Path
	st, err := os.Stat(path)
	if err != nil {
		return w.out.Fail(fmt.Errorf("mp4: finish: %w", err))
	}
	if !st.Mode().IsRegular() {
		// A FIFO or a device given as the output path: a stream.
		w.log.Debug("mp4: output is not a regular file; left fragmented", "path", path)
		return nil
	}
	if st.Size() != w.out.Pos {
		return w.out.Fail(fmt.Errorf("mp4: finish: %s holds %d bytes, but %d were written to it: not the file this muxer wrote, left fragmented", path, st.Size(), w.out.Pos))
	}
	if w.opts.FinishByCopy || len(w.frags) == 0 {
		if err := w.finishByCopy(path, st); err != nil {
			return w.out.Fail(err)
		}
		w.stats.Finished = true
		w.log.Debug("mp4: finished into a regular MP4", "path", path, "took", time.Since(began))
		return nil
	}
	moved, err := w.finishInPlace(path, st.Size())
	if err != nil {
		return w.out.Fail(err)
	}
	w.stats.Finished, w.stats.FinishedInPlace = true, true
	w.log.Debug("mp4: finished in place into a regular MP4", "path", path, "moved fragments", moved, "took", time.Since(began))
	return nil
}

// finishByCopy writes ftyp, the moov and an mdat with only the samples, in
// recording order, to a temporary file beside the recording and renames it
// over the recording, so until the rename the fragmented file stays
// complete and playable, and a failure (a full disk) leaves it as it is.
func (w *Writer) finishByCopy(path string, st os.FileInfo) error {
	src, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("mp4: finish: %w", err)
	}
	defer src.Close()
	head := ftyp(true)
	mdatHeader := 8
	if w.dataLen+8 > math.MaxUint32 {
		mdatHeader = 16
	}
	// The moov's size depends only on the width of its chunk offsets.
	moov, err := w.moov(true, false)
	if err != nil {
		return err
	}
	co64 := int64(len(head)+len(moov)+mdatHeader)+w.dataLen > math.MaxUint32
	if co64 {
		if moov, err = w.moov(true, true); err != nil {
			return err
		}
	}
	base := int64(len(head) + len(moov) + mdatHeader)
	w.setOffsets(moov, co64, func(c chunk) int64 { return base + w.frags[c.frag].dataOffset + int64(c.off) })
	head = append(head, moov...)
	head = appendMdatHeader(head, w.dataLen, mdatHeader == 16)

	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.finishing")
	if err != nil {
		return fmt.Errorf("mp4: finish: %w; %s stays fragmented", err, path)
	}
	abandon := func(err error) error {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("mp4: finish: %w; %s stays fragmented (playable)", err, path)
	}
	if err := tmp.Chmod(st.Mode().Perm()); err != nil {
		return abandon(err)
	}
	if _, err := tmp.Write(head); err != nil {
		return abandon(err)
	}
	for _, f := range w.frags {
		if _, err := src.Seek(f.srcOffset, io.SeekStart); err != nil {
			return abandon(err)
		}
		// *os.File to *os.File: io.CopyN lets the kernel copy
		// (copy_file_range), so the samples never pass through user space.
		if _, err := io.CopyN(tmp, src, f.size); err != nil {
			return abandon(err)
		}
	}
	if err := tmp.Close(); err != nil {
		return abandon(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("mp4: finish: %w; %s stays fragmented (playable)", err, path)
	}
	return nil
}

// appendMdatHeader appends the header of an mdat holding n payload bytes,
// with a 64-bit size when large.
func appendMdatHeader(b []byte, n int64, large bool) []byte {
	if large {
		b = append(b, 0, 0, 0, 1, 'm', 'd', 'a', 't')
		return appendU64(b, uint64(n+16))
	}
	b = appendU32(b, uint32(n+8))
	return append(b, "mdat"...)
}

func appendU32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}
func appendU64(b []byte, v uint64) []byte { return appendU32(appendU32(b, uint32(v>>32)), uint32(v)) }

// inPlaceLayout is where finishInPlace puts things: the finished header
// (ftyp, moov, mdat header) fills the file's first end bytes, and the
// samples of the first moved fragments, which lay there, go to the end.
type inPlaceLayout struct {
	end        int64 // length of the finished header: where the mdat payload starts
	mdatHeader int64 // 8, or 16 for a 64-bit size
	co64       bool
	moved      int   // the first moved fragments are relocated
	dataAt     int64 // offset of the first relocated sample byte
	final      int64 // file size once finished
}

// layoutInPlace finds the layout for a fragmented file of size bytes and
// a finished moov of moovLen bytes with 32-bit offsets (co64 adds 4 bytes
// per chunk). The moov's size depends on the width of its chunk offsets,
// and how much is relocated on the moov's size: both widths only grow,
// so this settles in at most three rounds.
func (w *Writer) layoutInPlace(size int64, moovLen int) inPlaceLayout {
	chunks := 0
	for _, t := range w.live {
		chunks += len(t.tab.chunks)
	}
	l := inPlaceLayout{mdatHeader: 8}
	for {
		l.end = int64(len(ftyp(true))+moovLen) + l.mdatHeader
		if l.co64 {
			l.end += 4 * int64(chunks)
		}
		l.moved = 0
		moved := int64(0)
		for l.moved < len(w.frags) && w.frags[l.moved].srcOffset < l.end {
			moved += w.frags[l.moved].size
			l.moved++
		}
		l.final, l.dataAt = size, size
		if l.moved > 0 {
			// A free box at the old end holds the relocated samples, at
			// or past the header's end.
			l.dataAt = max(size+8, l.end)
			l.final = l.dataAt + moved
		}
		co64 := l.co64 || l.final > math.MaxUint32
		large := l.mdatHeader == 16 || l.final-(l.end-l.mdatHeader) > math.MaxUint32
		if co64 == l.co64 && large == (l.mdatHeader == 16) {
			return l
		}
		l.co64 = co64
		if large {
			l.mdatHeader = 16
		}
	}
}

// finishInPlace finishes the recording in the same file without moving
// most of its samples: the finished header (ftyp, the moov, the header of
// one mdat that spans the rest of the file) is written over the file's
// first bytes, where the fragmented header and the first fragments lie.
// The samples of those first fragments are first copied to the end of the
// file, inside a free box so that the fragmented file stays valid until
// the header is written. Every other sample stays where its fragment put
// it; the moof boxes become unused bytes inside the mdat. The cost is
// that of the moov, never of the media. It returns how many fragments
// were relocated.
func (w *Writer) finishInPlace(path string, size int64) (int, error) {
	moov, err := w.moov(true, false)
	if err != nil {
		return 0, err
	}
	l := w.layoutInPlace(size, len(moov))
	if l.co64 {
		if moov, err = w.moov(true, true); err != nil {
			return 0, err
		}
	}
	relocated := make([]int64, l.moved)
	off := l.dataAt
	for i := range relocated {
		relocated[i] = off
		off += w.frags[i].size
	}
	w.setOffsets(moov, l.co64, func(c chunk) int64 {
		if c.frag < l.moved {
			return relocated[c.frag] + int64(c.off)
		}
		return w.frags[c.frag].srcOffset + int64(c.off)
	})
	hdr := append(ftyp(true), moov...)
	hdr = appendMdatHeader(hdr, l.final-l.end, l.mdatHeader == 16)
	if int64(len(hdr)) != l.end {
		return 0, fmt.Errorf("mp4: finish: header of %d bytes, laid out for %d", len(hdr), l.end)
	}

	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, fmt.Errorf("mp4: finish: %w; %s stays fragmented (playable)", err, path)
	}
	defer f.Close()
	undo := func(err error) error {
		if f.Truncate(size) != nil {
			return fmt.Errorf("mp4: finish: %w; %s is playable up to its last fragment", err, path)
		}
		return fmt.Errorf("mp4: finish: %w; %s stays fragmented (playable)", err, path)
	}
	if l.moved > 0 {
		free := make([]byte, l.dataAt-size)
		if l.final-size > math.MaxUint32 {
			return 0, undo(fmt.Errorf("%d bytes to relocate", l.final-size))
		}
		copy(free, appendU32(nil, uint32(l.final-size)))
		copy(free[4:], "free")
		if _, err := f.WriteAt(free, size); err != nil {
			return 0, undo(err)
		}
		var buf []byte
		for i, fr := range w.frags[:l.moved] {
			buf = slices.Grow(buf[:0], int(fr.size))[:fr.size]
			if _, err := f.ReadAt(buf, fr.srcOffset); err != nil {
				return 0, undo(err)
			}
			if _, err := f.WriteAt(buf, relocated[i]); err != nil {
				return 0, undo(err)
			}
		}
	}
	// What the header overwrites, to put back if writing it fails.
	orig := make([]byte, min(l.end, size))
	if _, err := f.ReadAt(orig, 0); err != nil {
		return 0, undo(err)
	}
	if _, err := f.WriteAt(hdr, 0); err != nil {
		if _, rerr := f.WriteAt(orig, 0); rerr != nil {
			return 0, fmt.Errorf("mp4: finish: %w; %s is damaged at its start", err, path)
		}
		return 0, undo(err)
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("mp4: finish: %w", err)
	}
	return l.moved, nil
}
