package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moq-export/moq-export/internal/units"
	"github.com/moq-export/moq-export/record"
)

// file is one object being recorded: the muxer writes a spool file (as a
// local file output: buffered, flushed within 500 ms); every PartSize
// bytes past the head part become a part that an uploader goroutine sends
// while the recording goes on; Close sends the head part (with its
// rewrites, or the head of a finished MP4) and the tail, and completes
// the upload, so the store puts the object together from parts it
// already holds.
type file struct {
	o     *Output
	key   string
	paths spoolPaths
	fo    *record.FileOutput // the muxer's writes
	rf    *os.File           // reads, punches, holds the lock

	ctx    context.Context // ends FinishTimeout after Close
	cancel context.CancelFunc

	mu        sync.Mutex
	idle      *sync.Cond // signalled when the uploader stops
	pos, end  int64      // write position, bytes written
	cut       int64      // where the next part begins
	man       manifest
	queue     []partRec // cut, waiting for the store, in order
	uploading bool
	err       error // sticky: a permanent store error
	head      []byte
	headFrom  int64
	closed    bool
	early     bool  // the head part is queued or went up (EarlyHeadAfter)
	next      int32 // the number of the next part cut
	full      atomic.Pointer[error]
	size      int64 // the object's size once finished

	sniff     sniffer // nil: parts are cut at any write (TS)
	initEnd   int64   // where the first media write began: [0, initEnd) is the header
	initDirty bool    // the header was rewritten after it was queued
	initSent  bool    // the header is queued or went up
	// split: the head part's media, [initEnd, HeadEnd), went up as part 1
	// (GCS and Azure, which join parts of any size: the finish sends a new
	// header as part 0 and keeps part 1); splitDirty: a write landed in it
	// after, so the finish sends the whole head part again.
	split, splitDirty bool

	// manMu orders the writes of the spool manifest, which run outside mu
	// (a rename over the old manifest can take long on a busy disk, and the
	// muxer's writes wait on mu); manSeq numbers the snapshots taken under
	// mu, manWritten is the newest one on disk.
	manMu              sync.Mutex
	manSeq, manWritten uint64
}

// manifestSnapshot is f.man as marshalled under mu, numbered.
type manifestSnapshot struct {
	seq uint64
	b   []byte
	err error
}

// snapshotManifestLocked takes the manifest to write. Called with f.mu held.
func (f *file) snapshotManifestLocked() manifestSnapshot {
	f.manSeq++
	b, err := marshalManifest(&f.man)
	return manifestSnapshot{seq: f.manSeq, b: b, err: err}
}

// writeManifestSnapshot writes s unless a newer snapshot is on disk
// already. It may run with or without f.mu held.
func (f *file) writeManifestSnapshot(s manifestSnapshot) error {
	if s.err != nil {
		return s.err
	}
	f.manMu.Lock()
	defer f.manMu.Unlock()
	if s.seq <= f.manWritten {
		return nil
	}
	if err := writeManifestBytes(f.paths.manifest, s.b); err != nil {
		return err
	}
	f.manWritten = s.seq
	return nil
}

// saveManifestLocked writes the manifest now. Called with f.mu held, on
// the rare paths (a rewritten head, Close).
func (f *file) saveManifestLocked() error {
	return f.writeManifestSnapshot(f.snapshotManifestLocked())
}

// URL names the object.
func (f *file) URL() string { return f.o.loc.object(f.key) }

// Name names the object in logs and events: its URL.
func (f *file) Name() string { return f.URL() }

// Size is the object's size once finished (0 before).
func (f *file) Size() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.size
}

// ErrRewrite is wrapped by a write into bytes already uploaded: only the
// head part (the first PartSize bytes) can be rewritten.
var ErrRewrite = errors.New("objstore: rewrite of uploaded bytes")

