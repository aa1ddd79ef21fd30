package mp4

import (
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
