package mp4

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/mp4/codecs"

	"github.com/moq-export/moq-export/internal/codec/h26x"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/internal/muxbase"
)

// Options configures a Writer. The zero value writes fragmented MP4 to a
// stream.
type Options struct {
	// Path is the file the Writer's io.Writer writes to. When it is set,
	// Close finishes the recording into a regular, fast-start MP4 at that
	// path (see the package doc); when it is empty the output stays
	// fragmented, as a stream must.
	Path string
	// KeepTimestamps writes the frames' timestamps as they are instead of
	// rebasing the first frame to 0.
	KeepTimestamps bool
	// Logger receives warnings (dropped frames, tracks given up on). Nil
	// discards them.
	Logger *slog.Logger
	// HeaderWait bounds how much media, by timestamp, the Writer buffers
	// while a track still waits for its first frame (a media track with
	// none is left out of the header) or for the codec configuration
	// carried in its first keyframe. When it is exceeded the header is written without the
	// tracks still waiting. 0 means 5s.
	HeaderWait time.Duration
	// FinishByCopy makes the finish write a new file with every sample in
	// recording order and rename it over the recording, instead of
	// finishing in place (see the package doc): it costs a copy of the
	// recording, and gives a file that readers which cannot seek (a pipe)
	// play from start to end.
	FinishByCopy bool
	// FinishHead, when set and Path is not, is how Close finishes the
	// recording for an output that cannot rewrite what it already wrote
	// (an object store that uploaded it while recording): it is called
	// with the head of a regular MP4 (ftyp, the complete moov, an mdat
	// header) and the offset from which the written bytes follow it: head
	// followed by the bytes written from that offset on (every fragment)
	// is the finished, fast-start file; the moof boxes become unused bytes
	// inside its mdat (about 1% of it). Nothing written is rewritten.
	FinishHead func(head []byte, from int64) error
	// FragmentDuration is the longest fragment of an audio-only file; with
	// video, fragments are cut at the keyframes of the first video track
	// and at 4 × FragmentDuration for streams with longer GOPs. 0 means 2s.
	FragmentDuration time.Duration
	// WallClock maps a frame timestamp (µs, as WriteFrame takes them) to
	// wall-clock time: a broadcast's catalog clock. The creation_time of
	// the movie, its tracks and their media is then the wall-clock time
	// of the file's first frame. Nil: none (zero).
	WallClock func(ts int64) time.Time
}

// counters details what a Writer did so far. Its mux.Stats is what
// Stats returns: Frames counts the frames written (or held for the fragment
// being built), Dropped the frames before a track's first usable keyframe
// or configuration (and after a discontinuity, until the next keyframe),
// frames of tracks given up on, malformed or empty frames.
type counters struct {
	mux.Stats
	// Clamped counts frames whose timestamp lay before the start of the
	// file and were written at 0.
	Clamped int64
	// Fragments counts the moof+mdat pairs written.
	Fragments int
	// Finished is true once Close has turned the file into a regular MP4;
	// FinishedInPlace says it did so without copying the samples.
	Finished, FinishedInPlace bool
}

// maxFragmentBytes bounds the payload one fragment holds in memory.
const maxFragmentBytes = 32 << 20

// Writer is an MP4 mux.Muxer. Create it with NewWriter.
type Writer struct {
	w    io.Writer
	opts Options
	log  *slog.Logger

	tracks []*track
	byID   map[int]*track
	live   []*track // tracks in the moov, in track_ID order
	parts  []trakParts
	video  *track // fragments are cut at its keyframes

	out     muxbase.Output
	started bool
	initEnd int64                      // where the fragmented header ends and the first moof starts
	pending muxbase.Held[pendingFrame] // frames while the header waits

	origin      int64 // µs subtracted from every timestamp
	firstUs     int64 // the first frame's timestamp, µs: where the file starts
	fragStartUs int64 // rebased µs of the first sample of the fragment being built
	fragEmpty   bool
	fragBytes   int
	seq         uint32
	pos         int64 // bytes written to w
	frags       []fragment
	dataLen     int64 // sample bytes in all fragments so far
	buf         []byte
	runs        []*track // the tracks with samples in the fragment being cut
	breakNext   bool     // BreakFragment: the next sample opens a fragment
	// keepTable is set when Close finishes the file: only then are the
	// sample table and the fragment positions kept.
	keepTable bool

	stats counters

	chapters []chapter // asked for by Chapter, listed by the finished moov

	created uint64 // creation_time, seconds since 1904 (0: none); Options.WallClock
}

