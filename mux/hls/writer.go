package hls

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path"
	"strings"
	"time"

	"github.com/bluenviron/gohlslib/v2/pkg/playlist"

	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/mp4"
)

// Store is where a package's files go: a directory, an object store. Both
// calls take the whole file.
type Store interface {
	// WriteFile stores a complete file atomically: a reader sees the old
	// content or the new one, never a part (rename on a file system, one
	// PUT on an object store). Files are written in the order a player
	// needs them (a segment before the playlist that names it). Like
	// io.Writer's Write, it keeps no reference to data once it returns:
	// the Writer renders the next version of a playlist, the MPD or the
	// state into the same buffer.
	WriteFile(name string, data []byte) error
	// ReadFile returns a file written before (the package state, when a
	// recording continues a package); an error wrapping fs.ErrNotExist
	// when there is none.
	ReadFile(name string) ([]byte, error)
}

// NewFileStore is a Store that can also write a file no reader looks for
// yet in place, without the temporary name and rename that make WriteFile
// atomic: the Writer writes each segment and init segment this way, as no
// playlist names it before it is complete (a file system: a rename less
// per segment). A file left partial by a crash is named by no playlist,
// and a continued package writes it again.
type NewFileStore interface {
	Store
	WriteNewFile(name string, data []byte) error
}

// BatchStore is a Store that can show several files at once: the files
// WriteFile writes after Hold show only at the next Release, together (or
// in the order written). The Writer holds its store and releases it once
// per boundary, after every media playlist, the MPD, the multivariant
// playlist and the state of that boundary: a directory (DirStore) then
// swaps all of them in one exchange instead of one per file.
type BatchStore interface {
	Store
	// Hold defers what WriteFile writes from now on to the next Release.
	Hold()
	// Release shows every file written since the last Release.
	Release() error
}

// PatchStore is a Store that can take a file's next version as the byte
// ranges in which it differs from the version before, where its copy of
// an older version can be brought up to date in place (DirStore: the
// spare of the two manifest directories). The Writer writes the MPD so
// while recording: a document with room after each list that grows
// (docs/hls.md, Cost), whose boundary changes a few hundred bytes of it
// where writing it whole copied all of it, which grows with the
// recording.
type PatchStore interface {
	Store
	// WriteFileChanged stores data as name's next version, as WriteFile
	// does (atomically, keeping no reference to data). The version before
	// (the last one WriteFile or WriteFileChanged stored of name) is no
	// longer than data and differs from it only within changed and past
	// its own end (what a playlist appends).
	WriteFileChanged(name string, data []byte, changed []Span) error
}

// Span is the byte range [Off, Off+Len) of a file.
type Span struct{ Off, Len int }

// RangeStore is a Store whose files can also grow in place: the Writer
// then keeps each audio and video rendition in one media file (v0.mp4:
// its init segment, then its segments one after another) and names each
// segment by its byte range (EXT-X-BYTERANGE, an EXT-X-MAP with
// BYTERANGE, a DASH SegmentList with mediaRange), unless
// Options.SegmentFiles. A file system can (DirStore); an object store,
// whose objects are written whole, cannot.
type RangeStore interface {
	Store
	// WriteRange writes data at offset off of file name, creating it. A
	// reader may see the bytes before the call returns: the Writer names
	// none of them in a playlist before.
	WriteRange(name string, off int64, data []byte) error
	// TruncateRange cuts file name to size bytes; an error when it holds
	// fewer (it is never made longer). A continued package cuts what a
	// killed recording wrote past the last segment its playlist names.
	TruncateRange(name string, size int64) error
	// ReadRange returns n bytes of file name from offset off; an error
	// when the file holds fewer.
	ReadRange(name string, off int64, n int) ([]byte, error)
}

// Options configures a Writer.
type Options struct {
	// Store receives the files. Required.
	Store Store
	// Playlist is the name of the multivariant playlist (default
	// "index.m3u8"); the DASH manifest is the same name ending in .mpd,
	// the package state the same name ending in .state.json.
	Playlist string
	// SegmentDuration is the target length of a segment: a segment is cut
	// at the first keyframe of the leading video at or after it (default
	// 4s).
	SegmentDuration time.Duration
	// Start is the wall-clock time of the first frame, for
	// EXT-X-PROGRAM-DATE-TIME and the MPD's availabilityStartTime; zero:
	// Now() when the first frame arrives.
	Start time.Time
	// Clock, when set, gives the wall-clock time of a WriteFrame
	// timestamp (a catalog's root clock, the publisher's wall time of
	// each media time): EXT-X-PROGRAM-DATE-TIME and the MPD's
	// availabilityStartTime follow it instead of Start.
	Clock func(ts int64) time.Time
	// Now is the wall clock (default time.Now).
	Now func() time.Time
	// Logger receives warnings; nil discards them.
	Logger *slog.Logger
	// SegmentFiles writes each segment and init segment as a file of its
	// own (v0-init.mp4, v0-00001.m4s, ...) even when the Store is a
	// RangeStore, whose renditions are otherwise one media file each,
	// segments named by byte range. A rendition continued from an
	// earlier run keeps the layout it was started with.
	SegmentFiles bool
}

// DefaultSegmentDuration is the default Options.SegmentDuration.
const DefaultSegmentDuration = 4 * time.Second

// counters details what a Writer did.
type counters struct {
	mux.Stats
	// Segments counts the media segments written, over all renditions.
	Segments int
	// Continued is true when the Writer continued a package it found.
	Continued bool
}

