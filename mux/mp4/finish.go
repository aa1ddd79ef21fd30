package mp4

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"
)

// finish turns the fragmented file at Options.Path into a regular MP4:
// ftyp, a moov with the complete sample table, then one mdat with the
// samples of every fragment in the order they were written. It writes a
// temporary file beside the recording and renames it over the recording,
// so until the rename the fragmented file stays complete and playable, and
// a failure (a full disk) leaves it as it is.
func (w *Writer) finish() error {
	began := time.Now()
	if f, ok := w.w.(interface{ Flush() error }); ok {
		if err := f.Flush(); err != nil {
			return w.fail(fmt.Errorf("mp4: finish: flush: %w", err))
		}
	}
	if s, ok := w.w.(io.Seeker); ok {
		// A buffered file output flushes when it seeks (the CLI's does).
		if _, err := s.Seek(0, io.SeekCurrent); err != nil {
			return w.fail(fmt.Errorf("mp4: finish: %w", err))
		}
	}
	path := w.opts.Path
	src, err := os.Open(path)
	if err != nil {
		return w.fail(fmt.Errorf("mp4: finish: %w", err))
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return w.fail(fmt.Errorf("mp4: finish: %w", err))
	}
	if !st.Mode().IsRegular() {
		// A FIFO or a device given as the output path: a stream.
		w.log.Debug("mp4: output is not a regular file; left fragmented", "path", path)
		return nil
	}
	if st.Size() != w.pos {
		return w.fail(fmt.Errorf("mp4: finish: %s holds %d bytes, but %d were written to it: not the file this muxer wrote, left fragmented", path, st.Size(), w.pos))
	}

	if !w.opts.FinishByCopy {
		done, err := w.finishInPlace(path, st)
		if err != nil {
			return w.fail(err)
		}
		if done {
			w.stats.Finished, w.stats.FinishedInPlace = true, true
			w.log.Debug("mp4: finished in place into a regular MP4", "path", path, "took", time.Since(began))
			return nil
		}
	}
	w.inPlace = false
	head := ftyp(true)
	// The moov's size does not depend on the offsets in it, only on
	// whether they are 32 or 64 bits wide: build it once to measure.
	probe, err := w.moov(true, 0, true)
	if err != nil {
		return w.fail(err)
	}
	mdatHeader := 8
	if w.dataLen+8 > math.MaxUint32 {
		mdatHeader = 16
	}
	co64 := int64(len(head)+len(probe)+mdatHeader)+w.dataLen > math.MaxUint32
	if !co64 {
		if probe, err = w.moov(true, 0, false); err != nil {
			return w.fail(err)
		}
	}
	base := int64(len(head) + len(probe) + mdatHeader)
	moov, err := w.moov(true, base, co64)
	if err != nil {
		return w.fail(err)
	}
	head = append(head, moov...)
	if mdatHeader == 16 {
		head = append(head, 0, 0, 0, 1, 'm', 'd', 'a', 't')
		head = appendU64(head, uint64(w.dataLen+16))
	} else {
		head = appendU32(head, uint32(w.dataLen+8))
		head = append(head, "mdat"...)
	}

	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.finishing")
	if err != nil {
		return w.fail(fmt.Errorf("mp4: finish: %w; %s stays fragmented", err, path))
	}
	abandon := func(err error) error {
		tmp.Close()
		os.Remove(tmp.Name())
		return w.fail(fmt.Errorf("mp4: finish: %w; %s stays fragmented (playable)", err, path))
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
		return w.fail(fmt.Errorf("mp4: finish: %w; %s stays fragmented (playable)", err, path))
	}
	w.stats.Finished = true
	w.log.Debug("mp4: finished into a regular MP4", "path", path, "bytes", base+w.dataLen, "took", time.Since(began))
	return nil
}

func appendU32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}
func appendU64(b []byte, v uint64) []byte { return appendU32(appendU32(b, uint32(v>>32)), uint32(v)) }

// errNoInsert says the file system cannot insert a range into a file.
var errNoInsert = errors.New("inserting a range is not supported here")

// finishInPlace finishes the recording without moving its samples: it
// inserts whole blocks at the start of the file (fallocate
// FALLOC_FL_INSERT_RANGE, ext4 and XFS: the blocks of the fragments are
// remapped, not copied) and writes into them and the padded header after
// them ftyp, the finished moov, a free box and the header of one mdat that
// spans every fragment, so the moof boxes become unused bytes inside it.
// It reports false, nil when the file system cannot, so the caller copies
// instead.
func (w *Writer) finishInPlace(path string, st os.FileInfo) (bool, error) {
	blk := blockSize(st)
	if blk <= 0 || w.firstFrag%blk != 0 || len(w.frags) == 0 {
		return false, nil
	}
	w.inPlace = true
	head := ftyp(true)
	probe, err := w.moov(true, 0, true)
	if err != nil {
		return false, err
	}
	size := st.Size()
	co64 := size+int64(len(head)+len(probe))+2*blk > math.MaxUint32
	mdatHeader := int64(8)
	if co64 {
		mdatHeader = 16
	}
	if !co64 {
		if probe, err = w.moov(true, 0, false); err != nil {
			return false, err
		}
	}
	need := int64(len(head)+len(probe)) + mdatHeader
	ins := max(need-w.firstFrag+blk-1, 0) / blk * blk
	if gap := w.firstFrag + ins - need; gap > 0 && gap < 8 {
		ins += blk // room for a free box's header
	}
	end := w.firstFrag + ins // where the first moof lands, the mdat payload starts
	moov, err := w.moov(true, ins, co64)
	if err != nil {
		return false, err
	}
	hdr := append(head, moov...)
	if gap := end - mdatHeader - int64(len(hdr)); gap > 0 {
		hdr = appendU32(hdr, uint32(gap))
		hdr = append(hdr, "free"...)
		hdr = append(hdr, make([]byte, gap-8)...)
	}
	if mdatHeader == 16 {
		hdr = append(hdr, 0, 0, 0, 1, 'm', 'd', 'a', 't')
		hdr = appendU64(hdr, uint64(size+ins-(end-16)))
	} else {
		hdr = appendU32(hdr, uint32(size+ins-(end-8)))
		hdr = append(hdr, "mdat"...)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false, fmt.Errorf("mp4: finish: %w", err)
	}
	defer f.Close()
	if ins > 0 {
		if err := insertRange(f, 0, ins); err != nil {
			if errors.Is(err, errNoInsert) {
				return false, nil
			}
			return false, fmt.Errorf("mp4: finish: inserting %d bytes: %w; %s stays fragmented (playable)", ins, err, path)
		}
	}
	if _, err := f.WriteAt(hdr, 0); err != nil {
		if ins > 0 && collapseRange(f, 0, ins) == nil {
			return false, fmt.Errorf("mp4: finish: %w; %s stays fragmented (playable)", err, path)
		}
		return false, fmt.Errorf("mp4: finish: %w; %s is damaged at its start", err, path)
	}
	if err := f.Close(); err != nil {
		return false, fmt.Errorf("mp4: finish: %w", err)
	}
	return true, nil
}