// mp4Epoch is where an MP4's times count from.
var mp4Epoch = time.Date(1904, 1, 1, 0, 0, 0, 0, time.UTC)

// mp4Time is t in seconds since 1904, 0 before then.
func mp4Time(t time.Time) uint64 {
	if t.Before(mp4Epoch) {
		return 0
	}
	return uint64(t.Sub(mp4Epoch) / time.Second)
}

type pendingFrame struct {
	t        *track
	pts, dts int64
	key      bool
	disc     bool
	end      int64 // EndFrame's, 0: none
	payload  []byte
}

// fragment is where one fragment's sample data lies: in the fragmented file
// (srcOffset) and in the mdat of the finished file (dataOffset, relative).
type fragment struct {
	srcOffset, dataOffset, size int64
}

type track struct {
	mux.Track
	family    string
	mp4ID     uint32
	codec     codecs.Codec // nil until the sample entry can be made
	timescale uint32
	// frameSamples is the codec's usual frame length in samples, for the
	// duration of an audio track's last frame.
	frameSamples uint32

	norm       *h26x.Normalizer
	lengthSize int // of the catalog's avcC/hvcC: 0 for Annex B input
	dts        *h26x.DTS
	headerPS   h26x.ParamSets
	conv       []byte
	psWarned   bool

	removed, disabled, warned bool
	// got: a frame of it waits for the header. A media track with none
	// when the header is written is left out of it (see start).
	got bool
	// discPending marks a discontinuity not yet applied to a written
	// frame; keyWait makes video drop frames until its next keyframe (at
	// the start and after a discontinuity).
	discPending, keyWait, gotKey bool

	begun bool
	// delay is the decode delay, in ticks, added to both timelines of an
	// H.264/H.265 track so that its decode times start at its first
	// presentation time, never before the file's start; an edit list takes
	// it off again (see the package doc and decodeDelay).
	delay     int64
	firstPTS  int64 // rebased µs of the first sample
	maxPTS    int64 // latest presentation time, ticks
	lastDTS   int64
	lastDur   int64 // last sample duration not spanning a discontinuity, ticks
	endDur    int64 // the newest sample's duration as its publisher gave it, ticks (0: none)
	lastPTSUs int64 // the newest sample's presentation time, µs as written
	// cueEnd is where a text track's newest cue ends (µs), when cueSet:
	// a later cue is preceded by an empty sample from there.
	cueEnd int64
	cueSet bool

	pend []sample // samples of the fragment being built
	// store holds room bytes, where cut puts the moof and the other runs
	// when this track's run is the largest, then the payloads of pend.
	store          []byte
	room, wantRoom int
	// runLen and runBytes say how many of pend, and how many payload
	// bytes, the fragment being written takes.
	runLen, runBytes int

	tab       table
	movieDur  uint64 // presentation length in the finished file, movie timescale
	offsetsAt int    // where the chunk offsets of the finished moov begin
}

type sample struct {
	dts      int64
	cto      int32
	size     uint32
	dur      uint32
	durKnown bool
	sync     bool
}

// table is a track's sample table for the finished file, kept compact:
// run-length coded durations and composition offsets, sizes, sync sample
// numbers and chunks (one per track run of a fragment).
type table struct {
	sizes    []uint32
	stts     []sttsRun
	ctts     []cttsRun
	anyCTO   bool
	sync     []uint32
	nonSync  int
	chunks   []chunk
	firstDTS int64
	mediaDur int64 // sum of stts
	durOpen  bool  // the last sample's duration is not known yet
}

