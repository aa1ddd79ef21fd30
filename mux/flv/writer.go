package flv

import (
	"fmt"
	"io"
	"log/slog"
	"math"

	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/internal/muxbase"
)

// Options configures a Writer. The zero value is ready to use.
type Options struct {
	// KeepTimestamps writes the source timeline as it is instead of moving
	// the first frame to 0. Timestamps past 2^32 ms (49.7 days) then wrap,
	// as FLV's 32-bit tag time does; ffmpeg unwraps them.
	KeepTimestamps bool
	// Logger receives warnings (ignored tracks, dropped frames, wrapped
	// timestamps) and debug notes. Nil discards them.
	Logger *slog.Logger
}

// ErrTrackLimit is wrapped by AddTrack when FLV's single video and single
// audio slot is already taken (Caps.PerKind). The track is not added; the
// engine can log the error as a warning and go on without it. It is
// mux.ErrTrackLimit.
var ErrTrackLimit = mux.ErrTrackLimit

// Caps is what FLV carries: the tracks Supports accepts, one video and one
// audio at a time.
var Caps = mux.Caps{Container: "flv", Supports: Supports, PerKind: map[mux.Kind]int{mux.Video: 1, mux.Audio: 1}}

// Supports returns nil when FLV can carry t: its codec is one of those the
// package doc lists, its kind matches the codec, and its codec
// configuration record (if any) is usable. Otherwise the error wraps
// mux.ErrUnsupportedCodec (a *mux.UnsupportedCodecError suggesting another
// container) or says what is wrong with the track. AddTrack applies the
// same check.
func Supports(t mux.Track) error {
	_, err := checkedTrack(t)
	return err
}

// checkedTrack returns the writer's state for t, or why FLV cannot carry t.
func checkedTrack(t mux.Track) (*track, error) {
	fam, info, err := lookupCodec(t)
	if err != nil {
		return nil, err
	}
	tr, err := newTrack(t, fam, info)
	if err != nil {
		return nil, fmt.Errorf("flv: track %d (%s): %w", t.ID, t.Name, err)
	}
	return tr, nil
}

// Writer writes one FLV stream. It implements mux.Muxer. Calls must come
// from one goroutine.
type Writer struct {
	out    muxbase.Output // the io.Writer, the bytes written and the sticky error
	opts   Options
	log    *slog.Logger
	seeker io.WriteSeeker // w, when it can seek; nil otherwise
	start  int64          // seeker position at NewWriter

	tracks       map[int]*track
	video, audio *track
	ignored      map[int]bool // tracks refused for the slot limit

	started bool

	base    int64 // µs subtracted from every timestamp
	offset  int64 // µs added by discontinuity shifts
	flags   byte  // header flags written
	meta    metadata
	metaPos int64 // output position of the onMetaData body; -1 when none

	buf   []byte
	endMs int64 // end of the last presented frame, output ms
	// startMs is the earliest presentation time written, output ms: with
	// KeepTimestamps the file starts there, not at 0, and onMetaData's
	// duration is endMs - startMs.
	startMs   int64
	haveStart bool
	// last holds, per mux.Kind, the last tag time written: decode times
	// never go back within a kind, also across a replaced track.
	last [3]struct {
		ms int64
		ok bool
	}
	wrapWarned bool
	stats      mux.Stats
}

// NewWriter returns a Writer that writes FLV to w. Nothing is written
// before the first WriteFrame (or Close). When w is an io.WriteSeeker whose
// Seek works (a file, not a pipe), Close patches onMetaData's duration and
// filesize.
func NewWriter(w io.Writer, opts Options) *Writer {
	fw := &Writer{
		out:     muxbase.NewOutput(w, "flv"),
		opts:    opts,
		log:     opts.Logger,
		tracks:  make(map[int]*track),
		ignored: make(map[int]bool),
		metaPos: -1,
		buf:     make([]byte, 0, 64<<10),
	}
	if fw.log == nil {
		fw.log = slog.New(slog.DiscardHandler)
	}
	if ws, ok := w.(io.WriteSeeker); ok {
		if pos, err := ws.Seek(0, io.SeekCurrent); err == nil {
			fw.seeker, fw.start = ws, pos
		}
	}
	return fw
}

var _ mux.Muxer = (*Writer)(nil)

// Stats implements mux.Muxer.
func (w *Writer) Stats() mux.Stats { return w.stats }