func (f *file) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return 0, f.err
	}
	if f.pos < f.cut && f.pos+int64(len(p)) > f.man.HeadEnd && f.man.HeadEnd > 0 {
		return 0, fmt.Errorf("%w: %d bytes at %d of %s", ErrRewrite, len(p), f.pos, f.URL())
	}
	kind := writeHeader
	if f.sniff != nil && f.pos == f.end {
		kind = f.sniff(p)
		if kind != writeHeader && f.initEnd == 0 {
			f.initEnd = f.end
		}
		if kind == writeSync && f.end-f.cut >= f.o.opts.PartSize {
			// A part ends before a sync point: the next one begins where
			// a player can start.
			f.cutParts()
		}
	} else if f.pos < f.initEnd && f.initSent {
		f.initDirty = true // a header rewritten (a late track): send it again
	}
	if f.split && !f.splitDirty && f.pos < f.man.HeadEnd && f.pos+int64(len(p)) > f.initEnd {
		f.splitDirty = true
		if f.man.HeadSplit {
			f.man.HeadSplit = false
			if err := f.saveManifestLocked(); err != nil {
				return 0, err
			}
		}
	}
	n, err := f.fo.Write(p)
	f.pos += int64(n)
	if f.pos > f.end {
		f.o.spool.Add(f.pos - f.end)
		f.o.written.Add(f.pos - f.end)
		f.end = f.pos
		// Without a sync point for two parts (a GOP longer than that),
		// or without sniffing (TS), a part ends at any write.
		if f.sniff == nil || f.end-f.cut >= 2*f.o.opts.PartSize {
			f.cutParts()
		}
	}
	return n, err
}

// Seek moves the write position (MKV, FLV patch their head at Close).
func (f *file) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pos, err := f.fo.Seek(offset, whence)
	if err == nil {
		f.pos = pos
	}
	return pos, err
}

// Flush writes what is buffered to the spool.
func (f *file) Flush() error { return f.fo.Flush() }

// FlushesItself implements record.SelfFlushingFile: the spool is a file
// output (written in blocks up to 1 MB, within 500 ms of a write), and a
// part is flushed before it is cut, so a muxer's flush after each MP4
// fragment would only cut the spool's writes to the fragment's size.
func (f *file) FlushesItself() bool { return true }

// FinishHead keeps the head of the finished MP4 for Close.
func (f *file) FinishHead(head []byte, from int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.head, f.headFrom = bytes.Clone(head), from
	return nil
}

// Cut says why the recording must end: the spool is full.
func (f *file) Cut() error {
	if e := f.full.Load(); e != nil {
		return *e
	}
	if max := f.o.opts.SpoolMax; max > 0 && f.o.waiting.Load() > max {
		err := fmt.Errorf("%w: %w: %s wait in %s for the store, over %s: %s is cut here, what was recorded before goes up when the store is back", record.ErrLimit, ErrSpoolFull,
			units.ByteSize(f.o.waiting.Load()), f.o.opts.SpoolDir, units.ByteSize(max), f.URL())
		if f.full.CompareAndSwap(nil, &err) {
			f.o.cuts.Add(1)
		}
		return err
	}
	return nil
}

// cutParts cuts what is written past the head part into parts of
// PartSize (always where a muxer's write ended) and starts the uploader.
func (f *file) cutParts() {
	ps := f.o.opts.PartSize
	if f.man.HeadEnd == 0 {
		if f.end < ps {
			return
		}
		f.man.HeadEnd, f.cut, f.next = f.end, f.end, 2
		return
	}
	if f.end-f.cut < ps {
		return
	}
	if err := f.fo.Flush(); err != nil {
		return // the write error sticks in fo and ends the recording
	}
	split := f.initEnd > 0 && f.o.loc.Scheme != "s3" // S3 wants 5 MiB in a part
	if f.initEnd > 0 && (!f.early || split) && (!f.initSent || f.initDirty) {
		// The header goes up with the first part (and again when it was
		// rewritten): with it, the parts from the second on make a
		// playable file without the head part (RecoverStore).
		f.initSent, f.initDirty = true, false
		f.queue = append(f.queue, partRec{N: 0, Size: f.initEnd})
		f.o.waiting.Add(f.initEnd)
	}
	if split && !f.early {
		// The head part's media goes up once, now; the finish puts a new
		// header (part 0) in front of it.
		f.early, f.split = true, true
		f.queue = append(f.queue, partRec{N: 1, Off: f.initEnd, Size: f.man.HeadEnd - f.initEnd})
		f.o.waiting.Add(f.man.HeadEnd - f.initEnd)
	}
	n := f.next
	f.next++
	f.queue = append(f.queue, partRec{N: n, Off: f.cut, Size: f.end - f.cut})
	f.o.waiting.Add(f.end - f.cut)
	if after := f.o.opts.EarlyHeadAfter; after > 0 && f.end >= after && !f.early {
		f.early = true
		f.queue = append(f.queue, partRec{N: 1, Size: f.man.HeadEnd})
		f.o.waiting.Add(f.man.HeadEnd)
	}
	f.cut = f.end
	if !f.uploading {
		f.uploading = true
		go f.upload()
	}
}