// Writer is the HLS/DASH mux.Muxer. Create it with NewWriter.
type Writer struct {
	opts Options
	log  *slog.Logger

	rends []*rendition
	byID  map[int]*rendition
	// lead is the leader (see leader) while leadKnown.
	lead      *rendition
	leadKnown bool

	st        *state // the package as stored (with earlier runs' segments)
	loaded    bool
	started   bool
	origin    int64     // µs subtracted from frame timestamps
	runWall   time.Time // wall clock of runStart
	runStart  int64     // package µs of this run's first frame
	resumeEnd int64     // package µs where the earlier runs ended
	firstRun  bool      // no segment before this run

	// src is this run's sourceState, the state's Source from its first
	// frame (noteSource); srcKeyed: src.Key is a keyframe of this
	// timeline, from which the next one's interval counts.
	src      sourceState
	srcKeyed bool
	srcTick  int // leading frames seen (noteSource)
	// rejoined: this run continues the package on its timeline
	// (sameTimeline), each rendition dropping what the package holds
	// until it joins (rendition.joining); joinAt is the leader's first
	// frame kept (package µs).
	rejoined bool
	joinAt   int64

	// boundary is the start (package µs) of the newest segment of the
	// leading rendition; nextSeg its index; discNext marks the next
	// boundary as a break of the timeline.
	boundary int64
	nextSeg  int
	discNext bool

	early []pendingChapter // chapters asked for before the first frame
	// stateSig is what the state last written held that the playlists
	// cannot say; sinceState counts the boundaries since (writeState).
	stateSig   stateSig
	sinceState int
	dropped    int64    // frames of followers waiting out a discontinuity
	mv         mvShape  // what the multivariant playlist last said
	mvAt       []mvRend // its renditions when it was written (mvSame)
	// The MPD and the state written last: their buffers, written over at
	// the next write (Store.WriteFile keeps no data), as both grow with
	// the recording.
	mpdBuf, stateBuf []byte
	mpdKept          mpdKept // the MPD document of the last boundary (mpd)
	mpdWhole         int     // MPDs rendered whole (the others filled in: mpd)
	err              error
	closed           bool
	closing          bool // Close writes the last segments: publish waits for the final one
	held             bool // the BatchStore is held (publish)
	segments         int
}

// rendition is one track: its CMAF writer and segments.
type rendition struct {
	t   mux.Track
	rs  *renditionState
	mw  *mp4.Writer
	out *sink

	initDone bool
	initGen  int // index into rs.Inits for this run

	// The segment being built: its number, start (package µs), whether it
	// has a frame, the newest presentation time in it.
	cur struct {
		num    int
		start  int64
		has    bool
		maxPTS int64
		disc   bool
	}
	// breakAt is the boundary this rendition cuts at next (followers).
	breakAt    int64
	breakDisc  bool
	breakArmed bool
	discWait   bool // a discontinuity of its own: wait for the next boundary
	discCarry  bool // frames dropped while waiting: the next one breaks the timeline
	lastPTS    int64
	minGap     int64
	removed    bool
	// joining: the run continues the package on its timeline and this
	// rendition has written nothing yet; it drops its frames before
	// resumeAt (where its earlier media ended, less half a frame), and
	// before the leader's first kept frame (Writer.skip).
	joining  bool
	resumeAt int64
	// endAt is where the rendition's newest frame ends (package µs), when
	// its publisher said (EndFrame); 0: not said. lastWritten is whether
	// that frame went into the segment (a frame waiting out a
	// discontinuity does not).
	endAt       int64
	lastWritten bool

	// A text rendition (no CMAF writer, see text.go): the cues of the
	// segment being built, where it starts, whether the timeline breaks
	// before it, and what it was given.
	cues                  []textCue
	textStart             int64
	textDisc              bool
	textFrames, textBytes int64
}

// sink takes what the CMAF writer writes: into b, or, once a ranged
// rendition's init segment is taken (direct), straight into its media
// file after what the package names, the segment being built from off,
// n bytes of it so far. No playlist names those bytes before the segment
// is complete, as when the segment was written whole at its end; and the
// segment is neither copied in memory nor held in a buffer its size.
type sink struct {
	b []byte

	to   RangeStore // nil: into b
	name string
	off  int64
	n    int64
}

func (s *sink) Write(p []byte) (int, error) {
	if s.to == nil {
		s.b = append(s.b, p...)
		return len(p), nil
	}
	if err := s.to.WriteRange(s.name, s.off+s.n, p); err != nil {
		return 0, err
	}
	s.n += int64(len(p))
	return len(p), nil
}

// direct sends what the CMAF writer writes next into r's media file, when
// r is ranged and nothing is held in b.
func (r *rendition) direct(st Store) {
	rst, ok := st.(RangeStore)
	if !ok || r.rs.Media == "" || len(r.out.b) > 0 || r.out.to != nil {
		return
	}
	r.out.to, r.out.name, r.out.off, r.out.n = rst, r.rs.Media, r.rs.fileEnd(), 0
}

// NewWriter returns a Writer that stores a package through opts.Store.
func NewWriter(opts Options) *Writer {
	if opts.Playlist == "" {
		opts.Playlist = "index.m3u8"
	}
	if opts.SegmentDuration <= 0 {
		opts.SegmentDuration = DefaultSegmentDuration
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Writer{opts: opts, log: log, byID: map[int]*rendition{}}
}

func (w *Writer) base() string { return strings.TrimSuffix(w.opts.Playlist, path.Ext(w.opts.Playlist)) }

// MPDName is the name of the DASH manifest.
func (w *Writer) MPDName() string { return w.base() + ".mpd" }

func (w *Writer) stateName() string { return w.base() + stateSuffix }

// stateSuffix ends the package state's name. No player reads the state,
// so DirStore may give its old versions to other names (DirStore.free).
const stateSuffix = ".state.json"

// fail makes err sticky.
func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return w.err
}

