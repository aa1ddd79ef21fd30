package mp4

import (
	"fmt"
	"math"
	"time"
)

// finishHead hands Options.FinishHead the head of a regular MP4 whose
// mdat is every byte written after the fragmented header: the fragments,
// their moof boxes included as unused bytes. Chunk offsets point at the
// samples where the fragments put them, shifted by the head's length
// minus the fragmented header's.
func (w *Writer) finishHead() error {
	began := time.Now()
	from, size := w.initEnd, w.out.Pos
	payload := size - from
	large := payload+8 > math.MaxUint32
	mdatHeader := 8
	if large {
		mdatHeader = 16
	}
	co64 := false
	moov, err := w.moov(true, false)
	if err != nil {
		return w.out.Fail(fmt.Errorf("mp4: finish: %w", err))
	}
	if int64(len(ftyp(true))+len(moov)+mdatHeader)+payload > math.MaxUint32 {
		co64 = true
		if moov, err = w.moov(true, true); err != nil {
			return w.out.Fail(fmt.Errorf("mp4: finish: %w", err))
		}
	}
	headLen := int64(len(ftyp(true)) + len(moov) + mdatHeader)
	w.setOffsets(moov, co64, func(c chunk) int64 {
		return headLen - from + w.frags[c.frag].srcOffset + int64(c.off)
	})
	head := append(ftyp(true), moov...)
	head = appendMdatHeader(head, payload, large)
	if int64(len(head)) != headLen {
		return w.out.Fail(fmt.Errorf("mp4: finish: head of %d bytes, laid out for %d", len(head), headLen))
	}
	if err := w.opts.FinishHead(head, from); err != nil {
		return w.out.Fail(fmt.Errorf("mp4: finish: %w", err))
	}
	w.stats.Finished = true
	w.log.Debug("mp4: finished by a new head", "head bytes", len(head), "took", time.Since(began))
	return nil
}