// upload sends the queued parts in order until none is left.
func (f *file) upload() {
	for {
		f.mu.Lock()
		if len(f.queue) == 0 || f.err != nil {
			f.uploading = false
			f.idle.Broadcast()
			f.mu.Unlock()
			return
		}
		p := f.queue[0]
		id := f.man.UploadID
		f.mu.Unlock()
		err := f.sendPart(id, &p)
		f.mu.Lock()
		if err != nil {
			if f.err == nil {
				f.err = err
			}
			// The spool keeps them for Recover; they wait no more.
			for _, q := range f.queue {
				f.o.waiting.Add(-q.Size)
			}
			f.queue = nil
			f.mu.Unlock()
			continue
		}
		f.queue = f.queue[1:]
		if p.N == 0 {
			// The header: it stays in the spool (the head part).
			f.mu.Unlock()
			f.o.waiting.Add(-p.Size)
			continue
		}
		if p.N == 1 {
			// The head part (or its media), early: it stays in the spool
			// for the finish.
			if p.Off > 0 {
				f.man.HeadSplit, f.man.InitEnd = !f.splitDirty, p.Off
			} else {
				f.man.EarlyHead = true
			}
			snap := f.snapshotManifestLocked()
			f.mu.Unlock()
			if err := f.writeManifestSnapshot(snap); err != nil {
				f.o.log.Warn("cannot write the spool manifest: a restart could not complete this object", "object", f.URL(), "err", err)
			}
			f.o.waiting.Add(-p.Size)
			continue
		}
		f.man.Parts = append(f.man.Parts, p)
		snap := f.snapshotManifestLocked()
		f.mu.Unlock()
		// Written outside mu: the muxer's writes do not wait for it.
		if err := f.writeManifestSnapshot(snap); err != nil {
			f.o.log.Warn("cannot write the spool manifest: a restart could not complete this object", "object", f.URL(), "err", err)
		}
		if err := punch(f.rf, p.Off, p.Size); err != nil {
			f.o.log.Debug("cannot release uploaded bytes from the spool", "err", err)
		}
		f.o.spool.Add(-p.Size)
		f.o.waiting.Add(-p.Size)
	}
}

// sendPart uploads part p, starting the multipart upload first.
func (f *file) sendPart(id string, p *partRec) error {
	if id == "" {
		var err error
		if id, err = f.o.st.create(f.ctx, f.key, contentType(f.key)); err != nil {
			return err
		}
		f.mu.Lock()
		f.man.UploadID = id
		snap := f.snapshotManifestLocked()
		f.mu.Unlock()
		if err = f.writeManifestSnapshot(snap); err != nil {
			return err
		}
	}
	b, err := newBody(io.NewSectionReader(f.rf, p.Off, p.Size))
	if err != nil {
		return err
	}
	p.ETag, err = f.o.st.uploadPart(f.ctx, f.key, id, p.N, b)
	return err
}

// Close finishes the object: it waits for the parts still queued (the
// store may be away: up to Options.FinishTimeout), then sends the head
// part and the tail and completes the upload. When that fails the spool
// keeps everything and Recover completes the object later.
func (f *file) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	f.mu.Unlock()
	werr := f.fo.Close()
	timer := time.AfterFunc(f.o.opts.FinishTimeout, f.cancel)
	defer timer.Stop()
	f.mu.Lock()
	for f.uploading {
		f.idle.Wait()
	}
	err := f.err
	f.man.Final = f.end
	f.man.HeadFrom = -1
	if f.head != nil {
		f.man.HeadFrom = f.headFrom
		if herr := os.WriteFile(f.paths.head, f.head, 0o600); herr != nil && err == nil {
			err = herr
		}
	}
	f.man.Closed = true
	if merr := f.saveManifestLocked(); merr != nil && err == nil {
		err = merr
	}
	man := f.man
	f.mu.Unlock()
	if err == nil {
		var size int64
		size, err = f.o.finish(f.ctx, f.rf, &man, f.head)
		if err == nil {
			f.mu.Lock()
			f.size = size
			f.mu.Unlock()
			f.o.spool.Add(-(man.Final - uploadedBytes(&man)))
			f.o.st.objects.Add(1)
			f.paths.remove()
		}
	}
	f.rf.Close()
	f.cancel()
	if err != nil {
		f.o.st.failures.Add(1)
		err = fmt.Errorf("%s is not finished in the store: %w; the spool (%s) keeps it, and a recorder started again with the same spool completes it", f.URL(), err, f.o.opts.SpoolDir)
	}
	if werr != nil {
		return werr
	}
	return err
}

