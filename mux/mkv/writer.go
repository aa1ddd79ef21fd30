package mkv

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/at-wat/ebml-go"
	"github.com/at-wat/ebml-go/webm"

	"github.com/moq-export/moq-export/internal/codec/h26x"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/internal/muxbase"
)

// Options configures a Writer. The zero value is ready to use.
type Options struct {
	// DocType is "" to choose automatically ("webm" when every track is
	// VP8, VP9, AV1 or Opus, else "matroska"), "webm" to refuse every other
	// codec, or "matroska" (alias "mkv").
	DocType string
	// KeepTimestamps writes the frames' timestamps as they are instead of
	// rebasing the first frame to 0.
	KeepTimestamps bool
	// Logger receives warnings (dropped frames, tracks given up on). Nil
	// discards them.
	Logger *slog.Logger
	// HeaderWait bounds how much media, by timestamp, the Writer buffers
	// while a track still waits for its first frame (a media track with
	// none is left out of the header) or for the codec configuration
	// carried in its first keyframe (Annex B H.264/H.265, AV1 without av1C, VP8/VP9
	// without a size). When it is exceeded the header is written without
	// the tracks still waiting, and their frames are dropped. 0 means 5s.
	HeaderWait time.Duration
	// MaxClusterDuration starts a new Cluster when the current one spans
	// this much, even without a video keyframe (audio-only files, long
	// GOPs). 0 means 5s; values above 32s are capped by the 16-bit block
	// offset anyway.
	MaxClusterDuration time.Duration
	// KeepSizesUnknown makes the finalization of a seekable output leave
	// the Segment and every Cluster with the unknown size they were
	// written with (valid Matroska: a Cluster ends where the next
	// top-level element begins; ffmpeg warns of an unknown-size Cluster
	// in a Segment of known size, so the Segment stays unknown too): it
	// appends the Cues and rewrites only the SeekHead and the Info (with
	// the Duration) at the head. For an output that cannot rewrite what
	// it already wrote (an object store that uploaded it while
	// recording): its head is the only part rewritten.
	KeepSizesUnknown bool
	// WritingApp names the program in the Info element; "" means
	// "moq-export".
	WritingApp string
	// WallClock maps a frame timestamp (µs, as WriteFrame takes them) to
	// wall-clock time: a broadcast's catalog clock. The Info's DateUTC is
	// then the wall-clock time of the file's first frame. Nil: no DateUTC.
	WallClock func(ts int64) time.Time
}

// counters details what a Writer did so far. Its mux.Stats is what
// Writer.Stats returns: Frames counts the SimpleBlocks written, Bytes their
// payloads as WriteFrame received them, Dropped the frames not written:
// frames of a track before the keyframe that carries its configuration,
// frames of tracks given up on, and empty payloads.
type counters struct {
	mux.Stats
	// Clamped counts frames whose timestamp lay before the start of the
	// file and were written at 0.
	Clamped int64
	// Clusters and Cues count the Clusters started and the CuePoints
	// recorded.
	Clusters, Cues int
}

// Writer is a Matroska/WebM mux.Muxer. Create it with NewWriter.
type Writer struct {
	w    io.Writer
	ws   io.WriteSeeker // nil when the output cannot seek
	base int64          // offset of the file start in ws
	out  muxbase.Output // w, the bytes written so far and the sticky error
	opts Options
	log  *slog.Logger

	tracks []*track
	byID   map[int]*track

	started bool // header written
	docType string
	pending muxbase.Held[pendingFrame] // frames while the header waits

	originSet bool
	origin    int64 // µs subtracted from every timestamp
	// starts are where readers see the file start (ms): the earliest
	// block time written, and the same less each track's CodecDelay
	// (ffmpeg 5.1 shows Opus that much earlier, ffmpeg 9 does not). Video
	// frames are placed on the 1/framerate grids counted from them (see
	// writeBlock).
	starts    [2]int64
	haveStart bool

	segData    int64 // offset of the Segment's data (SeekHead) in the file
	regionSize int
	date       time.Time // DateUTC (zero: none), see Options.WallClock
	tracksPos  int64     // offset of Tracks relative to segData
	// tracksSpan is how many bytes Tracks and the Void after it occupy: a
	// seekable file reserves lateTrackRoom there, so that tracks added
	// after the header can be written into it.
	tracksSpan int
	live       []*track // the tracks in the header, by number
	hasVideo   bool

	inCluster       bool
	clusterTs       int64 // ms
	clusterHasVideo bool
	breakCluster    bool
	clusterPos      []int64 // cluster offsets relative to segData
	cues            []webm.CuePoint
	endMs           int64 // end of the last frame, ms, for Duration

	stats counters

	chapters []chapter // asked for by Chapter, written by finalize
}