// AddTrack binds t to FLV's video or audio slot. The first track of each
// kind wins; a later one gets an error wrapping ErrTrackLimit. Codecs FLV
// cannot carry get a *mux.UnsupportedCodecError. After the header is
// written, only a track that replaces a removed one of the same kind and
// codec family is accepted; others get mux.ErrLateTrack. Frames of a
// refused track are ignored.
func (w *Writer) AddTrack(t mux.Track) error {
	if w.out.Closed {
		return mux.ErrClosed
	}
	if _, dup := w.tracks[t.ID]; dup {
		return fmt.Errorf("flv: track %d added twice", t.ID)
	}
	err := w.addTrack(t)
	if err != nil {
		// Frames of a refused track are ignored rather than errors.
		w.ignored[t.ID] = true
	}
	return err
}

func (w *Writer) addTrack(t mux.Track) error {
	tr, err := checkedTrack(t)
	if err != nil {
		return err
	}
	slot := &w.video
	if t.Kind == mux.Audio {
		slot = &w.audio
	}
	if cur := *slot; cur != nil {
		return fmt.Errorf("flv: track %d (%s, %s) not added, keeping track %d (%s): %w",
			t.ID, t.Name, t.Codec, cur.ID, cur.Name, Caps.CheckCount(t.Kind, 1))
	}
	if w.started {
		declared := (t.Kind == mux.Video && w.flags&flagVideo != 0) || (t.Kind == mux.Audio && w.flags&flagAudio != 0)
		if !declared {
			return fmt.Errorf("flv: %v track %d (%s): %w", t.Kind, t.ID, t.Name, mux.ErrLateTrack)
		}
		if prev := w.lastFamily(t.Kind); prev != "" && prev != tr.fam {
			return fmt.Errorf("flv: track %d (%s) would change %v codec from %s to %s mid-file: %w",
				t.ID, t.Name, t.Kind, prev, tr.fam, mux.ErrLateTrack)
		}
	}
	*slot = tr
	w.tracks[t.ID] = tr
	if w.started {
		w.log.Info("flv: track replaces the removed one", "track", t.ID, "name", t.Name, "codec", t.Codec)
	}
	return nil
}

// lastFamily returns the codec family the header declared for kind.
func (w *Writer) lastFamily(kind mux.Kind) string {
	if kind == mux.Video {
		return w.meta.videoFam
	}
	return w.meta.audioFam
}

// RemoveTrack frees the track's slot; a later AddTrack of the same kind and
// codec family can take it.
func (w *Writer) RemoveTrack(id int) error {
	if w.out.Closed {
		return mux.ErrClosed
	}
	t, ok := w.tracks[id]
	if !ok {
		if w.ignored[id] {
			delete(w.ignored, id)
			return nil
		}
		return w.out.UnknownTrack("remove", id)
	}
	delete(w.tracks, id)
	if w.video == t {
		w.video = nil
	}
	if w.audio == t {
		w.audio = nil
	}
	return nil
}

// WriteFrame writes one frame as an FLV tag, preceded by the file header on
// the first call and by a sequence header when the track's configuration is
// new. Frames that cannot be decoded yet (before the first keyframe, or
// before the first parameter sets of Annex B video) are dropped with a debug
// log. Frames of tracks refused by AddTrack are ignored.
func (w *Writer) WriteFrame(f mux.Frame) error {
	if err := w.out.Usable(); err != nil {
		return err
	}
	t, ok := w.tracks[f.TrackID]
	if !ok {
		if w.ignored[f.TrackID] {
			return nil
		}
		return w.out.UnknownTrack("frame for", f.TrackID)
	}
	if f.Discontinuity {
		t.disc = true // applied at the track's next written frame
	}
	if len(f.Payload) == 0 {
		w.log.Debug("flv: empty frame skipped", "track", t.ID, "ts", f.Timestamp)
		w.stats.Dropped++
		return nil
	}
	if !w.started {
		if err := w.writeHeader(f.Timestamp); err != nil {
			return err
		}
	}
	if t.disc {
		w.applyDiscontinuity(t, f.Timestamp)
	}

	pts := f.Timestamp - w.base + w.offset // µs on the output timeline
	payload, dts, err := t.prepare(&f, pts)
	if err != nil {
		w.log.Warn("flv: frame dropped", "track", t.ID, "ts", f.Timestamp, "err", err)
		w.stats.Dropped++
		return nil
	}
	if payload == nil {
		w.log.Debug("flv: frame held back: no keyframe or parameter sets yet", "track", t.ID, "ts", f.Timestamp)
		w.stats.Dropped++
		return nil
	}
	if len(payload)+16 > maxTagBody {
		w.log.Warn("flv: frame too large for an FLV tag, dropped", "track", t.ID, "bytes", len(payload))
		w.stats.Dropped++
		return nil
	}
	ptsMs, dtsMs := floorMs(pts), floorMs(dts)
	if t.info.kind == mux.Video {
		t.grid.Note(pts)
		ptsMs = w.videoMs(t, pts)
		if dts == pts {
			dtsMs = ptsMs
		} else if d := w.videoMs(t, dts); d <= ptsMs {
			// B-frames: decode times lie on the same frame grid, and a
			// reader rescales them too (two on one tick is the same
			// "non monotonically increasing dts").
			dtsMs = d
		}
	}
	if dtsMs < 0 {
		dtsMs = 0
	}
	last := &w.last[t.info.kind]
	if last.ok {
		min := last.ms
		if t.info.kind == mux.Video {
			min++ // keep video decode times strictly increasing
		}
		if dtsMs < min {
			dtsMs = min
		}
	}
	if !t.info.cts || ptsMs < 0 {
		ptsMs = max(ptsMs, dtsMs)
	}
	t.note(pts)

	if t.sendConfig && t.config != nil {
		if err := w.writeConfig(t, dtsMs); err != nil {
			return err
		}
	}
	if err := w.writeFrameTag(t, dtsMs, ptsMs-dtsMs, f.Keyframe, payload); err != nil {
		return err
	}
	w.stats.Frames++
	w.stats.Bytes += int64(len(f.Payload))
	last.ms, last.ok = dtsMs, true
	if end := ptsMs + floorMs(t.dur); end > w.endMs {
		w.endMs = end
	}
	if !w.haveStart || ptsMs < w.startMs {
		w.startMs, w.haveStart = ptsMs, true
	}
	return nil
}