type sttsRun struct{ count, delta uint32 }
type cttsRun struct {
	count  uint32
	offset int32
}
type chunk struct {
	frag int
	off  uint32
	n    uint32
}

var _ mux.Muxer = (*Writer)(nil)

// NewWriter returns a Writer that writes fragmented MP4 to w, and, when
// opts.Path names the file w writes, finishes it into a regular MP4 at
// Close. The header is written at the first frame.
func NewWriter(w io.Writer, opts Options) *Writer {
	mw := &Writer{w: w, out: muxbase.NewOutput(w, "mp4"), opts: opts, byID: map[int]*track{}, log: opts.Logger, fragEmpty: true, keepTable: opts.Path != "" || opts.FinishHead != nil}
	if mw.log == nil {
		mw.log = slog.New(slog.DiscardHandler)
	}
	if mw.opts.HeaderWait <= 0 {
		mw.opts.HeaderWait = 5 * time.Second
	}
	if mw.opts.FragmentDuration <= 0 {
		mw.opts.FragmentDuration = 2 * time.Second
	}
	return mw
}

// Stats returns what was written so far (mux.Muxer).
func (w *Writer) Stats() mux.Stats { return w.stats.Stats }

// detail returns the detailed counters so far (tests read them through
// export_test.go; the API is Stats).
func (w *Writer) detail() counters { return w.stats }

// AddTrack adds a track. It fails with an error wrapping mux.ErrLateTrack
// once the header is written: the moov that players of the fragments (and
// of a pipe) read first cannot grow. The engine then goes on without the
// track and logs a warning, as with MKV.
func (w *Writer) AddTrack(mt mux.Track) error {
	if w.out.Closed {
		return mux.ErrClosed
	}
	if _, dup := w.byID[mt.ID]; dup {
		return fmt.Errorf("mp4: track %d added twice", mt.ID)
	}
	t, err := checkedTrack(mt)
	if err != nil {
		return err
	}
	if w.started {
		return fmt.Errorf("mp4: track %d (%s %s): %w", mt.ID, mt.Kind, mt.Codec, mux.ErrLateTrack)
	}
	w.tracks = append(w.tracks, t)
	w.byID[mt.ID] = t
	return nil
}

// RemoveTrack ends a track. Before the header it is left out of the file;
// after, its last frame is written with an estimated duration and further
// frames are refused with mux.ErrUnknownTrack.
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
	t.closeDuration(false)
	return nil
}

// WriteFrame adds one frame. Frames of a track that waits for its
// configuration are dropped until its first usable keyframe; frames of
// ready tracks are buffered until every track is ready (bounded by
// Options.HeaderWait), then the header is written.
func (w *Writer) WriteFrame(f mux.Frame) error {
	if err := w.out.Usable(); err != nil {
		return err
	}
	t, ok := w.byID[f.TrackID]
	if !ok || t.removed {
		return w.out.UnknownTrack("frame for", f.TrackID)
	}
	// A broken timeline: the frame starts a new fragment, and video waits
	// for its next keyframe, even when this frame is then dropped.
	if f.Discontinuity {
		t.discPending = true
		if t.Kind == mux.Video {
			t.keyWait = true
		}
	}
	if t.Kind == mux.Video && !t.gotKey {
		t.keyWait = true
	}
	if t.disabled || len(f.Payload) == 0 {
		w.stats.Dropped++
		return nil
	}
	if t.Kind == mux.Audio || t.isText() {
		f.Keyframe = true
	}
	if t.isText() {
		return w.writeCue(t, f)
	}
	if t.keyWait && !f.Keyframe {
		w.drop(t, "waiting for a keyframe")
		return nil
	}
	disc := t.discPending
	payload, dts := f.Payload, f.Timestamp
	if t.norm != nil {
		if disc {
			t.dts.Reset()
		}
		var why string
		var ok bool
		payload, dts, ok, why = t.convertH26x(f, w.started, w.log)
		if !ok {
			w.drop(t, why)
			return nil
		}
	}
	if !w.started && !t.ready() {
		if !t.configureFromFrame(payload, f.Keyframe) {
			w.drop(t, "waiting for a keyframe with the codec configuration")
			return nil
		}
	}
	t.discPending, t.keyWait, t.gotKey = false, false, true
	w.stats.Frames++
	w.stats.Bytes += int64(len(f.Payload))
	if w.started {
		return w.addSample(t, f.Timestamp, dts, f.Keyframe, disc, payload)
	}
	t.got = true
	w.pending.Add(pendingFrame{t: t, pts: f.Timestamp, dts: dts, key: f.Keyframe, disc: disc, payload: slices.Clone(payload)}, f.Timestamp, len(payload))
	return w.maybeStart()
}