// blockBufs holds the buffers writeBlock assembles a block in (Cluster
// start, SimpleBlock header and payload, for one Write per frame), shared
// by every Writer: a Writer keeps no buffer between frames, so a thousand
// recordings waiting for media do not each hold a copy of their largest
// frame. A buffer above maxPooledBlock is not kept at all.
var blockBufs = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledBlock = 1 << 20

type track struct {
	mux.Track
	family string
	number uint64
	entry  trackEntry

	ready    bool             // codec configuration and geometry known
	norm     *h26x.Normalizer // H.264/H.265 given as Annex B, converted on write
	conv     []byte           // annexBToAVCC's output buffer
	psWarned bool
	removed  bool
	disabled bool // header written while it still waited: frames are dropped
	lateWait bool // added after the header, its entry waits for its configuration
	warned   bool
	// got: a frame of it waits for the header. A media track with none
	// when the header is written is left out of it (see start).
	got bool

	// grid places video frames on the ticks a reader's 1/framerate grid
	// gives them (see writeBlock), at the catalog's framerate, else the
	// one the SPS declares (spsRate, 0 when none), else the one the
	// frames show. Its estimate of the gap between frames, since the last
	// discontinuity, is also the duration Duration gives the last frame,
	// of every track but text.
	grid    muxbase.FrameGrid
	spsRate float64

	// lastTs and lastMs are the previous block's timestamp (µs) and time
	// on the millisecond timeline, valid when written.
	lastTs, lastMs int64
	written        bool
	// endMs is where the track's frames end (ms), for Duration: the
	// newest block's end (estimated, or as EndFrame says) after endBefore,
	// the end of the blocks before it.
	endMs, endBefore int64
}

type pendingFrame struct {
	t       *track
	ts      int64
	end     int64 // EndFrame's, 0: none
	key     bool
	payload []byte
	disc    bool  // a discontinuity marker for t
	in      int   // payload bytes as WriteFrame received them
	dur     int64 // a text cue's duration, µs
}

var _ mux.Muxer = (*Writer)(nil)

// NewWriter returns a Writer that writes to w. When w is an io.WriteSeeker
// that can actually seek (a regular file, not a pipe), Close finalizes the
// file with SeekHead, Cues, Duration and sizes; otherwise the output is the
// live form, a Segment and Clusters of unknown size, playable as it grows.
// The header is written at the first frame.
func NewWriter(w io.Writer, opts Options) *Writer {
	mw := &Writer{w: w, out: muxbase.NewOutput(w, "mkv"), opts: opts, byID: map[int]*track{}, log: opts.Logger}
	if mw.log == nil {
		mw.log = slog.New(slog.DiscardHandler)
	}
	if mw.opts.HeaderWait <= 0 {
		mw.opts.HeaderWait = 5 * time.Second
	}
	if mw.opts.MaxClusterDuration <= 0 {
		mw.opts.MaxClusterDuration = 5 * time.Second
	}
	if mw.opts.WritingApp == "" {
		mw.opts.WritingApp = "moq-export"
	}
	if ws, ok := w.(io.WriteSeeker); ok {
		if off, err := ws.Seek(0, io.SeekCurrent); err == nil {
			mw.ws, mw.base = ws, off
		}
	}
	return mw
}

// Seekable reports whether Close will finalize the output (the writer can
// seek).
func (w *Writer) Seekable() bool { return w.ws != nil }

// Stats implements mux.Muxer.
func (w *Writer) Stats() mux.Stats { return w.stats.Stats }

// detail returns the detailed counters so far (tests read them through
// export_test.go; the API is Stats).
func (w *Writer) detail() counters { return w.stats }

// Caps is what Matroska carries: the tracks Supports accepts, any number
// of each kind.
var Caps = mux.Caps{Container: "mkv", Supports: Supports}

// WebMCaps is what WebM carries: the tracks SupportsWebM accepts.
var WebMCaps = mux.Caps{Container: "webm", Supports: SupportsWebM}

// Supports returns nil when Matroska can carry t (every codec package mux
// names except none, with a usable configuration), else why not: an
// unknown codec gets a *mux.UnsupportedCodecError. AddTrack of a Writer
// with DocType "matroska" or "" applies the same check.
func Supports(t mux.Track) error {
	_, err := checkedTrack(t, "matroska")
	return err
}