// load reads the state of an existing package once.
func (w *Writer) load() error {
	if w.loaded {
		return nil
	}
	w.loaded = true
	if w.opts.Store == nil {
		return w.fail(errors.New("hls: Options.Store is nil"))
	}
	st, err := loadState(w.opts.Store, w.stateName())
	if err != nil {
		return w.fail(err)
	}
	if st == nil {
		st = &state{Version: stateVersion}
	}
	w.st = st
	for _, rs := range st.Renditions {
		w.adopt(rs)
	}
	for _, rs := range st.Renditions {
		if err := w.cutMedia(rs); err != nil {
			return w.fail(err)
		}
	}
	w.firstRun = true
	for _, rs := range st.Renditions {
		if n := len(rs.Segments); n > 0 {
			w.firstRun = false
			w.resumeEnd = max(w.resumeEnd, rs.Segments[n-1].end())
		}
	}
	return nil
}

// cutMedia cuts a ranged rendition's media file back to what the
// package names (its state, and the segments adopt took from its
// playlist): a killed recording may have written part of a segment, or a
// whole one no playlist named yet, after it, and the run that continues
// the package appends there.
func (w *Writer) cutMedia(rs *renditionState) error {
	if rs.Media == "" || len(rs.InitRanges) == 0 {
		return nil
	}
	rst, ok := w.opts.Store.(RangeStore)
	if !ok {
		return fmt.Errorf("hls: rendition %s of the package is one media file with byte ranges, which this store cannot append to: %w", rs.ID, ErrBadState)
	}
	if err := rst.TruncateRange(rs.Media, rs.fileEnd()); err != nil {
		return fmt.Errorf("hls: cutting %s back to the %d bytes its playlist names: %w", rs.Media, rs.fileEnd(), err)
	}
	return nil
}

// adopt adds to rs the segments its media playlist names beyond the
// state: a recording killed after a playlist and before the state (which
// is written once per boundary) left them complete, and continuing the
// package must not write them again. Each follows the one before it on the
// timeline; its size is read back.
func (w *Writer) adopt(rs *renditionState) {
	if len(rs.Inits) == 0 && rs.Kind != "text" {
		return
	}
	b, err := w.opts.Store.ReadFile(rs.ID + ".m3u8")
	if err != nil {
		return
	}
	var m playlist.Media
	if m.Unmarshal(b) != nil {
		return
	}
	last := 0
	if n := len(rs.Segments); n > 0 {
		last = rs.Segments[n-1].Num
	}
	for i, ps := range m.Segments {
		num := m.MediaSequence + i
		if num <= last {
			continue
		}
		if !plain(ps.URI) || ps.Duration <= 0 {
			return
		}
		seg := segmentState{Num: num, URI: ps.URI, Init: max(len(rs.Inits)-1, 0), Dur: ps.Duration.Microseconds(), Disc: ps.Discontinuity}
		if rs.Media != "" {
			// A byte range of the media file, which must hold it whole.
			rst, ok := w.opts.Store.(RangeStore)
			if !ok || ps.URI != rs.Media || ps.ByteRangeLength == nil || *ps.ByteRangeLength == 0 {
				return
			}
			seg.Off, seg.Bytes = rs.fileEnd(), int64(*ps.ByteRangeLength)
			if ps.ByteRangeStart != nil {
				seg.Off = int64(*ps.ByteRangeStart)
			}
			if seg.Off < rs.fileEnd() {
				return
			}
			if _, err := rst.ReadRange(rs.Media, seg.Off+seg.Bytes-1, 1); err != nil {
				return
			}
		} else {
			data, err := w.opts.Store.ReadFile(ps.URI)
			if err != nil {
				return
			}
			seg.Bytes = int64(len(data))
		}
		if n := len(rs.Segments); n > 0 {
			prev := rs.Segments[n-1]
			seg.Start, seg.Date = prev.end(), prev.Date.Add(time.Duration(prev.Dur)*time.Microsecond)
		}
		if ps.DateTime != nil {
			seg.Date = ps.DateTime.UTC()
		}
		rs.Segments = append(rs.Segments, seg)
		w.log.Info("hls: a segment the playlist named after the state is kept", "segment", ps.URI)
	}
}