// videoMs returns the tag time, in ms on the output timeline, of a video
// frame presented (or, for a B-frame's decode time, decoded) at pts (µs):
// floored, or the next millisecond where that keeps the frame on its own
// tick of the 1/framerate grid a reader counts from the file's first
// timestamp (muxbase.FrameGrid says why).
func (w *Writer) videoMs(t *track, pts int64) int64 {
	lo := floorMs(pts)
	start := lo // the file starts with this frame
	if w.haveStart {
		start = min(w.startMs, lo)
	}
	return t.grid.Place(pts, lo, muxbase.GridRate(t.Framerate, t.spsRate), start)
}

// applyDiscontinuity restarts t at a broken timeline (mux.Frame.Discontinuity):
// the track's decode-time estimate restarts, video waits for a keyframe, the
// sequence header is sent again, and if the frame would go back in time the
// whole output is shifted forward so that it continues one frame after the
// track's last frame (see the package doc).
func (w *Writer) applyDiscontinuity(t *track, ts int64) {
	t.disc = false
	if t.hasPTS {
		pts := ts - w.base + w.offset
		if want := t.maxPTS + t.dur; pts < want && pts <= t.maxPTS {
			w.offset += want - pts
			w.log.Info("flv: timeline went back at a discontinuity; output shifted forward to stay continuous",
				"track", t.ID, "shift_us", want-pts)
		}
	}
	t.restart()
}

// Close writes the header if no frame came, and when the output is
// seekable patches onMetaData's duration and filesize. It does not close
// the underlying writer.
func (w *Writer) Close() error {
	if w.out.Closed {
		return nil
	}
	if w.out.Err == nil && !w.started {
		_ = w.out.Fail(w.writeHeader(0))
	}
	w.out.Closed = true
	if w.out.Err != nil {
		return w.out.Err
	}
	if w.seeker == nil || w.metaPos < 0 {
		return nil
	}
	dur := float64(max(w.endMs-w.startMs, 0)) / 1000
	if err := w.patch(w.metaPos+int64(w.meta.durationAt), float64Bytes(dur)); err != nil {
		return err
	}
	if err := w.patch(w.metaPos+int64(w.meta.filesizeAt), float64Bytes(float64(w.out.Pos))); err != nil {
		return err
	}
	if _, err := w.seeker.Seek(w.start+w.out.Pos, io.SeekStart); err != nil {
		return fmt.Errorf("flv: seeking back to the end: %w", err)
	}
	return nil
}

func (w *Writer) patch(pos int64, b []byte) error {
	if _, err := w.seeker.Seek(w.start+pos, io.SeekStart); err != nil {
		return fmt.Errorf("flv: seeking to patch onMetaData: %w", err)
	}
	if _, err := w.seeker.Write(b); err != nil {
		return fmt.Errorf("flv: patching onMetaData: %w", err)
	}
	return nil
}