// SupportsWebM is Supports for WebM: only VP8, VP9, AV1, Opus (and Vorbis)
// tracks; the error for others suggests mkv.
func SupportsWebM(t mux.Track) error {
	_, err := checkedTrack(t, "webm")
	return err
}

// checkedTrack returns the writer's state for t in a file of docType
// ("", "webm" or "matroska"), or why that file cannot carry t.
func checkedTrack(mt mux.Track, docType string) (*track, error) {
	fam := mux.CodecFamily(mt.Codec)
	if _, ok := codecIDs[fam]; !ok {
		container := "mkv"
		if docType == "webm" {
			container = "webm"
		}
		return nil, fmt.Errorf("mkv: track %d: %w", mt.ID, &mux.UnsupportedCodecError{Container: container, Codec: mt.Codec})
	}
	if docType == "webm" && !webmFamilies[fam] {
		return nil, fmt.Errorf("mkv: track %d: %w", mt.ID, &mux.UnsupportedCodecError{Container: "webm", Codec: mt.Codec, Suggest: "mkv"})
	}
	t := &track{Track: mt, family: fam}
	if err := t.configure(); err != nil {
		return nil, fmt.Errorf("mkv: %w", err)
	}
	return t, nil
}

func (w *Writer) docTypeOption() string {
	switch strings.ToLower(w.opts.DocType) {
	case "mkv":
		return "matroska"
	default:
		return strings.ToLower(w.opts.DocType)
	}
}

// AddTrack adds a track. After the header is written, a seekable file
// takes it in the room reserved after Tracks (see the package doc, "Late
// tracks"); otherwise it fails with an error wrapping mux.ErrLateTrack,
// the engine goes on without the track and logs a warning (the CLI does
// the same), so a late rendition is missing from the file rather than
// ending the recording.
func (w *Writer) AddTrack(mt mux.Track) error {
	if w.out.Closed {
		return mux.ErrClosed
	}
	if _, dup := w.byID[mt.ID]; dup {
		return fmt.Errorf("mkv: track %d added twice", mt.ID)
	}
	switch dt := w.docTypeOption(); dt {
	case "", "webm", "matroska":
	default:
		return fmt.Errorf("mkv: unknown DocType %q (want \"\", \"webm\" or \"matroska\")", w.opts.DocType)
	}
	t, err := checkedTrack(mt, w.docTypeOption())
	if err != nil {
		return err
	}
	if w.started {
		if err := w.addLate(t); err != nil {
			return fmt.Errorf("mkv: track %d (%s %s): %w", mt.ID, mt.Kind, mt.Codec, err)
		}
		return nil
	}
	w.tracks = append(w.tracks, t)
	w.byID[mt.ID] = t
	return nil
}

// RemoveTrack ends a track. Before the header it is left out of the file;
// after, its frames are refused with mux.ErrUnknownTrack.
func (w *Writer) RemoveTrack(id int) error {
	if w.out.Closed {
		return mux.ErrClosed
	}
	t, ok := w.byID[id]
	if !ok || t.removed {
		return w.out.UnknownTrack("remove", id)
	}
	t.removed = true
	if !w.started {
		w.pending.DeleteFunc(func(p pendingFrame) bool { return p.t == t })
		return w.maybeStart()
	}
	return nil
}

// markDiscontinuity applies mux.Frame.Discontinuity of a frame of t: the
// next block starts a new Cluster and the gap stays out of the track's
// frame-duration estimate or the frame grid. Before the header the mark waits in pending,
// in order with the frames.
func (w *Writer) markDiscontinuity(t *track) {
	if !w.started {
		w.pending.AddMark(pendingFrame{t: t, disc: true})
		return
	}
	w.discontinuity(t)
}

func (w *Writer) discontinuity(t *track) {
	w.breakCluster = true
	t.written = false
	t.grid.Reset() // the new timeline need not lie on the old grid
}