func uploadedBytes(m *manifest) int64 {
	var n int64
	for _, p := range m.Parts {
		n += p.Size
	}
	return n
}

// finish puts the object together from the spool and the parts the store
// holds: the head part (the head of a finished MP4 and the bytes behind
// it, or the spool's first bytes as they are now), the uploaded parts,
// and the tail. An object that never reached a second part goes up in one
// request. It returns the object's size.
func (o *Output) finish(ctx context.Context, rf *os.File, m *manifest, head []byte) (int64, error) {
	final := m.Final
	from := int64(0)
	if head != nil && m.HeadFrom >= 0 {
		from = m.HeadFrom
	}
	section := func(off, end int64) io.ReadSeeker { return io.NewSectionReader(rf, off, end-off) }
	headPart := func(end int64) (*body, error) {
		if head != nil {
			return newBody(bytes.NewReader(head), section(from, end))
		}
		return newBody(section(0, end))
	}
	if m.UploadID == "" || len(m.Parts) == 0 {
		b, err := headPart(final)
		if err != nil {
			return 0, err
		}
		if err := o.st.put(ctx, m.Key, contentType(m.Key), b); err != nil {
			return 0, err
		}
		if m.UploadID != "" {
			_ = o.st.abort(ctx, m.Key, m.UploadID)
		}
		return b.size, nil
	}
	var parts []partRec
	var size int64
	if hb, ok := splitHead(m, head, from, section); ok {
		// The head part's media is part 1 already: a new header in front.
		etag, err := o.st.uploadPart(ctx, m.Key, m.UploadID, 0, hb)
		if err != nil {
			return 0, err
		}
		size = hb.size + m.HeadEnd - m.InitEnd
		parts = append([]partRec{{N: 0, Size: hb.size, ETag: etag}, {N: 1, Off: m.InitEnd, Size: m.HeadEnd - m.InitEnd}}, m.Parts...)
	} else {
		b, err := headPart(m.HeadEnd)
		if err != nil {
			return 0, err
		}
		etag, err := o.st.uploadPart(ctx, m.Key, m.UploadID, 1, b)
		if err != nil {
			return 0, err
		}
		size = b.size
		parts = append([]partRec{{N: 1, Size: b.size, ETag: etag}}, m.Parts...)
	}
	for _, p := range m.Parts {
		size += p.Size
	}
	if end := m.end(); final > end {
		tb, err := newBody(section(end, final))
		if err != nil {
			return 0, err
		}
		n := m.Parts[len(m.Parts)-1].N + 1
		etag, err := o.st.uploadPart(ctx, m.Key, m.UploadID, n, tb)
		if err != nil {
			return 0, err
		}
		parts = append(parts, partRec{N: n, Off: end, Size: tb.size, ETag: etag})
		size += tb.size
	}
	if err := o.st.complete(ctx, m.Key, m.UploadID, parts); err != nil {
		return 0, err
	}
	return size, nil
}

// splitHead returns the header that goes in front of part 1 when the head
// part's media went up as part 1 (manifest.HeadSplit): the head of the
// finished MP4 when it is followed by the bytes from there, else the
// spool's header (MKV and FLV patched theirs at Close; the live form's
// after a kill).
func splitHead(m *manifest, head []byte, from int64, section func(off, end int64) io.ReadSeeker) (*body, bool) {
	if !m.HeadSplit || m.InitEnd <= 0 || m.InitEnd > m.HeadEnd {
		return nil, false
	}
	var b *body
	var err error
	switch {
	case head == nil:
		b, err = newBody(section(0, m.InitEnd))
	case from == m.InitEnd:
		b, err = newBody(bytes.NewReader(head))
	default:
		return nil, false
	}
	return b, err == nil
}
