package objstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Recovered is an object Recover completed.
type Recovered struct {
	URL  string
	Size int64
	// Finished is true when the recording had ended cleanly (the object
	// is the finished file); false when its recorder died while recording
	// (the object is the live form: fragmented MP4, MKV without duration,
	// TS, up to the spool's last flush; an FLV gets its duration and size
	// from the spool, which is all its finished form adds).
	Finished bool
	// WithoutHead is true when RecoverStore completed the recording
	// without its head part (it never left the lost spool: recordings
	// under Options.EarlyHeadAfter): the object is the file's header
	// followed by the parts from the second on, so it begins PartSize
	// or a little more into the recording, at a keyframe (a TS: at its
	// second part, from its next keyframe).
	WithoutHead bool
}

// Recover completes, from the spool, the objects of this Output's bucket
// whose recorder died (its spool files are not locked by a running
// recorder): the head part and the tail come from the spool, the parts
// in between are those the store already took. What the recorder had
// written reaches the object up to its spool's last flush (at most 500 ms
// before the kill). Objects of other buckets are left for their Output.
// Each object is tried once; one that fails stays in the spool.
func (o *Output) Recover(ctx context.Context) ([]Recovered, error) {
	names, err := filepath.Glob(filepath.Join(o.opts.SpoolDir, "*.json"))
	if err != nil {
		return nil, err
	}
	var done []Recovered
	var errs []error
	for _, name := range names {
		r, err := o.recoverOne(ctx, strings.TrimSuffix(filepath.Base(name), ".json"))
		if errors.Is(err, errLocked) || errors.Is(err, errOtherBucket) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, r)
	}
	return done, errors.Join(errs...)
}

var errOtherBucket = errors.New("another bucket's")

func (o *Output) recoverOne(ctx context.Context, id string) (Recovered, error) {
	paths := pathsOf(o.opts.SpoolDir, id)
	m, err := readManifest(paths.manifest)
	if err != nil {
		return Recovered{}, err
	}
	if m.Bucket != o.loc.Bucket {
		return Recovered{}, errOtherBucket
	}
	rf, err := os.OpenFile(paths.media, os.O_RDWR, 0)
	if err != nil {
		return Recovered{}, fmt.Errorf("objstore: recover %s: %w", o.loc.object(m.Key), err)
	}
	defer rf.Close()
	if err := lock(rf); err != nil {
		return Recovered{}, err
	}
	st, err := rf.Stat()
	if err != nil {
		return Recovered{}, err
	}
	var head []byte
	if m.Closed && m.HeadFrom >= 0 {
		if head, err = os.ReadFile(paths.head); err != nil {
			return Recovered{}, fmt.Errorf("objstore: recover %s: the head of the finished MP4: %w", o.loc.object(m.Key), err)
		}
	}
	if !m.Closed || m.Final == 0 || m.Final > st.Size() {
		// Killed while recording: the spool file is the live form up to
		// its last flush.
		m.Final, head = st.Size(), nil
		if strings.EqualFold(path.Ext(m.Key), ".mp4") {
			// A kill during a write (a fragment is one write) leaves part
			// of a fragment: the object ends at the last whole one. Every
			// write ends on a box, and so does every part.
			m.Final = wholeBoxes(rf, m.end(), m.Final)
		}
		if strings.EqualFold(path.Ext(m.Key), ".flv") {
			// An FLV's finished form is its duration and size in
			// onMetaData: both are known from the spool.
			finishFLV(rf, min(m.HeadEnd, m.Final), m.Final)
		}
	}
	if m.HeadEnd == 0 || m.HeadEnd > m.Final {
		m.HeadEnd, m.Parts = m.Final, nil
	}
	size, err := o.finish(ctx, rf, m, head)
	var se *StoreError
	if errors.As(err, &se) && (se.Code == "NoSuchUpload" || se.Code == "InvalidBlockList" || (o.loc.Scheme == "gs" && se.Status == 404)) {
		// Killed after the store completed the object, before the spool
		// was cleared: the object is there.
		if ok, xerr := o.st.exists(ctx, m.Key); xerr == nil && ok {
			// What the finish would have deleted after: the header (S3),
			// the part objects (GCS).
			_ = o.st.abort(ctx, m.Key, m.UploadID)
			paths.remove()
			return Recovered{URL: o.loc.object(m.Key), Size: m.Final, Finished: m.Closed}, nil
		}
	}
	if err != nil {
		return Recovered{}, fmt.Errorf("objstore: recover %s: %w", o.loc.object(m.Key), err)
	}
	o.st.objects.Add(1)
	paths.remove()
	return Recovered{URL: o.loc.object(m.Key), Size: size, Finished: m.Closed}, nil
}