// writeHeader writes the FLV header and onMetaData, and fixes the timeline:
// the first frame's timestamp becomes 0 (unless KeepTimestamps).
func (w *Writer) writeHeader(firstTs int64) error {
	w.started = true
	if !w.opts.KeepTimestamps {
		w.base = firstTs
	}
	if w.video != nil {
		w.flags |= flagVideo
	}
	if w.audio != nil {
		w.flags |= flagAudio
	}
	meta, err := buildMetadata(w.video, w.audio)
	if err != nil {
		return err
	}
	w.meta = meta
	if w.video != nil {
		w.meta.videoFam = w.video.fam
	}
	if w.audio != nil {
		w.meta.audioFam = w.audio.fam
	}
	b := appendFileHeader(w.buf[:0], w.flags)
	w.metaPos = int64(len(b) + tagHeaderSize)
	b = appendTagHeader(b, tagScript, len(meta.body), 0)
	b = append(b, meta.body...)
	b = appendU32(b, uint32(tagHeaderSize+len(meta.body)))
	return w.flush(b)
}

// writeConfig writes t's sequence header at ts.
func (w *Writer) writeConfig(t *track, ts int64) error {
	b, err := w.tagStart(t.tagType(), ts)
	if err != nil {
		return err
	}
	switch {
	case t.info.kind == mux.Video && t.info.enhanced:
		b = append(b, exHeader|frameKey<<4|pktSequenceStart)
		b = appendU32(b, fourCC(t.info.fourCC))
	case t.info.kind == mux.Video:
		b = append(b, frameKey<<4|t.info.classic, avcSequenceHeader, 0, 0, 0)
	case t.info.enhanced:
		b = append(b, soundEx<<4|audioPktSequenceStart)
		b = appendU32(b, fourCC(t.info.fourCC))
	default:
		b = append(b, t.audioByte(), aacSequenceHeader)
	}
	b = append(b, t.config...)
	t.sendConfig = false
	return w.tagEnd(b)
}

// writeFrameTag writes one coded frame. cts is the composition time offset
// in ms (PTS - DTS), carried only by H.264/H.265.
func (w *Writer) writeFrameTag(t *track, ts, cts int64, key bool, payload []byte) error {
	b, err := w.tagStart(t.tagType(), ts)
	if err != nil {
		return err
	}
	ft := byte(frameInter)
	if key {
		ft = frameKey
	}
	switch {
	case t.info.kind == mux.Video && t.info.enhanced:
		if t.info.cts && cts != 0 {
			b = append(b, exHeader|ft<<4|pktCodedFrames)
			b = appendU32(b, fourCC(t.info.fourCC))
			b = appendSI24(b, cts)
		} else {
			b = append(b, exHeader|ft<<4|pktCodedFramesX)
			b = appendU32(b, fourCC(t.info.fourCC))
		}
	case t.info.kind == mux.Video:
		b = append(b, ft<<4|t.info.classic, avcNALU)
		b = appendSI24(b, cts)
	case t.info.enhanced:
		b = append(b, soundEx<<4|audioPktCodedFrames)
		b = appendU32(b, fourCC(t.info.fourCC))
	case t.info.classic == soundAAC:
		b = append(b, t.audioByte(), aacRaw)
	default:
		b = append(b, t.audioByte())
	}
	b = append(b, payload...)
	return w.tagEnd(b)
}

// tagStart begins a tag in w.buf with the size left blank. ts is in ms on
// the output timeline; it is written as FLV's 32-bit time (24 bits plus
// the extension byte), wrapping past 2^32 ms.
func (w *Writer) tagStart(typ byte, ts int64) ([]byte, error) {
	if ts > math.MaxUint32 && !w.wrapWarned {
		w.wrapWarned = true
		w.log.Warn("flv: timestamps passed 2^32 ms and wrap; use rebased timestamps for long files", "ms", ts)
	}
	return appendTagHeader(w.buf[:0], typ, 0, uint32(ts)), nil
}

// tagEnd fills in the body size, appends PreviousTagSize and writes the tag.
func (w *Writer) tagEnd(b []byte) error {
	size := len(b) - tagHeaderSize
	b[1], b[2], b[3] = byte(size>>16), byte(size>>8), byte(size)
	b = appendU32(b, uint32(len(b)))
	return w.flush(b)
}

func (w *Writer) flush(b []byte) error {
	if cap(b) > cap(w.buf) {
		w.buf = b[:0]
	}
	return w.out.Write(b)
}

// floorMs converts µs to ms, rounding down also for negative values.
func floorMs(us int64) int64 {
	if us < 0 {
		return -((-us + 999) / 1000)
	}
	return us / 1000
}