// WriteFrame writes one frame as a SimpleBlock. Frames of a track that waits
// for its configuration are dropped until its first usable keyframe; frames
// of ready tracks are buffered until every track is ready (bounded by
// Options.HeaderWait), then the header and the buffer are written.
func (w *Writer) WriteFrame(f mux.Frame) error {
	if err := w.out.Usable(); err != nil {
		return err
	}
	t, ok := w.byID[f.TrackID]
	if !ok || t.removed {
		return w.out.UnknownTrack("frame for", f.TrackID)
	}
	if f.Discontinuity {
		w.markDiscontinuity(t)
	}
	if t.disabled || len(f.Payload) == 0 {
		w.stats.Dropped++
		return nil
	}
	if t.Kind == mux.Audio {
		// Every audio frame is a random access point for these codecs.
		f.Keyframe = true
	}
	payload := f.Payload
	if t.norm != nil {
		var ok bool
		var why string
		payload, ok, why = t.annexBToAVCC(f.Payload, f.Keyframe, w.started && !t.lateWait, w.log)
		if !ok {
			w.drop(t, why)
			return nil
		}
	}
	if w.started && t.lateWait {
		if !t.ready && !t.configureFromFrame(payload, f.Keyframe) {
			w.drop(t, "waiting for a keyframe with the codec configuration")
			return nil
		}
		t.ready = true
		if err := w.placeLate(t); err != nil {
			if w.out.Err != nil {
				return w.out.Err
			}
			t.disabled = true
			w.log.Warn("mkv: a late track cannot be added; its frames are dropped", "track", t.ID, "codec", t.Codec, "err", err)
			w.drop(t, err.Error())
			return nil
		}
	}
	if w.started {
		return w.writeBlock(t, f.Timestamp, f.Keyframe, payload, len(f.Payload), f.Duration)
	}
	if !t.ready {
		if !t.configureFromFrame(payload, f.Keyframe) {
			w.drop(t, "waiting for a keyframe with the codec configuration")
			return nil
		}
		t.ready = true
	}
	t.got = true
	w.pending.Add(pendingFrame{t: t, ts: f.Timestamp, key: f.Keyframe, payload: slices.Clone(payload), in: len(f.Payload), dur: f.Duration}, f.Timestamp, len(payload))
	return w.maybeStart()
}

func (w *Writer) drop(t *track, why string) {
	w.stats.Dropped++
	if !t.warned {
		t.warned = true
		w.log.Warn("mkv: dropping frames", "track", t.ID, "codec", t.Codec, "reason", why)
	}
}

// maybeStart writes the header when every track is ready and every media
// track holds a frame, or when the buffered media exceeds HeaderWait
// (tracks still waiting are given up).
func (w *Writer) maybeStart() error {
	if w.started || w.pending.Len() == 0 {
		return nil
	}
	for _, t := range w.tracks {
		if !t.removed && (!t.ready || !t.got && t.Kind != mux.Text) && !w.pending.Over(w.opts.HeaderWait) {
			return nil
		}
	}
	return w.start()
}

// anyGot reports whether a frame of some track waits for the header.
func (w *Writer) anyGot() bool {
	for _, t := range w.tracks {
		if !t.removed && t.got {
			return true
		}
	}
	return false
}

// start writes the header with the ready tracks and flushes the frames
// buffered so far.
func (w *Writer) start() error {
	w.started = true
	if first, ok := w.pending.First(); ok && w.opts.WallClock != nil {
		w.date = w.opts.WallClock(first)
	}
	var live []*track
	got := w.anyGot()
	for _, t := range w.tracks {
		switch {
		case t.removed:
		case !t.ready:
			t.disabled = true
			w.log.Warn("mkv: track left out of the file: no codec configuration arrived in time", "track", t.ID, "codec", t.Codec)
		case got && !t.got && t.Kind != mux.Text:
			// A media track with no frame in the header makes the file
			// undecodable (ffmpeg cannot tell its format): a seekable file
			// adds it at its first frame in the room reserved after Tracks,
			// a live stream goes on without it.
			if w.ws != nil {
				t.lateWait = true
				w.log.Warn("mkv: track not in the header: no frame arrived in time; it is added at its first frame", "track", t.ID, "codec", t.Codec)
			} else {
				t.disabled = true
				w.log.Warn("mkv: track left out of the file: no frame arrived in time", "track", t.ID, "codec", t.Codec)
			}
		default:
			live = append(live, t)
		}
	}
	if err := w.writeHeader(live); err != nil {
		return w.out.Fail(err)
	}
	pending := w.pending.Take()
	for _, p := range pending {
		if p.disc {
			w.discontinuity(p.t)
			continue
		}
		if err := w.writeBlock(p.t, p.ts, p.key, p.payload, p.in, p.dur); err != nil {
			return err
		}
		if p.end != 0 {
			w.setEnd(p.t, p.end)
		}
	}
	return nil
}