// convertH26x turns an H.264/H.265 frame into 4-byte-length AVCC (what
// avc1/hvc1 samples hold) and estimates its decode time. Parameter sets
// that differ from the sample entry's are kept in band on keyframes.
func (t *track) convertH26x(f mux.Frame, started bool, log *slog.Logger) (out []byte, dts int64, ok bool, why string) {
	nalus, err := t.norm.Frame(f.Payload)
	if len(nalus) == 0 {
		if err != nil {
			return nil, 0, false, "malformed access unit: " + err.Error()
		}
		return nil, 0, false, "access unit without picture data"
	}
	ps := t.norm.ParamSets()
	if t.codec == nil && (started || !f.Keyframe || !ps.Complete(t.norm.Codec())) {
		return nil, 0, false, "waiting for a keyframe with parameter sets"
	}
	dts = t.dts.Next(ps, nalus, f.Timestamp)
	inband := t.codec != nil && f.Keyframe && !ps.Equal(t.headerPS)
	if !inband && !t.norm.AnnexBInput() && t.lengthSize == 4 {
		// 4-byte AVCC from which nothing was stripped is stored as it came.
		size := 0
		for _, u := range nalus {
			size += 4 + len(u)
		}
		if size == len(f.Payload) {
			return f.Payload, dts, true, ""
		}
	}
	t.conv = t.conv[:0]
	if inband {
		if !t.psWarned {
			t.psWarned = true
			log.Warn("mp4: parameter sets changed after the header; keeping them in band", "track", t.ID, "codec", t.Codec)
		}
		t.conv = h26x.AppendAVCC(t.conv, ps.NALUs())
	}
	t.conv = h26x.AppendAVCC(t.conv, nalus)
	return t.conv, dts, true, ""
}

func (w *Writer) drop(t *track, why string) {
	w.stats.Dropped++
	if !t.warned {
		t.warned = true
		w.log.Warn("mp4: dropping frames", "track", t.ID, "codec", t.Codec, "reason", why)
	}
}

// maybeStart writes the header when every track is ready and every media
// track holds a frame, or when the buffered media exceeds HeaderWait.
func (w *Writer) maybeStart() error {
	if w.started || w.pending.Len() == 0 {
		return nil
	}
	for _, t := range w.tracks {
		if !t.removed && (!t.ready() || !t.got && !t.isText()) && !w.pending.Over(w.opts.HeaderWait) {
			return nil
		}
	}
	return w.start()
}