// RecoverStore completes, from the store alone, the unfinished multipart
// uploads under the key template's literal prefix that took no part for
// idle (their recorder is gone, with its spool: another machine) and that
// no manifest of this Output's spool names (Recover completes those).
// What becomes of an upload:
//
//   - its head part went up early (recordings past
//     Options.EarlyHeadAfter; on GCS and Azure every recording: there
//     its media goes up as part 1, behind the header): a playable object
//     in its live form holding every part that reached the store, from
//     the start;
//   - otherwise (S3: MP4, MKV/WebM, FLV): the file's header, which went up
//     with the first part, followed by the parts from the second on: a
//     playable object in its live form from the second part's first
//     keyframe (parts are cut before a keyframe) to the end of the last
//     part; the head part (PartSize, a little more to reach a keyframe)
//     is lost with the spool (Recovered.WithoutHead);
//   - a TS without its head part: the TS from its second part on;
//   - an upload of a header alone (its recording never cut a part, or
//     its upload was completed before the header was deleted) is
//     deleted.
//
// Parts after a missing one are left out. In every case the tail that
// was not yet a part (up to PartSize) is lost.
func (o *Output) RecoverStore(ctx context.Context, idle time.Duration) ([]Recovered, error) {
	prefix := o.loc.Key
	if i := strings.IndexByte(prefix, '{'); i >= 0 {
		prefix = prefix[:i]
	}
	ours := map[string]bool{}
	names, _ := filepath.Glob(filepath.Join(o.opts.SpoolDir, "*.json"))
	for _, name := range names {
		if m, err := readManifest(name); err == nil && m.UploadID != "" {
			ours[m.UploadID] = true
		}
	}
	ups, err := o.st.unfinished(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var done []Recovered
	var errs []error
	for _, u := range ups {
		last := u.LastPart
		if last.IsZero() {
			last = u.Started
		}
		if ours[u.ID] || time.Since(last) < idle || len(u.Parts) == 0 {
			continue
		}
		if o.loc.Scheme == "gs" && o.finishedAfter(ctx, u) {
			// GCS parts left behind by a finish that completed (an S3
			// upload goes when it completes; Azure drops the blocks
			// left out of a commit).
			_ = o.st.abort(ctx, u.Key, u.ID)
			continue
		}
		slices.SortFunc(u.Parts, func(a, b partRec) int { return int(a.N - b.N) })
		var header []partRec
		media := u.Parts
		if media[0].N == 0 {
			header, media = media[:1], media[1:]
		}
		if len(media) == 0 {
			// Its header alone: no media reached the store, or what is
			// left of an upload that was completed or aborted.
			_ = o.st.abort(ctx, u.Key, u.ID)
			continue
		}
		first := media[0].N
		ts := strings.EqualFold(path.Ext(u.Key), ".ts")
		switch {
		case first == 1:
			if o.loc.Scheme == "s3" {
				header = nil // the head part went up (EarlyHeadAfter)
			}
			// GCS, Azure: part 1 is the head part's media, behind the
			// header (or, without one, a TS's head part).
		case first == 2 && (header != nil || ts):
		case o.loc.Scheme != "s3" && o.exists(ctx, u.Key):
			// Parts staged after the object was completed (a request of
			// the dead recorder that the store finished late): GCS part
			// objects, Azure blocks no commit will take.
			_ = o.st.abort(ctx, u.Key, u.ID)
			continue
		default:
			errs = append(errs, fmt.Errorf("%s: neither its head part nor its header reached the store: not playable without them; left unfinished", o.loc.object(u.Key)))
			continue
		}
		parts := append(slices.Clone(header), media[0])
		size := media[0].Size
		for _, p := range media[1:] {
			if p.N != parts[len(parts)-1].N+1 {
				break
			}
			parts = append(parts, p)
			size += p.Size
		}
		if header != nil {
			size += header[0].Size
		}
		if err := o.st.complete(ctx, u.Key, u.ID, parts); err != nil {
			errs = append(errs, err)
			continue
		}
		o.st.objects.Add(1)
		done = append(done, Recovered{URL: o.loc.object(u.Key), Size: size, WithoutHead: first == 2})

	}
	return done, errors.Join(errs...)
}

// finishedAfter reports whether the object of u exists and was written
// after u's last part: the upload was finished.
func (o *Output) finishedAfter(ctx context.Context, u upload) bool {
	objs, err := o.st.list(ctx, u.Key)
	if err != nil {
		return false
	}
	for _, ob := range objs {
		if ob.Key == u.Key && !ob.Modified.Before(u.LastPart) {
			return true
		}
	}
	return false
}

// wholeBoxes walks the top-level ISO BMFF boxes of r from off (where a
// box begins) to size and returns where the last whole one ends; a moof
// counts only with the box after it (its mdat): a moof whose mdat was cut
// would point its samples past the end of the object.
func wholeBoxes(r io.ReaderAt, off, size int64) int64 {
	var h [16]byte
	end := off
	for off+8 <= size {
		if _, err := r.ReadAt(h[:8], off); err != nil {
			break
		}
		n := int64(binary.BigEndian.Uint32(h[:4]))
		if n == 1 {
			if off+16 > size {
				break
			}
			if _, err := r.ReadAt(h[8:16], off+8); err != nil {
				break
			}
			n = int64(binary.BigEndian.Uint64(h[8:16]))
		}
		if n < 8 || n > size-off {
			break
		}
		off += n
		if string(h[4:8]) != "moof" {
			end = off
		}
	}
	return end
}

// finishFLV writes the duration (from the first audio or video tag's
// time to the last tag's, the last frame's own duration unknown) and the
// size of the FLV that is f's first size bytes into its onMetaData, which
// lies in its first head bytes, as the FLV muxer does at a clean stop.
// The last tag is found from the PreviousTagSize that ends the file; an
// FLV it cannot read is left as it is.
func finishFLV(f *os.File, head, size int64) {
	if head <= 13 || size < head {
		return
	}
	hb := make([]byte, min(head, 1<<20))
	if _, err := f.ReadAt(hb, 0); err != nil || string(hb[:3]) != "FLV" {
		return
	}
	tagTime := func(h []byte) int64 {
		return int64(h[4])<<16 | int64(h[5])<<8 | int64(h[6]) | int64(h[7])<<24
	}
	var first int64 = -1
	for off := int64(binary.BigEndian.Uint32(hb[5:9])) + 4; off+11 <= int64(len(hb)); {
		t := hb[off:]
		if t[0] == 8 || t[0] == 9 {
			first = tagTime(t)
			break
		}
		off += 11 + (int64(t[1])<<16 | int64(t[2])<<8 | int64(t[3])) + 4
	}
	var tail [4]byte
	if first < 0 || size < 15 {
		return
	}
	if _, err := f.ReadAt(tail[:], size-4); err != nil {
		return
	}
	at := size - 4 - int64(binary.BigEndian.Uint32(tail[:]))
	var th [11]byte
	if at < 13 {
		return
	}
	if _, err := f.ReadAt(th[:], at); err != nil || th[0] != 8 && th[0] != 9 && th[0] != 18 ||
		11+(int64(th[1])<<16|int64(th[2])<<8|int64(th[3])) != size-4-at {
		return
	}
	patch := func(name string, v float64) {
		key := append([]byte{0, byte(len(name))}, name...)
		i := bytes.Index(hb, append(key, 0)) // the name, then an AMF0 number
		if i < 0 || int64(i+len(key)+9) > int64(len(hb)) {
			return
		}
		var num [8]byte
		binary.BigEndian.PutUint64(num[:], math.Float64bits(v))
		f.WriteAt(num[:], int64(i+len(key)+1))
	}
	patch("duration", float64(max(tagTime(th[:])-first, 0))/1000)
	patch("filesize", float64(size))
}

// exists reports whether key names an object (false when the store cannot
// say).
func (o *Output) exists(ctx context.Context, key string) bool {
	ok, err := o.st.exists(ctx, key)
	return err == nil && ok
}