// EndFrame says where the frame written last on track id ends
// (mux.FrameEnder, hang's end marker): the Duration ends there rather
// than one estimated frame after it when it is the file's last. The block
// is written already: it got a BlockDuration only if the frame carried
// its duration (mux.Frame.Duration) when it was written.
func (w *Writer) EndFrame(id int, end int64) error {
	if err := w.out.Usable(); err != nil {
		return err
	}
	t, ok := w.byID[id]
	if !ok || t.removed {
		return w.out.UnknownTrack("end of a frame for", id)
	}
	if !w.started {
		if p := w.pending.Last(func(p *pendingFrame) bool { return p.t == t && !p.disc }); p != nil {
			p.end = end
		}
		return nil
	}
	w.setEnd(t, end)
	return nil
}

// setEnd ends t's newest block at end (µs) for the Duration.
func (w *Writer) setEnd(t *track, end int64) {
	if !t.written || end <= t.lastTs {
		return
	}
	ms, ok := w.msOf(end)
	if !ok {
		return
	}
	t.endMs = max(t.endBefore, ms)
	w.endMs = 0
	for _, o := range w.tracks {
		w.endMs = max(w.endMs, o.endMs)
	}
}

func (w *Writer) writeHeader(live []*track) error {
	dt := w.docTypeOption()
	if dt == "" {
		dt = "webm"
		for _, t := range live {
			if !webmFamilies[t.family] {
				dt = "matroska"
			}
		}
	}
	w.docType = dt
	hdr := ebmlHeaderOnly{Header: webm.EBMLHeader{
		EBMLVersion: 1, EBMLReadVersion: 1, EBMLMaxIDLength: 4, EBMLMaxSizeLength: 8,
		DocType: dt, DocTypeVersion: 4, DocTypeReadVersion: 2,
	}}
	b, err := marshal(&hdr)
	if err != nil {
		return fmt.Errorf("mkv: header: %w", err)
	}
	seg, err := marshal(&segmentStart{})
	if err != nil {
		return fmt.Errorf("mkv: header: %w", err)
	}
	b = append(b, seg...)
	w.segData = int64(len(b))

	// The region Close rewrites: its final form (three Seek entries and a
	// Duration) is the largest, so size it for that plus a minimal Void.
	largest, err := w.region(1, 1)
	if err != nil {
		return err
	}
	w.regionSize = len(largest) + 2
	w.tracksPos = int64(w.regionSize)
	region, err := w.region(0, 0)
	if err != nil {
		return err
	}
	b = append(b, region...)

	for i, t := range live {
		t.number = uint64(i + 1)
		t.entry.TrackNumber, t.entry.TrackUID = t.number, t.number
		if t.Kind == mux.Video {
			w.hasVideo = true
		}
	}
	w.live = live
	tb, err := w.tracksElement()
	if err != nil {
		return err
	}
	b = append(b, tb...)
	w.tracksSpan = len(tb)
	if w.ws != nil {
		b = appendVoid(b, lateTrackRoom)
		w.tracksSpan += lateTrackRoom
	}
	return w.out.Write(b)
}

// lateTrackRoom is the Void a seekable file keeps after Tracks for tracks
// added after the header: a TrackEntry takes some 30 bytes plus its
// CodecPrivate (an avcC of a few dozen bytes, an hvcC or a FLAC header a
// few hundred), so a dozen late tracks fit.
const lateTrackRoom = 4096

// tracksElement marshals Tracks with the header's tracks.
func (w *Writer) tracksElement() ([]byte, error) {
	var tr tracksElement
	for _, t := range w.live {
		tr.Tracks.TrackEntry = append(tr.Tracks.TrackEntry, t.entry)
	}
	tb, err := marshal(&tr)
	if err != nil {
		return nil, fmt.Errorf("mkv: tracks: %w", err)
	}
	return tb, nil
}

// addLate adds track t after the header: in a seekable file, Tracks is
// rewritten with it in the room reserved after it, and its blocks follow
// from here on (players that read the file from the start know the track;
// one that already read the header plays on without it). A track whose
// configuration comes with its first keyframe waits for it (placeLate runs
// then). A live stream cannot take it, nor one beyond the room reserved:
// those wrap mux.ErrLateTrack.
func (w *Writer) addLate(t *track) error {
	switch {
	case w.ws == nil:
		return fmt.Errorf("%w (a live stream's Tracks cannot grow)", mux.ErrLateTrack)
	case w.docType == "webm" && !webmFamilies[t.family]:
		return fmt.Errorf("%w (the file is WebM, which cannot carry %s)", mux.ErrLateTrack, t.Codec)
	case !t.ready:
		// Its configuration comes with its first keyframe: its entry is
		// written then (placeLate), its frames before are dropped.
		t.lateWait = true
		w.tracks = append(w.tracks, t)
		w.byID[t.ID] = t
		return nil
	}
	if err := w.placeLate(t); err != nil {
		return err
	}
	w.tracks = append(w.tracks, t)
	w.byID[t.ID] = t
	return nil
}