// start writes ftyp and moov with the ready tracks, then the frames
// buffered so far.
func (w *Writer) start() error {
	w.started = true
	got := false
	for _, t := range w.tracks {
		got = got || !t.removed && t.got
	}
	for _, t := range w.tracks {
		switch {
		case t.removed:
		case !t.ready():
			t.disabled = true
			w.log.Warn("mp4: track left out of the file: no codec configuration arrived in time", "track", t.ID, "codec", t.Codec)
		case got && !t.got && !t.isText():
			// A media track with no sample makes the file undecodable
			// (ffmpeg cannot tell its format), and the moov cannot grow.
			t.disabled = true
			w.log.Warn("mp4: track left out of the file: no frame arrived in time", "track", t.ID, "codec", t.Codec)
		default:
			// A track whose sample entry mediacommon cannot make (an SPS
			// it cannot parse, an AC-3 rate MP4 has no code for) is left
			// out rather than failing the others.
			t.mp4ID = 1
			if _, _, err := initMoov([]*track{t}); err != nil {
				t.disabled = true
				w.log.Warn("mp4: track left out of the file: cannot describe it in MP4", "track", t.ID, "codec", t.Codec, "err", err)
				continue
			}
			w.live = append(w.live, t)
			t.mp4ID = uint32(len(w.live))
			if t.Kind == mux.Video && w.video == nil {
				w.video = t
			}
		}
	}
	pending := w.pending.Take()
	if len(w.live) == 0 {
		return w.out.Fail(fmt.Errorf("mp4: no track can be written"))
	}
	first := int64(math.MaxInt64)
	for _, p := range pending {
		if !p.t.disabled {
			first = min(first, p.pts)
		}
	}
	if !w.opts.KeepTimestamps {
		w.origin = first
	}
	w.firstUs = first
	for _, t := range w.live {
		if t.dts != nil {
			t.delay = w.decodeDelay(t, pending)
		}
	}
	w.textFromStart(pending)
	if w.opts.WallClock != nil && first != math.MaxInt64 {
		w.created = mp4Time(w.opts.WallClock(first))
	}
	_, parts, err := initMoov(w.live)
	if err != nil {
		return w.out.Fail(fmt.Errorf("mp4: header: %w", err))
	}
	w.parts = parts
	moov, err := w.moov(false, false)
	if err != nil {
		return w.out.Fail(fmt.Errorf("mp4: header: %w", err))
	}
	if err := w.out.Write(append(ftyp(false), moov...)); err != nil {
		return err
	}
	w.initEnd = w.out.Pos
	for _, p := range pending {
		if p.t.disabled {
			w.stats.Dropped++
			w.stats.Frames--
			w.stats.Bytes -= int64(len(p.payload))
			continue
		}
		if err := w.addSample(p.t, p.pts, p.dts, p.key, p.disc, p.payload); err != nil {
			return err
		}
		if p.end != 0 {
			p.t.setEnd(p.end)
		}
	}
	return nil
}

// decodeDelay is the delay added to both timelines of an H.264/H.265
// track (see track.delay): how far its first frame's decode time lies
// before its presentation time, so that its decode times start at its
// first presentation time, 0 for the file's first frame, as ffmpeg writes
// B-frames. h26x.DTS gives a stream's first keyframe its presentation time
// as decode time (the delay is then 0, and no edit list is written); only
// its fallback puts a first frame's decode time before it, by at most
// the catalog jitter. A track without a frame at the header gets that
// bound, as nothing says where its first decode time will fall.
func (w *Writer) decodeDelay(t *track, pending []pendingFrame) int64 {
	for _, p := range pending {
		if p.t == t {
			return max(ticks(max(p.pts-w.origin, 0), t.timescale)-ticks(p.dts-w.origin, t.timescale), 0)
		}
	}
	r := t.Jitter
	if r <= 0 {
		r = h26x.DefaultDTSReserve
	}
	return ticks(r.Microseconds(), t.timescale)
}

// ticks converts rebased microseconds to ticks of timescale ts, rounded.
func ticks(us int64, ts uint32) int64 {
	if us >= 0 {
		return (us*int64(ts) + 500_000) / 1_000_000
	}
	return -((-us*int64(ts) + 500_000) / 1_000_000)
}