// AddTrack adds a rendition. Tracks can be added until the first frame;
// later ones are refused with mux.ErrLateTrack (the multivariant playlist
// players read first would not list them).
func (w *Writer) AddTrack(t mux.Track) error {
	if w.closed {
		return mux.ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	if err := Supports(t); err != nil {
		return err
	}
	if w.started {
		return fmt.Errorf("hls: track %d (%s): %w", t.ID, t.Codec, mux.ErrLateTrack)
	}
	if _, dup := w.byID[t.ID]; dup {
		return fmt.Errorf("hls: track %d added twice", t.ID)
	}
	if err := w.load(); err != nil {
		return err
	}
	if t.Kind == 0 {
		t.Kind = mux.CodecKind(mux.CodecFamily(t.Codec))
	}
	r := &rendition{t: t, out: &sink{}}
	for _, rs := range w.st.Renditions {
		if rs.Name == t.Name && rs.Kind == t.Kind.String() && !w.taken(rs) {
			r.rs = rs
		}
	}
	if r.rs == nil {
		prefix := map[mux.Kind]string{mux.Video: "v", mux.Audio: "a", mux.Text: "s"}[t.Kind]
		id := ""
		for n := 0; id == "" || w.idTaken(id); n++ {
			id = fmt.Sprintf("%s%d", prefix, n)
		}
		r.rs = &renditionState{ID: id, Name: t.Name, Kind: t.Kind.String()}
		if _, ok := w.opts.Store.(RangeStore); ok && !w.opts.SegmentFiles && t.Kind != mux.Text {
			r.rs.Media = id + ".mp4"
		}
		w.st.Renditions = append(w.st.Renditions, r.rs)
	}
	if _, ok := w.opts.Store.(RangeStore); !ok && r.rs.Media != "" {
		if len(r.rs.InitRanges) > 0 {
			return fmt.Errorf("hls: rendition %s of the package is one media file with byte ranges, which this store cannot append to: %w", r.rs.ID, ErrBadState)
		}
		r.rs.Media = "" // nothing written yet: one file per segment
	}
	r.rs.Lang, r.rs.Label = t.Language, t.Label
	r.rs.Width, r.rs.Height, r.rs.Framerate = t.Width, t.Height, t.Framerate
	r.rs.Rate, r.rs.Channels = t.SampleRate, t.Channels
	if r.isText() {
		r.rs.Codecs = "wvtt"
		w.rends = append(w.rends, r)
		w.leadKnown = false
		w.byID[t.ID] = r
		return nil
	}
	// Timestamps stay as given: the Writer rebases every rendition onto
	// one package timeline itself. The fragment length bounds audio
	// fragments; segment cuts come from BreakFragment.
	// An audio rendition's fragments are bounded at twice the segment
	// duration: its segments are cut at the leader's boundaries, and a
	// bound of one segment duration, reached a frame before the boundary,
	// made each audio segment two fragments, the second of one frame (a
	// write and a moof more per segment).
	frag := w.opts.SegmentDuration
	if t.Kind == mux.Audio {
		frag *= 2
	}
	r.mw = mp4.NewWriter(r.out, mp4.Options{KeepTimestamps: true, Logger: w.opts.Logger, FragmentDuration: frag})
	if err := r.mw.AddTrack(t); err != nil {
		return fmt.Errorf("hls: %w", err)
	}
	w.rends = append(w.rends, r)
	w.leadKnown = false
	w.byID[t.ID] = r
	return nil
}

// idTaken reports whether a rendition of the package has file prefix id.
func (w *Writer) idTaken(id string) bool {
	for _, rs := range w.st.Renditions {
		if rs.ID == id {
			return true
		}
	}
	return false
}

// taken reports whether a rendition of this run already continues rs.
func (w *Writer) taken(rs *renditionState) bool {
	for _, r := range w.rends {
		if r.rs == rs {
			return true
		}
	}
	return false
}

// RemoveTrack ends a rendition: its last segment is written, and its
// playlist stays as it is.
func (w *Writer) RemoveTrack(id int) error {
	if w.closed {
		return mux.ErrClosed
	}
	r, ok := w.byID[id]
	if !ok || r.removed {
		return fmt.Errorf("hls: remove track %d: %w", id, mux.ErrUnknownTrack)
	}
	r.removed = true
	w.leadKnown = false
	if !w.started {
		return nil
	}
	if r.isText() {
		if !w.joined() {
			return nil
		}
		return w.finishText(r, max(w.mediaEnd(), r.textStart+1), false)
	}
	if err := r.mw.Close(); err != nil {
		return w.fail(fmt.Errorf("hls: %s: %w", r.rs.ID, err))
	}
	return w.finishSegment(r, 0, false, true)
}

// leader is the rendition whose keyframes place the segment boundaries:
// the first video still recorded, else the first audio. It is found once
// per change of the renditions (AddTrack, RemoveTrack), not per frame.
func (w *Writer) leader() *rendition {
	if w.leadKnown {
		return w.lead
	}
	w.lead, w.leadKnown = nil, true
	for _, k := range []mux.Kind{mux.Video, mux.Audio} {
		for _, r := range w.rends {
			if r.t.Kind == k && !r.removed {
				w.lead = r
				return r
			}
		}
	}
	return nil
}

// rendition returns track id's rendition. A package has a few: a look
// through them costs a frame less than a map's hash.
func (w *Writer) rendition(id int) (*rendition, bool) {
	for _, r := range w.rends {
		if r.t.ID == id {
			return r, true
		}
	}
	return nil, false
}

// WriteFrame adds one frame (see mux.Muxer).
func (w *Writer) WriteFrame(f mux.Frame) error {
	if w.closed {
		return mux.ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	r, ok := w.rendition(f.TrackID)
	if !ok || r.removed {
		return fmt.Errorf("hls: frame for track %d: %w", f.TrackID, mux.ErrUnknownTrack)
	}
	if !w.started {
		if err := w.start(f); err != nil {
			return err
		}
	}
	rel := f.Timestamp - w.origin
	key := f.Keyframe || r.t.Kind == mux.Audio || r.isText()
	lead := r == w.leader()
	if lead {
		w.noteSource(f, key)
	}
	if r.joining && w.skip(r, rel, key, lead) {
		w.dropped++
		return nil
	}
	if r.isText() {
		return w.writeText(r, f)
	}
	if f.Discontinuity {
		switch {
		case lead:
			w.discNext = true
		case r.breakArmed && r.breakDisc:
			// The leader placed the boundary after this break already.
			r.discWait = true
		default:
			w.discNext = true
			r.discWait = true
		}
	}
	cut := false
	switch {
	case lead:
		due := rel-w.boundary >= w.opts.SegmentDuration.Microseconds()-500
		if key && r.cur.has && (due || w.discNext) {
			w.boundary = rel
			w.nextSeg++
			for _, o := range w.rends {
				if o != r && !o.removed {
					o.breakAt, o.breakDisc, o.breakArmed = rel, w.discNext, true
				}
			}
			r.breakDisc = w.discNext
			w.discNext = false
			cut = true
		}
	case r.breakArmed && key && rel >= r.breakAt:
		cut = r.cur.has
		r.breakArmed = false
		r.discWait = false
		if !cut {
			r.cur.disc = r.cur.disc || r.breakDisc
		}
	case r.discWait:
		// A follower's frames after its own break of the timeline wait for
		// the boundary the leader places after it.
		r.discCarry = true
		w.dropped++
		return nil
	}
	disc := f.Discontinuity || r.discCarry
	r.discCarry = false
	before := r.mw.Stats()
	if cut {
		r.mw.BreakFragment()
	}
	if err := r.mw.WriteFrame(mux.Frame{TrackID: f.TrackID, Timestamp: rel, Keyframe: f.Keyframe, Discontinuity: disc, Payload: f.Payload}); err != nil {
		return w.fail(fmt.Errorf("hls: %s: %w", r.rs.ID, err))
	}
	if err := w.takeInit(r); err != nil {
		return err
	}
	written := r.mw.Stats().Frames > before.Frames
	if cut {
		if err := w.finishSegment(r, rel, r.breakDisc, false); err != nil {
			return err
		}
		r.cur.disc = r.breakDisc
		if lead {
			if err := w.cutText(rel, r.breakDisc); err != nil {
				return err
			}
		}
	}
	// The end marker said of the frame before (EndFrame) served the
	// segment cut above; this frame's is still to come.
	r.endAt, r.lastWritten = 0, written
	if !written {
		return nil
	}
	if !r.cur.has {
		r.cur.has, r.cur.start, r.cur.maxPTS = true, rel, rel
		r.cur.num = r.nextNum()
	}
	if g := rel - r.lastPTS; g > 0 && (r.minGap == 0 || g < r.minGap) && !disc {
		r.minGap = g
	}
	r.lastPTS = rel
	r.cur.maxPTS = max(r.cur.maxPTS, rel)
	return nil
}

// EndFrame gives the frame written last on track id the end its publisher
// said (mux.FrameEnder, hang's end marker), as MP4 files do: the last
// sample of a segment before a discontinuity, and of the package, lasts
// until then instead of an estimate, and so does the segment's
// duration in the playlists and the MPD.
func (w *Writer) EndFrame(id int, end int64) error {
	if w.closed {
		return mux.ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	r, ok := w.rendition(id)
	if !ok || r.removed {
		return fmt.Errorf("hls: end of a frame for track %d: %w", id, mux.ErrUnknownTrack)
	}
	if !w.started || r.isText() || !r.lastWritten {
		return nil
	}
	rel := end - w.origin
	if rel <= r.lastPTS {
		return nil
	}
	r.endAt = rel
	if err := r.mw.EndFrame(id, rel); err != nil {
		return w.fail(fmt.Errorf("hls: %s: %w", r.rs.ID, err))
	}
	return nil
}

// nextNum is the number of the rendition's next segment.
func (r *rendition) nextNum() int {
	if n := len(r.rs.Segments); n > 0 {
		return r.rs.Segments[n-1].Num + 1
	}
	return 1
}

// start begins the run at its first frame, after a discontinuity when it
// continues a package: on the package's timeline at the broadcast's own
// times when the run joined the same broadcast again (sameTimeline), its
// renditions first dropping what the package holds (skip); otherwise
// where the earlier runs ended.
func (w *Writer) start(f mux.Frame) error {
	w.started = true
	if err := w.load(); err != nil {
		return err
	}
	w.runStart = w.resumeEnd
	if w.sameTimeline(f) {
		w.rejoin()
	} else {
		if !w.firstRun {
			// Leave a frame's room after the earlier media.
			w.runStart += 100_000
		}
		w.origin = f.Timestamp - w.runStart
		w.runWall = w.opts.Start
		if w.opts.Clock != nil {
			w.runWall = w.opts.Clock(f.Timestamp)
		}
		if w.runWall.IsZero() {
			w.runWall = w.opts.Now()
		}
	}
	w.src.Offset, w.src.Wall = w.origin, w.wallOffset(f.Timestamp)
	w.st.Source = &w.src
	w.boundary = w.runStart
	w.discNext = false
	for _, r := range w.rends {
		r.cur.disc = !w.firstRun
		r.lastPTS = w.runStart
		r.textStart, r.textDisc = w.runStart, !w.firstRun
	}
	switch {
	case w.rejoined:
		w.log.Info("hls: continuing the package found on the broadcast's timeline, after a discontinuity: what it holds is not written again",
			"playlist", w.opts.Playlist, "package_end", time.Duration(w.resumeEnd)*time.Microsecond,
			"first_frame", time.Duration(f.Timestamp-w.origin)*time.Microsecond)
	case !w.firstRun:
		w.log.Info("hls: continuing the package found, after a discontinuity", "playlist", w.opts.Playlist)
	}
	for _, c := range w.early {
		w.addChapter(c.ts-w.origin, c.name)
	}
	w.early = nil
	return nil
}

// takeInit stores the rendition's init segment (ftyp and moov) once the
// CMAF writer wrote it: a new generation only when it differs from the
// last one stored. The segments after it go straight into a ranged
// rendition's media file (sink).
func (w *Writer) takeInit(r *rendition) error {
	if r.initDone || !r.mw.Started() {
		return nil
	}
	err := w.storeInit(r)
	if err == nil && r.initDone {
		r.direct(w.opts.Store)
	}
	return err
}

func (w *Writer) storeInit(r *rendition) error {
	n := initLen(r.out.b)
	if n == 0 {
		return nil
	}
	init := append([]byte(nil), r.out.b[:n]...)
	r.out.b = r.out.b[:copy(r.out.b, r.out.b[n:])]
	r.initDone = true
	codec, timescale, ok := r.mw.SampleEntry(r.t.ID)
	if !ok {
		return w.fail(fmt.Errorf("hls: %s: the CMAF writer has no sample entry", r.rs.ID))
	}
	info, err := describeInit(init, codec, timescale)
	if err != nil {
		return w.fail(fmt.Errorf("hls: %s: reading back its init segment: %w", r.rs.ID, err))
	}
	r.rs.Codecs, r.rs.Timescale, r.rs.Delay = info.codecs, info.timescale, info.delay
	if info.width > 0 {
		r.rs.Width, r.rs.Height = info.width, info.height
	}
	if k := len(r.rs.Inits); k > 0 {
		if old, err := w.readInit(r.rs, k-1); err == nil && bytes.Equal(old, init) {
			r.initGen = k - 1
			return nil
		}
	}
	if r.rs.Media != "" {
		// The init segment goes into the media file, after what it holds.
		ir := byteRange{Off: r.rs.fileEnd(), Len: int64(len(init))}
		if err := w.opts.Store.(RangeStore).WriteRange(r.rs.Media, ir.Off, init); err != nil {
			return w.fail(fmt.Errorf("hls: writing the init segment into %s: %w", r.rs.Media, err))
		}
		r.rs.Inits = append(r.rs.Inits, r.rs.Media)
		r.rs.InitRanges = append(r.rs.InitRanges, ir)
		r.initGen = len(r.rs.Inits) - 1
		return nil
	}
	name := r.rs.ID + "-init.mp4"
	if k := len(r.rs.Inits); k > 0 {
		name = fmt.Sprintf("%s-init-%d.mp4", r.rs.ID, k+1)
	}
	if err := w.writeNew(name, init); err != nil {
		return w.fail(fmt.Errorf("hls: writing %s: %w", name, err))
	}
	r.rs.Inits = append(r.rs.Inits, name)
	r.initGen = len(r.rs.Inits) - 1
	return nil
}

// readInit reads back init segment generation k of rs.
func (w *Writer) readInit(rs *renditionState, k int) ([]byte, error) {
	if rs.Media == "" {
		return w.opts.Store.ReadFile(rs.Inits[k])
	}
	rst, ok := w.opts.Store.(RangeStore)
	if !ok {
		return nil, fmt.Errorf("hls: %s: the store cannot read a range", rs.Media)
	}
	ir := rs.InitRanges[k]
	return rst.ReadRange(rs.Media, ir.Off, int(ir.Len))
}

// initLen returns the length of the leading ftyp and moov boxes of b, 0
// while they are not both there.
func initLen(b []byte) int {
	pos := 0
	for pos+8 <= len(b) {
		size := int(binary.BigEndian.Uint32(b[pos:]))
		typ := string(b[pos+4 : pos+8])
		if size < 8 || pos+size > len(b) {
			return 0
		}
		pos += size
		if typ == "moov" {
			return pos
		}
	}
	return 0
}

// finishSegment stores the rendition's segment being built, with what the
// CMAF writer wrote for it: next is where the following segment starts
// (package µs) unless last or disc, when the segment ends one frame after
// its newest presentation time. Then the playlists that name it.
func (w *Writer) finishSegment(r *rendition, next int64, disc, last bool) error {
	data := r.out.b
	size := int64(len(data)) + r.out.n // one of them is 0
	if !r.cur.has || size == 0 {
		r.out.b = r.out.b[:0]
		if r.out.n > 0 {
			// Bytes of no segment, past what the package names: cut.
			r.out.n = 0
			if err := r.out.to.TruncateRange(r.out.name, r.out.off); err != nil {
				return w.fail(fmt.Errorf("hls: %s: %w", r.out.name, err))
			}
		}
		return nil
	}
	end := next
	if disc || last || next <= r.cur.start {
		end = r.cur.maxPTS + r.frameDur()
		if r.endAt > r.cur.maxPTS {
			end = r.endAt
		}
	}
	// A frame before the package's first (a late one the jitter buffer
	// passed) is written at 0 by the CMAF writer: so is its segment.
	start := max(r.cur.start, 0)
	seg := segmentState{
		Num: r.cur.num, Init: r.initGen, Start: start, Dur: max(end-start, 1),
		Bytes: size, Disc: r.cur.disc,
		Date: w.runWall.Add(time.Duration(start-w.runStart) * time.Microsecond).UTC(),
	}
	if r.rs.Media != "" {
		// Appended to the rendition's media file, named by its range.
		seg.URI, seg.Off = r.rs.Media, r.rs.fileEnd()
		if r.out.to == nil {
			if err := w.opts.Store.(RangeStore).WriteRange(seg.URI, seg.Off, data); err != nil {
				return w.fail(fmt.Errorf("hls: writing segment %d into %s: %w", seg.Num, seg.URI, err))
			}
		} else if seg.Off != r.out.off {
			return w.fail(fmt.Errorf("hls: segment %d of %s was written at %d, its range starts at %d", seg.Num, seg.URI, r.out.off, seg.Off))
		}
	} else {
		seg.URI = fmt.Sprintf("%s-%05d.m4s", r.rs.ID, seg.Num)
		if err := w.writeNew(seg.URI, data); err != nil {
			return w.fail(fmt.Errorf("hls: writing %s: %w", seg.URI, err))
		}
	}
	r.out.b = r.out.b[:0]
	r.cur.has, r.cur.disc = false, false
	r.rs.Segments = append(r.rs.Segments, seg)
	r.out.off, r.out.n = r.rs.fileEnd(), 0
	w.segments++
	return w.publish(r, false)
}

// frameDur estimates one frame's duration of the rendition, in µs.
func (r *rendition) frameDur() int64 {
	switch {
	case r.minGap > 0:
		return r.minGap
	case r.t.Framerate > 0:
		return int64(math.Round(1e6 / r.t.Framerate))
	case r.t.Kind == mux.Audio:
		return 20_000
	}
	return 33_333
}

// publish writes the rendition's media playlist (every one when final),
// after the segment it names; then, once every rendition of the run has
// written its segment of this boundary (or when final), the package state,
// the DASH manifest and the multivariant playlist. Writing those once per
// boundary, not per rendition, halves the files written per segment; a
// restart after a crash between the two takes the segments the playlists
// named beyond the state from the playlists (adopt).
func (w *Writer) publish(r *rendition, final bool) error {
	if w.closing && !final {
		return nil // Close publishes everything once, final
	}
	b, batch := w.opts.Store.(BatchStore)
	if batch && !w.held {
		b.Hold()
		w.held = true
	}
	done, err := w.publishFiles(r, final)
	if err != nil || !done || !batch {
		return err
	}
	if err := b.Release(); err != nil {
		return w.fail(fmt.Errorf("hls: publishing: %w", err))
	}
	return nil
}

// publishFiles writes what publish publishes; done is false when the
// boundary is not complete yet (a BatchStore shows r's playlist with the
// rest of the boundary: a rendition that stops holds it back at most
// until the leader's next segment, as it does the MPD).
func (w *Writer) publishFiles(r *rendition, final bool) (done bool, err error) {
	rends := []*renditionState{}
	if r != nil {
		rends = append(rends, r.rs)
	}
	if final {
		rends = w.st.Renditions
	}
	for _, rs := range rends {
		if len(rs.Segments) == 0 {
			continue
		}
		b, grown := w.mediaPlaylist(rs, final)
		if grown {
			err = w.opts.Store.(PatchStore).WriteFileChanged(rs.ID+".m3u8", b, nil)
		} else {
			err = w.opts.Store.WriteFile(rs.ID+".m3u8", b)
		}
		if err != nil {
			return false, w.fail(fmt.Errorf("hls: writing %s.m3u8: %w", rs.ID, err))
		}
	}
	if !final && !w.boundaryDone(r) {
		return false, nil
	}
	if err := w.writeState(final); err != nil {
		return false, err
	}
	text, changed, patch := w.mpd(final)
	if patch {
		err = w.opts.Store.(PatchStore).WriteFileChanged(w.MPDName(), text, changed)
	} else {
		err = w.opts.Store.WriteFile(w.MPDName(), text)
	}
	if err != nil {
		return false, w.fail(fmt.Errorf("hls: writing %s: %w", w.MPDName(), err))
	}
	if !final && w.mvSame() {
		return true, nil
	}
	m, mv, err := w.multivariant()
	if err != nil {
		return false, w.fail(err)
	}
	if final || w.mv.changed(mv) {
		// Rendered only when written: most boundaries change no variant.
		b, err := m.Marshal()
		if err != nil {
			return false, w.fail(fmt.Errorf("hls: multivariant playlist: %w", err))
		}
		if err := w.opts.Store.WriteFile(w.opts.Playlist, b); err != nil {
			return false, w.fail(fmt.Errorf("hls: writing %s: %w", w.opts.Playlist, err))
		}
		w.mv = mv
		w.mvAt = w.mvRends(w.mvAt[:0])
	}
	return true, nil
}

// mvRend is what the multivariant playlist is made of, of one rendition:
// its shape, whether it has a segment, its rates.
type mvRend struct {
	of        rendShape
	has       bool
	peak, avg int
}

// mvRends appends each rendition's mvRend to b.
func (w *Writer) mvRends(b []mvRend) []mvRend {
	for _, rs := range w.st.Renditions {
		peak, avg := rates(rs)
		b = append(b, mvRend{of: shapeOf(rs), has: len(rs.Segments) > 0, peak: peak, avg: avg})
	}
	return b
}

// mvSame reports, without building the multivariant playlist, that it
// would not be written: its renditions are those of its last write,
// described the same, and each one's rates are within 5% of what they
// were then, so every variant's (a sum and a maximum of them) is within
// 5% too, inside mvShape.changed's 10%.
func (w *Writer) mvSame() bool {
	if len(w.mvAt) != len(w.st.Renditions) {
		return false
	}
	for i, rs := range w.st.Renditions {
		at := w.mvAt[i]
		if at.of != shapeOf(rs) || at.has != (len(rs.Segments) > 0) {
			return false
		}
		peak, avg := rates(rs)
		if !within5(peak, at.peak) || !within5(avg, at.avg) {
			return false
		}
	}
	return true
}

// within5 reports whether v is within 5% of was.
func within5(v, was int) bool {
	d := v - was
	return d*20 <= was && -d*20 <= was
}

// writeNew writes a file no playlist names yet: in place when the store
// can (NewFileStore).
func (w *Writer) writeNew(name string, data []byte) error {
	if s, ok := w.opts.Store.(NewFileStore); ok {
		return s.WriteNewFile(name, data)
	}
	return w.opts.Store.WriteFile(name, data)
}

// stateEvery is how many boundaries may pass between two writes of the
// package state: a continued package takes the segments the playlists name
// beyond the state from the playlists (adopt), so the state need not
// follow every segment. Each write renders the state and swaps in a file
// as long as the recording (an exchange and its kernel work, as costly as
// a playlist's): every 32 boundaries (about 2 minutes of 4 s segments)
// it is a thirty-second of that per boundary (every 8 it was 5% of what
// packaging cost; docs/hls.md, Cost). A continued package chains the
// start of each segment it takes from a playlist from the EXTINF before
// (10 µs steps), over at most 31 segments.
const stateEvery = 32

// stateSig is what of the state the playlists cannot say: how many
// chapters, renditions and init segments it holds.
type stateSig struct{ chapters, renditions, inits int }

// writeState writes the package state when it is due: when final, when it
// says something the playlists cannot (a rendition, an init segment, a
// chapter it did not hold), and at least every stateEvery boundaries.
func (w *Writer) writeState(final bool) error {
	// Renditions, init segments and chapters are only ever added: their
	// counts tell whether the state holds them all.
	sig := stateSig{chapters: len(w.st.Chapters), renditions: len(w.st.Renditions)}
	for _, rs := range w.st.Renditions {
		sig.inits += len(rs.Inits)
	}
	w.sinceState++
	if !final && sig == w.stateSig && w.sinceState < stateEvery {
		return nil
	}
	st, err := w.st.marshal(w.stateBuf[:0])
	if err != nil {
		return w.fail(fmt.Errorf("hls: state: %w", err))
	}
	w.stateBuf = st
	if err := w.opts.Store.WriteFile(w.stateName(), st); err != nil {
		return w.fail(fmt.Errorf("hls: writing %s: %w", w.stateName(), err))
	}
	w.stateSig, w.sinceState = sig, 0
	return nil
}

// boundaryDone reports whether r's segment completed the boundary: every
// rendition of the run has as many segments, or r is the leader and some
// rendition lags it by two (one that stopped sending, or never sent, must
// not hold the state, the MPD and the multivariant playlist back).
func (w *Writer) boundaryDone(r *rendition) bool {
	n := len(r.rs.Segments)
	least := n
	for _, o := range w.rends {
		if !o.removed {
			least = min(least, len(o.rs.Segments))
		}
	}
	return least >= n || (r == w.leader() && n-least >= 2)
}

// mvShape is what the multivariant playlist says: its variants, and their
// bandwidths.
type mvShape struct {
	variants string
	rates    []int
}

// changed reports whether next differs from what was written: other
// variants, or a bandwidth off by more than 10%. While recording the
// measured rates move a little with every segment; Close writes them
// exactly.
func (m mvShape) changed(next mvShape) bool {
	if m.variants != next.variants || len(m.rates) != len(next.rates) {
		return true
	}
	for i, r := range next.rates {
		if d := r - m.rates[i]; d*10 > m.rates[i] || -d*10 > m.rates[i] {
			return true
		}
	}
	return false
}

// Stats returns the frames written, summed over the renditions.
func (w *Writer) Stats() mux.Stats { return w.detail().Stats }

// detail returns what the Writer did so far (tests read it through
// export_test.go; the API is Stats).
func (w *Writer) detail() counters {
	var c counters
	for _, r := range w.rends {
		if r.isText() {
			c.Frames += r.textFrames
			c.Bytes += r.textBytes
			continue
		}
		s := r.mw.Stats()
		c.Frames += s.Frames
		c.Bytes += s.Bytes
		c.Dropped += s.Dropped
	}
	c.Dropped += w.dropped
	c.Segments = w.segments
	c.Continued = w.started && !w.firstRun
	return c
}

// Close writes every rendition's last segment, then the playlists as a
// finished VOD package (EXT-X-ENDLIST, a static MPD). A second Close does
// nothing.
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	if w.err != nil {
		return w.err
	}
	if !w.started {
		return nil
	}
	// Every rendition's last segment first, then each playlist, the MPD
	// and the state once, final: publishing each last segment on its own
	// wrote every file twice within the close (a segment a playlist does
	// not name yet is cut by a restart, as after any kill).
	w.closing = true
	for _, r := range w.rends {
		if r.removed || r.isText() {
			continue
		}
		if err := r.mw.Close(); err != nil {
			return w.fail(fmt.Errorf("hls: %s: %w", r.rs.ID, err))
		}
		if err := w.takeInit(r); err != nil {
			return err
		}
		if err := w.finishSegment(r, 0, false, true); err != nil {
			return err
		}
	}
	// The subtitles end with the media (or with their last cue).
	end := w.mediaEnd()
	for _, r := range w.rends {
		if r.removed || !r.isText() || !w.joined() {
			continue
		}
		last := end
		for _, c := range r.cues {
			last = max(last, c.End)
		}
		if err := w.finishText(r, max(last, r.textStart+1), false); err != nil {
			return err
		}
	}
	return w.publish(nil, true)
}