// placeLate writes the TrackEntry of late track t, whose configuration is
// known, into the room reserved after Tracks.
func (w *Writer) placeLate(t *track) error {
	t.number = uint64(len(w.live) + 1)
	t.entry.TrackNumber, t.entry.TrackUID = t.number, t.number
	w.live = append(w.live, t)
	tb, err := w.tracksElement()
	if err == nil && len(tb) != w.tracksSpan && len(tb)+2 > w.tracksSpan {
		err = fmt.Errorf("%w (no room left in the header for another track)", mux.ErrLateTrack)
	}
	if err != nil {
		w.live = w.live[:len(w.live)-1]
		return err
	}
	if rest := w.tracksSpan - len(tb); rest > 0 {
		tb = appendVoid(tb, rest)
	}
	if _, err := w.ws.Seek(w.base+w.segData+w.tracksPos, io.SeekStart); err != nil {
		return w.out.Fail(fmt.Errorf("mkv: rewriting Tracks: %w", err))
	}
	if _, err := w.ws.Write(tb); err != nil {
		return w.out.Fail(fmt.Errorf("mkv: rewriting Tracks: %w", err))
	}
	if _, err := w.ws.Seek(w.base+w.out.Pos, io.SeekStart); err != nil {
		return w.out.Fail(fmt.Errorf("mkv: rewriting Tracks: %w", err))
	}
	if t.Kind == mux.Video {
		w.hasVideo = true
	}
	t.lateWait = false
	return nil
}

// region marshals SeekHead and Info padded with a Void to regionSize (or
// unpadded when regionSize is not set yet). cuesPos 0 leaves the Cues entry
// out; durationMs 0 leaves Duration out.
func (w *Writer) region(cuesPos int64, durationMs float64) ([]byte, error) {
	var r headRegion
	r.Info = segmentInfo{TimestampScale: 1_000_000, Duration: durationMs, DateUTC: w.date, MuxingApp: "moq-export mux/mkv (ebml-go)", WritingApp: w.opts.WritingApp}
	r.SeekHead.Seek = []seekEntry{
		{SeekID: ebml.ElementInfo.Bytes()},
		{SeekID: ebml.ElementTracks.Bytes(), SeekPosition: uint64(w.tracksPos)},
	}
	if cuesPos > 0 {
		r.SeekHead.Seek = append(r.SeekHead.Seek, seekEntry{SeekID: ebml.ElementCues.Bytes(), SeekPosition: uint64(cuesPos)})
	}
	// SeekPositions have a fixed 8-byte size, so the SeekHead's length,
	// which is Info's offset, does not depend on their values.
	head, err := marshal(&struct {
		SeekHead any `ebml:"SeekHead"`
	}{r.SeekHead})
	if err != nil {
		return nil, fmt.Errorf("mkv: seekhead: %w", err)
	}
	r.SeekHead.Seek[0].SeekPosition = uint64(len(head))
	b, err := marshal(&r)
	if err != nil {
		return nil, fmt.Errorf("mkv: info: %w", err)
	}
	if w.regionSize > 0 {
		if len(b)+2 > w.regionSize {
			return nil, fmt.Errorf("mkv: header region overflow (%d > %d)", len(b), w.regionSize)
		}
		b = appendVoid(b, w.regionSize-len(b))
	}
	return b, nil
}

// msOf converts a frame timestamp (µs) to the file's millisecond timeline,
// rebased unless KeepTimestamps. It reports false when the time lies before
// the start.
func (w *Writer) msOf(ts int64) (int64, bool) {
	if !w.originSet {
		w.originSet = true
		if !w.opts.KeepTimestamps {
			w.origin = ts
		}
	}
	d := ts - w.origin
	if w.origin < 0 && d < ts {
		d = math.MaxInt64 // saturate instead of wrapping
	} else if w.origin > 0 && d > ts {
		d = math.MinInt64
	}
	if d < 0 {
		return 0, false
	}
	if d > math.MaxInt64-500 {
		d = math.MaxInt64 - 500
	}
	return clampMs((d + 500) / 1000), true
}