// addSample puts one frame into the fragment being built, cutting the
// fragment first when this frame starts a new one.
func (w *Writer) addSample(t *track, ptsUs, dtsUs int64, key, disc bool, payload []byte) error {
	rel := ptsUs - w.origin
	if rel < 0 {
		rel = 0
		w.stats.Clamped++
	}
	pts := ticks(rel, t.timescale) + t.delay
	dts := ticks(dtsUs-w.origin, t.timescale) + t.delay
	if !t.begun {
		t.firstPTS = rel
	}
	if t.begun && dts <= t.lastDTS {
		dts = t.lastDTS + 1
	}
	dts = max(dts, 0)
	cto := pts - dts
	t.maxPTS = max(t.maxPTS, pts)
	cto = max(min(cto, math.MaxInt32), math.MinInt32)
	if t.begun {
		d := min(dts-t.lastDTS, math.MaxUint32)
		if w.keepTable {
			t.tab.addDuration(uint32(d))
		}
		if n := len(t.pend); n > 0 && !t.pend[n-1].durKnown {
			fd := d
			if disc {
				fd = t.lastEnd()
			}
			t.pend[n-1].dur, t.pend[n-1].durKnown = uint32(fd), true
		}
		if !disc {
			t.lastDur = d
		}
	} else {
		t.tab.firstDTS = dts
	}
	relUs := rel
	cut := !w.fragEmpty && (disc || w.breakNext ||
		(t == w.video && key) ||
		(w.video == nil && relUs-w.fragStartUs >= w.opts.FragmentDuration.Microseconds()) ||
		relUs-w.fragStartUs >= 4*w.opts.FragmentDuration.Microseconds() ||
		w.fragBytes+len(payload) > maxFragmentBytes)
	if cut {
		if err := w.cut(false); err != nil {
			return err
		}
	}
	w.breakNext = false
	if w.fragEmpty {
		w.fragEmpty, w.fragStartUs = false, relUs
	}
	t.begun, t.lastDTS = true, dts
	t.endDur, t.lastPTSUs = 0, ptsUs
	t.pend = append(t.pend, sample{dts: dts, cto: int32(cto), size: uint32(len(payload)), sync: key})
	t.store = append(t.store, payload...)
	w.fragBytes += len(payload)
	if w.keepTable {
		t.tab.addSample(uint32(len(payload)), int32(cto), key)
	}
	return nil
}

// EndFrame gives the newest sample of track id the duration its publisher
// said (mux.FrameEnder): the last sample and the one before a
// discontinuity take it instead of an estimate.
func (w *Writer) EndFrame(id int, end int64) error {
	if err := w.out.Usable(); err != nil {
		return err
	}
	t, ok := w.byID[id]
	if !ok || t.removed {
		return w.out.UnknownTrack("end of a frame for", id)
	}
	if !w.started {
		// The sample waits with the header: give its pending frame the end.
		if p := w.pending.Last(func(p *pendingFrame) bool { return p.t == t }); p != nil {
			p.end = end
		}
		return nil
	}
	t.setEnd(end)
	return nil
}

// setEnd gives the newest sample its publisher's end (µs).
func (t *track) setEnd(end int64) {
	if t.begun && end > t.lastPTSUs {
		t.endDur = max(ticks(end-t.lastPTSUs, t.timescale), 1)
	}
}

// lastEnd is the duration, in ticks, of the newest sample when no
// successor gives it (the last one, the one before a discontinuity): the
// publisher's (EndFrame) or the estimate.
func (t *track) lastEnd() int64 {
	if t.endDur > 0 {
		return t.endDur
	}
	return t.estimate()
}

// estimate is the duration, in ticks, given to a sample whose successor
// is unknown or lies across a discontinuity, when its publisher gave
// none.
func (t *track) estimate() int64 {
	if t.lastDur > 0 {
		return t.lastDur
	}
	if t.Kind == mux.Audio && t.frameSamples > 0 {
		return int64(t.frameSamples) * int64(t.timescale) / int64(max(t.sampleRate(), 1))
	}
	if t.Framerate > 0 {
		return int64(math.Round(float64(t.timescale) / t.Framerate))
	}
	return int64(t.timescale) / 30
}

// sampleRate is the rate frameSamples counts in: the timescale, which is
// the sample rate for every audio codec here.
func (t *track) sampleRate() uint32 { return t.timescale }