func (w *Writer) writeBlock(t *track, ts int64, key bool, payload []byte, in int, dur int64) error {
	ms, ok := w.msOf(ts)
	if !ok {
		w.stats.Clamped++
	}
	video := t.Kind == mux.Video
	if t.Kind != mux.Text {
		t.grid.Note(ts) // the gap estimate: the grid's rate (before Place) and frameDuration
	}
	if rel := ts - w.origin; video && ok && rel <= maxGridUs {
		// Milliseconds put 30 fps frames 33, 33 and 34 ms apart; a
		// reader that decodes onto a 1/framerate grid counted from the
		// file's start must find each on its own tick (muxbase.FrameGrid).
		starts := [2]int64{ms, ms}
		if w.haveStart {
			starts = [2]int64{min(w.starts[0], ms), min(w.starts[1], ms)}
		}
		n := 2 // the starts with and without Opus's CodecDelay
		if starts[0] == starts[1] {
			n = 1
		}
		ms = t.grid.Place(rel, ms, muxbase.GridRate(t.Framerate, t.spsRate), starts[:n]...)
	}
	if t.written && ts >= t.lastTs && ms <= t.lastMs {
		// Two frames less than a millisecond apart (a camera's jittered
		// capture times) would share a timestamp, which players take for a
		// duplicate: the later one moves to the next millisecond. Frames
		// that go back in time (B-frames in decode order) keep theirs.
		ms = t.lastMs + 1
	}
	prevMs, hadPrev := t.lastMs, t.written
	t.written, t.lastTs, t.lastMs = true, ts, ms
	if t.Kind != mux.Text {
		delayed := ms - codecDelayMs(t.entry.CodecDelay)
		if !w.haveStart {
			w.starts, w.haveStart = [2]int64{ms, delayed}, true
		}
		w.starts = [2]int64{min(w.starts[0], ms), min(w.starts[1], delayed)}
	}
	buf := blockBufs.Get().(*[]byte)
	b := (*buf)[:0]
	rel := ms - w.clusterTs
	if !w.inCluster || w.breakCluster ||
		(video && key && w.clusterHasVideo) ||
		rel > math.MaxInt16 || rel < math.MinInt16 ||
		rel >= w.opts.MaxClusterDuration.Milliseconds() {
		w.inCluster, w.breakCluster, w.clusterHasVideo = true, false, false
		w.clusterTs, rel = ms, 0
		w.clusterPos = append(w.clusterPos, w.out.Pos-w.segData)
		w.stats.Clusters++
		b = appendClusterStart(b, uint64(ms))
	}
	if video && key || !w.hasVideo && rel == 0 {
		// One CuePoint per video keyframe; audio-only files get one per
		// Cluster.
		cp := w.clusterPos[len(w.clusterPos)-1]
		if n := len(w.cues); n == 0 || w.cues[n-1].CueTrackPositions[0].CueClusterPosition != uint64(cp) {
			w.cues = append(w.cues, webm.CuePoint{CueTime: uint64(ms), CueTrackPositions: []webm.CueTrackPosition{{CueTrack: t.number, CueClusterPosition: uint64(cp)}}})
			w.stats.Cues++
		}
	}
	if video {
		w.clusterHasVideo = true
	}
	text := t.Kind == mux.Text
	durMs := (min(max(dur, 0), 1<<40) + 500) / 1000
	if text || durMs > 0 {
		// A cue shows for its duration, and a frame whose end its
		// publisher marked lasts until then: a BlockGroup with
		// BlockDuration (a delta frame refers to the block before it).
		ref := int64(0)
		if !text && !key {
			ref = -1
			if hadPrev && prevMs != ms {
				ref = prevMs - ms
			}
		}
		b = appendBlockGroup(b, t.number, int16(rel), uint64(durMs), ref, payload)
	} else {
		b = appendSimpleBlockHeader(b, t.number, int16(rel), key, len(payload))
		b = append(b, payload...)
	}
	err := w.out.Write(b)
	if cap(b) <= maxPooledBlock {
		*buf = b[:0]
		blockBufs.Put(buf)
	}
	if err != nil {
		return err
	}
	w.stats.Frames++
	w.stats.Bytes += int64(in)

	if text {
		w.endMs = max(w.endMs, ms+(min(max(dur, 0), 1<<40)+500)/1000)
		return nil
	}
	t.endBefore = t.endMs
	if durMs > 0 {
		t.endMs = max(t.endMs, ms+durMs)
	} else {
		t.endMs = max(t.endMs, ms+(min(t.frameDuration(), 1<<40)+500)/1000)
	}
	w.endMs = max(w.endMs, t.endMs)
	return nil
}