// closeDuration gives the track's last sample its estimated duration, in
// the table and in the fragment being built.
func (t *track) closeDuration(final bool) {
	if !t.begun {
		return
	}
	e := t.lastEnd()

	if t.tab.durOpen {
		t.tab.addDuration(uint32(e))
	}
	if n := len(t.pend); n > 0 && !t.pend[n-1].durKnown {
		t.pend[n-1].dur, t.pend[n-1].durKnown = uint32(e), true
	}
	_ = final
}

func (tab *table) addSample(size uint32, cto int32, sync bool) {
	tab.sizes = append(tab.sizes, size)
	if n := len(tab.ctts); n > 0 && tab.ctts[n-1].offset == cto {
		tab.ctts[n-1].count++
	} else {
		tab.ctts = append(tab.ctts, cttsRun{1, cto})
	}
	if cto != 0 {
		tab.anyCTO = true
	}
	if sync {
		tab.sync = append(tab.sync, uint32(len(tab.sizes)))
	} else {
		tab.nonSync++
	}
	tab.durOpen = true
}

func (tab *table) addDuration(d uint32) {
	if !tab.durOpen {
		return
	}
	tab.durOpen = false
	tab.mediaDur += int64(d)
	if n := len(tab.stts); n > 0 && tab.stts[n-1].delta == d {
		tab.stts[n-1].count++
	} else {
		tab.stts = append(tab.stts, sttsRun{1, d})
	}
}

// cut writes the fragment built so far: for each track the samples whose
// duration is known (all of them when final). A track's last sample waits
// for its successor, which gives its duration, and opens the next fragment.
//
// The fragment goes out in one Write, so a buffered output never passes on
// a moof without its mdat (the CLI's file output flushes where a Write
// ended), and an unbuffered file takes one syscall per fragment. The
// largest run (the video) is written from its track's buffer: the moof,
// the mdat header and the other runs are copied into the room its buffer
// keeps in front of the payloads, and the run is last in the mdat.
func (w *Writer) cut(final bool) error {
	runs := w.runs[:0]
	carrier := -1
	for _, t := range w.live {
		n, size := 0, 0
		for n < len(t.pend) && t.pend[n].durKnown {
			size += int(t.pend[n].size)
			n++
		}
		t.runLen, t.runBytes = n, size
		if n > 0 {
			if carrier < 0 || size > runs[carrier].runBytes {
				carrier = len(runs)
			}
			runs = append(runs, t)
		}
	}
	w.runs = runs
	if len(runs) == 0 {
		return nil
	}
	last := len(runs) - 1
	runs[carrier], runs[last] = runs[last], runs[carrier]
	c := runs[last]
	w.seq++
	w.buf = appendMoof(w.buf[:0], w.seq, runs)
	frag := fragment{srcOffset: w.out.Pos + int64(len(w.buf)), dataOffset: w.dataLen}
	front := len(w.buf)
	for _, t := range runs[:last] {
		front += t.runBytes
	}
	if front <= c.room {
		at := c.room - front
		at += copy(c.store[at:], w.buf)
		for _, t := range runs[:last] {
			at += copy(c.store[at:], t.payloads()[:t.runBytes])
		}
		if err := w.out.Write(c.store[c.room-front : c.room+c.runBytes]); err != nil {
			return err
		}
	} else {
		// Not enough room yet (the first fragment, a longer GOP): one
		// copy, and more room from now on.
		for _, t := range runs {
			w.buf = append(w.buf, t.payloads()[:t.runBytes]...)
		}
		if err := w.out.Write(w.buf); err != nil {
			return err
		}
		c.wantRoom = front + front/2
	}
	off := 0
	w.fragBytes = 0
	for _, t := range runs {
		if w.keepTable {
			t.tab.chunks = append(t.tab.chunks, chunk{frag: len(w.frags), off: uint32(off), n: uint32(t.runLen)})
		}
		off += t.runBytes
		// Keep the samples still waiting for their duration.
		t.pend = t.pend[:copy(t.pend, t.pend[t.runLen:])]
		t.keepPayloads(t.runBytes, 4*maxFragmentBytes/len(w.live))
		w.fragBytes += len(t.store) - t.room
	}
	// A buffered output with a Flush method passes each whole fragment on
	// at once.
	if f, ok := w.w.(interface{ Flush() error }); ok {
		if err := f.Flush(); err != nil {
			return w.out.Fail(fmt.Errorf("mp4: write: %w", err))
		}
	}
	frag.size = int64(off)
	if w.keepTable {
		w.frags = append(w.frags, frag)
	}
	w.dataLen += frag.size
	w.stats.Fragments++
	w.fragEmpty = true
	for _, t := range w.live {
		if len(t.pend) > 0 {
			w.fragEmpty = false
		}
	}
	if !w.fragEmpty {
		// The held samples open the next fragment; its length counts from
		// the earliest of them.
		w.fragStartUs = math.MaxInt64
		for _, t := range w.live {
			if len(t.pend) > 0 {
				w.fragStartUs = min(w.fragStartUs, (t.pend[0].dts+int64(t.pend[0].cto))*1_000_000/int64(t.timescale))
			}
		}
	}
	_ = final
	return nil
}

// payloads returns the payloads of the track's pending samples.
func (t *track) payloads() []byte { return t.store[t.room:] }

// keepPayloads drops the first n bytes of payloads (the run just written)
// and moves the rest to the start of the payloads, after the room the
// track wants in front of them. A buffer larger than pin that is mostly
// empty is let go.
func (t *track) keepPayloads(n, pin int) {
	held := t.store[t.room+n:]
	room := max(t.room, t.wantRoom)
	if room+len(held) > cap(t.store) {
		grown := make([]byte, room+len(held), room+max(len(held), cap(t.store)-t.room))
		copy(grown[room:], held)
		t.store = grown
	} else {
		t.store = t.store[:room+copy(t.store[room:room+len(held)], held)]
	}
	t.room = room
	if cap(t.store)-t.room > pin && len(held) < (cap(t.store)-t.room)/8 {
		t.store = slices.Clip(t.store) // do not pin one huge GOP's buffer
	}
}

// Close writes what is buffered as the last fragment and, when
// Options.Path is set, finishes the file into a regular MP4 (see the
// package doc). It does not close the underlying writer. A second Close
// does nothing.
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
			ready = ready || (!t.removed && t.ready())
		}
		if !ready {
			return nil // nothing playable to write
		}
		if err := w.start(); err != nil {
			return err
		}
	}
	for _, t := range w.live {
		t.closeDuration(true)
	}
	if err := w.cut(true); err != nil {
		return err
	}
	if w.opts.Path == "" {
		if w.opts.FinishHead != nil {
			return w.finishHead()
		}
		return nil
	}
	return w.finish()
}

// SampleEntry returns the codec (mediacommon's) and timescale that track
// id's sample entry in the init segment was made with: what reading the
// init segment back would say, without parsing it. ok is false before the
// Writer started and for a track whose entry is not mediacommon's (text).
func (w *Writer) SampleEntry(id int) (codec codecs.Codec, timescale uint32, ok bool) {
	t := w.byID[id]
	if t == nil || t.codec == nil || !w.started {
		return nil, 0, false
	}
	return t.codec, t.timescale, true
}

// BreakFragment makes the next frame written start a new fragment: the
// fragments of every frame before it are then written (in the WriteFrame
// that takes it), each sample with its duration up to its successor. A
// segmenter (mux/hls) cuts a CMAF segment there. Nothing happens before the
// header is written.
func (w *Writer) BreakFragment() { w.breakNext = w.started }

// Started reports whether the header (ftyp and moov) has been written.
func (w *Writer) Started() bool { return w.started }

// Seekable reports whether Close will finish the output into a regular MP4.
func (w *Writer) Seekable() bool { return w.opts.Path != "" || w.opts.FinishHead != nil }

var _ = bytes.Equal