// maxGridUs bounds the times (µs after the origin) whose video frames are
// placed on the frame grid: 2^53 µs keeps them exact as float64.
const maxGridUs = 1 << 53

// codecDelayMs is a CodecDelay (ns) as ffmpeg's Matroska reader subtracts
// it from the track's block times: in ms, rounded half away from zero.
func codecDelayMs(ns uint64) int64 {
	return int64(min(ns, 1<<62)+500_000) / 1_000_000
}

// frameDuration is the duration (µs) the last frame is given in Duration:
// the smallest gap between recent frames since the last discontinuity
// (the grid's FrameGap, one estimate per track), or before a second frame the
// track's nominal one (a frame at its frame rate; 1024 samples for audio,
// AAC's frame), so that a file of one frame still has a Duration.
func (t *track) frameDuration() int64 {
	switch {
	case t.grid.Gap() > 0:
		return t.grid.Gap()
	case t.Framerate > 0:
		return int64(1e6 / t.Framerate)
	case t.SampleRate > 0:
		return 1024 * 1_000_000 / int64(t.SampleRate)
	}
	return 1000
}

// Close writes what is buffered and, when the output can seek, finalizes
// the file: Cues after the last Cluster, the sizes of the Clusters and the
// Segment, and a SeekHead and Info (with Duration) rewritten in the space
// reserved for them. It leaves the underlying writer open and positioned at
// the end. A second Close does nothing.
func (w *Writer) Close() error {
	if w.out.Closed {
		return nil
	}
	w.out.Closed = true
	if w.out.Err != nil {
		return w.out.Err
	}
	if !w.started {
		ready := false
		for _, t := range w.tracks {
			ready = ready || (!t.removed && t.ready)
		}
		if !ready {
			return nil // nothing playable to write
		}
		if err := w.start(); err != nil {
			return err
		}
	}
	if len(w.clusterPos) == 0 {
		// Closed before its first frame: an empty Cluster ends the file,
		// without which ffmpeg, finding none, takes the SeekHead for
		// elements of the Segment ("Duplicate element") and fails.
		w.clusterPos = append(w.clusterPos, w.out.Pos-w.segData)
		if err := w.out.Write(appendClusterStart(nil, 0)); err != nil {
			return err
		}
	}
	if w.ws == nil {
		return nil
	}
	return w.finalize()
}

func (w *Writer) finalize() error {
	end := w.out.Pos
	var cuesPos int64
	if len(w.cues) > 0 {
		cuesPos = w.out.Pos - w.segData
		cb, err := marshal(&cuesElement{Cues: webm.Cues{CuePoint: w.cues}})
		if err != nil {
			return w.out.Fail(fmt.Errorf("mkv: cues: %w", err))
		}
		if err := w.out.Write(cb); err != nil {
			return err
		}
	}
	end2 := w.out.Pos
	if err := w.writeChapters(); err != nil {
		return err
	}
	region, err := w.region(cuesPos, float64(w.endMs))
	if err != nil {
		return w.out.Fail(err)
	}
	var size [8]byte
	patch := func(off int64, b []byte) error {
		if _, err := w.ws.Seek(w.base+off, io.SeekStart); err != nil {
			return w.out.Fail(fmt.Errorf("mkv: finalize: %w", err))
		}
		if _, err := w.ws.Write(b); err != nil {
			return w.out.Fail(fmt.Errorf("mkv: finalize: %w", err))
		}
		return nil
	}
	for i, cp := range w.clusterPos {
		if w.opts.KeepSizesUnknown {
			break
		}
		next := end - w.segData
		if i+1 < len(w.clusterPos) {
			next = w.clusterPos[i+1]
		}
		if err := patch(w.segData+cp+4, appendSize8(size[:0], uint64(next-cp-12))); err != nil {
			return err
		}
	}
	if err := patch(w.segData, region); err != nil {
		return err
	}
	if !w.opts.KeepSizesUnknown {
		if err := patch(w.segData-8, appendSize8(size[:0], uint64(end2-w.segData))); err != nil {
			return err
		}
	}
	if _, err := w.ws.Seek(w.base+end2, io.SeekStart); err != nil {
		return w.out.Fail(fmt.Errorf("mkv: finalize: %w", err))
	}
	return nil
}
