package ts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"

	"github.com/asticode/go-astits"

	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/internal/muxbase"
)

// Program layout. The PIDs follow the common defaults of ffmpeg and moq-mux.
const (
	pmtPID        = 0x1000
	firstPID      = 0x100
	programNumber = 1
	tsID          = 1
	packetSize    = astits.MpegTsPacketSize
)

// Limits for the start-up wait: while one video track waits for its first
// keyframe, the frames of the video tracks that already have one are held.
const (
	maxPendingBytes = 32 << 20
	maxPendingTicks = 10 * clockRate
)

// ErrBadFrame is wrapped by the error logged for a payload that cannot be
// parsed (truncated NAL units, oversized AAC frames, empty payloads).
// WriteFrame skips such a frame, counts it as dropped (Stats) and returns nil,
// as the FLV and MKV muxers do: the output stays valid and the recording
// goes on.
var ErrBadFrame = errors.New("malformed frame")

// Options configures a Writer. The zero value is ready to use.
type Options struct {
	// KeepTimestamps writes the source timestamps (converted to 90 kHz and
	// wrapped at 33 bits) instead of starting the output near zero.
	KeepTimestamps bool
	// Logger receives debug and warning messages; nil discards them.
	Logger *slog.Logger
}

// counters details what a Writer did with the frames it was given; its
// mux.Stats (Frames and Bytes per codec access unit, Dropped the sum of the
// Dropped* counters and Rejected) is what Writer.Stats returns.
type counters struct {
	mux.Stats
	// Packets is the number of 188-byte TS packets written: the output is
	// Packets*188 bytes.
	Packets int64
	// DroppedAudio counts audio frames dropped because a video track had
	// not yet delivered its first keyframe.
	DroppedAudio int64
	// DroppedVideo counts video frames dropped while their track waited for
	// a keyframe (at start, when the track joined, after a discontinuity).
	DroppedVideo int64
	// DroppedLate counts frames whose timestamp fell before the start of the
	// output.
	DroppedLate int64
	// Rejected counts malformed frames skipped (see ErrBadFrame).
	Rejected int64
}

// Writer is a streaming MPEG-TS muxer implementing mux.Muxer. It writes one
// program; PAT/PMT are sent at the start, before every video keyframe and at
// least every 500 ms of media time. A Writer is not safe for concurrent use.
type Writer struct {
	dst  muxbase.Output // the io.Writer, the bytes written and the sticky error
	opts Options
	log  *slog.Logger

	out []byte        // packets of the current WriteFrame, not yet written
	ts  *astits.Muxer // PSI only: PAT/PMT sections, versions and CRCs
	psi psiCapture    // receives what ts writes

	// tables is the current PAT and PMT packets as astits built them;
	// tablesStale asks for a rebuild after a layout change. Each copy
	// sent gets its continuity_counter from patCC and pmtCC.
	tables       []byte
	tablesStale  bool
	patCC, pmtCC uint8

	tracks  map[int]*track
	order   []*track // tracks in AddTrack order, for stable PCR choice
	nextPID uint16

	started bool
	// audioWait: audio is being dropped, since audioWaitFrom (source
	// ticks), while video waits for its first keyframe.
	audioWait     bool
	audioWaitFrom int64

	// pending holds frames of video tracks that have their first keyframe
	// while another video track is still waiting for one.
	pending      []unit
	pendingBytes int

	// Timeline: out = src - base + offset (in ticks), unless KeepTimestamps.
	base, offset int64

	pcr          *track
	pcrSent      bool
	lastPCR      int64
	pcrDisc      bool // next PCR starts a new time base
	tablesSent   bool
	tablesDue    bool // layout changed: send PAT/PMT before the next PES
	lastTablesAt int64

	pes pesPacket // reused description of the PES being written
	buf []byte    // payload scratch for the unit being written

	stats counters
}

// track is the writer's state for one elementary stream.
type track struct {
	mux.Track
	family string
	video  bool
	pid    uint16
	es     esConfig
	// cc is the continuity_counter of the PID's last packet (15 before
	// the first, so that it starts at 0).
	cc uint8

	// v holds H.264/H.265 state (nil for audio).
	v *videoState

	// gotKey is false while a video track waits for a keyframe.
	gotKey bool
	// disc asks for discontinuity_indicator on the next packet.
	disc bool
	// reserve is the PTS-DTS of the track's first keyframe, in ticks.
	reserve int64
	// lastDTS is the output DTS of the track's last PES; every later PES
	// of the track decodes after it.
	lastDTS int64
	hasDTS  bool
	removed bool
	// unlisted: a video track with no keyframe when the output started,
	// left out of the PMT until its first one (a stream the PMT lists but
	// that carries nothing makes the file undecodable).
	unlisted bool
}

// unit is one prepared PES: timestamps in source ticks, Annex B / ADTS /
// Opus AU payload ready to packetize.
type unit struct {
	t        *track
	pts, dts int64
	key      bool
	data     []byte
	in       int // payload bytes of the frame as WriteFrame received it
}

// NewWriter returns a Writer that writes MPEG-TS to w.
func NewWriter(w io.Writer, opts Options) *Writer {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	wr := &Writer{
		dst:     muxbase.NewOutput(w, "ts"),
		opts:    opts,
		log:     log,
		tracks:  map[int]*track{},
		nextPID: firstPID,
		patCC:   15,
		pmtCC:   15,
	}
	wr.ts = astits.NewMuxer(context.Background(), &wr.psi,
		astits.WithTransportStreamID(tsID),
		astits.WithPMTPID(pmtPID),
		// Only WriteTables is used; the period does not matter.
		astits.MuxerOptTablesRetransmitPeriod(math.MaxInt),
	)
	return wr
}

var _ mux.Muxer = (*Writer)(nil)

// Stats implements mux.Muxer.
func (w *Writer) Stats() mux.Stats {
	s := w.stats.Stats
	s.Dropped = w.stats.DroppedAudio + w.stats.DroppedVideo + w.stats.DroppedLate + w.stats.Rejected
	return s
}

// detail returns the detailed counters so far (tests read them through
// export_test.go; the API is Stats).
func (w *Writer) detail() counters {
	c := w.stats
	c.Stats = w.Stats()
	return c
}

// Caps is what MPEG-TS carries: the tracks Supports accepts, any number of
// each kind.
var Caps = mux.Caps{Container: "ts", Supports: Supports}

// Supports returns nil when MPEG-TS can carry t (H.264, H.265, AAC, Opus,
// MP3, MP2, AC-3, E-AC-3 with a usable configuration), else why not: codecs
// it cannot carry get a *mux.UnsupportedCodecError suggesting mkv.
// AddTrack applies the same check.
func Supports(t mux.Track) error {
	_, err := checkedTrack(t)
	return err
}

// checkedTrack returns the writer's state for t (without a PID), or why
// MPEG-TS cannot carry t.
func checkedTrack(mt mux.Track) (*track, error) {
	family := mux.CodecFamily(mt.Codec)
	es, err := configureES(mt, family)
	if err != nil {
		return nil, err
	}
	if k := mux.CodecKind(family); k != mt.Kind {
		return nil, fmt.Errorf("ts: track %d: codec %q is %v but the track says %v", mt.ID, mt.Codec, k, mt.Kind)
	}
	t := &track{Track: mt, family: family, es: es, cc: 15}
	t.video = es.streamID == streamIDVideo
	if t.video {
		v, err := newVideoState(mt, family)
		if err != nil {
			return nil, err
		}
		t.v = v
	}
	return t, nil
}

// AddTrack adds an elementary stream. Before the first frame it becomes part
// of the initial PMT; later it is announced with a new PMT version. Codecs
// MPEG-TS cannot carry (AV1, VP8, VP9, FLAC, PCM) fail with a
// *mux.UnsupportedCodecError suggesting mkv.
func (w *Writer) AddTrack(mt mux.Track) error {
	if w.dst.Closed {
		return mux.ErrClosed
	}
	if _, ok := w.tracks[mt.ID]; ok {
		return fmt.Errorf("ts: track %d added twice", mt.ID)
	}
	t, err := checkedTrack(mt)
	if err != nil {
		return err
	}
	if w.nextPID >= pmtPID {
		return fmt.Errorf("ts: track %d: out of PIDs", mt.ID)
	}
	t.pid = w.nextPID
	es := t.es
	if err := w.ts.AddElementaryStream(astits.PMTElementaryStream{
		ElementaryPID:               t.pid,
		StreamType:                  es.streamType,
		ElementaryStreamDescriptors: es.descriptors,
	}); err != nil {
		return fmt.Errorf("ts: track %d: %w", mt.ID, err)
	}
	w.nextPID++
	w.tracks[mt.ID] = t
	w.order = append(w.order, t)
	w.tablesDue, w.tablesStale = true, true
	if w.pcr == nil || (t.video && !w.pcr.video && !w.started) {
		w.setPCR(t)
	}
	w.log.Debug("ts: track added", "track", mt.ID, "codec", mt.Codec, "pid", t.pid, "started", w.started)
	return nil
}

// RemoveTrack drops a track; the next PAT/PMT no longer lists it.
func (w *Writer) RemoveTrack(id int) error {
	if w.dst.Closed {
		return mux.ErrClosed
	}
	t, ok := w.tracks[id]
	if !ok {
		return w.dst.UnknownTrack("remove", id)
	}
	delete(w.tracks, id)
	t.removed = true
	for i, o := range w.order {
		if o == t {
			w.order = slices.Delete(w.order, i, i+1)
			break
		}
	}
	if !t.unlisted {
		if err := w.ts.RemoveElementaryStream(t.pid); err != nil {
			return fmt.Errorf("ts: remove track %d: %w", id, err)
		}
	}
	// Frames of the track still waiting for the start go with it.
	kept := w.pending[:0]
	for _, u := range w.pending {
		if u.t != t {
			kept = append(kept, u)
		} else {
			w.pendingBytes -= len(u.data)
		}
	}
	clear(w.pending[len(kept):])
	w.pending = kept
	w.tablesDue, w.tablesStale = true, true
	if w.pcr == t {
		w.pcr = nil
		if n := w.pickPCR(); n != nil {
			w.setPCR(n)
		}
	}
	w.log.Debug("ts: track removed", "track", id, "pid", t.pid)
	if !w.started && len(w.pending) > 0 && w.allVideoKeyed() {
		return w.start()
	}
	return nil
}

// discontinuity marks a break in the timeline of t (mux.Frame.Discontinuity):
// the next packet of the track carries discontinuity_indicator, a video
// track waits for its next keyframe, and when the track carries the PCR the
// next PCR starts a new time base.
func (w *Writer) discontinuity(t *track) {
	t.disc = true
	t.hasDTS = false
	if t.video {
		t.gotKey = false
		t.v.reset()
	}
	if t == w.pcr {
		w.pcrDisc = true
	}
}

// WriteFrame writes one frame. Nothing is written until every video track
// has delivered a keyframe, or for at most the start bound (10 s of media,
// 32 MiB held); audio before that is dropped (see Stats). A
// malformed frame is skipped with a warning (see ErrBadFrame).
func (w *Writer) WriteFrame(f mux.Frame) error {
	if err := w.dst.Usable(); err != nil {
		return err
	}
	t, ok := w.tracks[f.TrackID]
	if !ok {
		return w.dst.UnknownTrack("frame for", f.TrackID)
	}
	if f.Discontinuity {
		w.discontinuity(t)
	}
	force := false
	if !t.video && !w.started && w.hasVideo() {
		// Audio before the first video keyframe is dropped, for at most
		// the start bound: a video track whose frames never come (its
		// subscription refused or late) must not cost the whole file.
		pts := ticksFromMicros(f.Timestamp)
		if !w.audioWait {
			w.audioWait, w.audioWaitFrom = true, pts
		}
		if pts-w.audioWaitFrom <= maxPendingTicks {
			w.stats.DroppedAudio++
			return nil
		}
		force = true
	}
	if t.video && !t.gotKey && !f.Keyframe {
		// Still read it: parameter sets sent on their own before the
		// keyframe must not be lost.
		t.v.absorb(f.Payload)
		w.stats.DroppedVideo++
		return nil
	}
	u, err := w.prepare(t, f)
	switch {
	case errors.Is(err, errNeedParamSets):
		w.stats.DroppedVideo++
		w.log.Debug("ts: keyframe before parameter sets dropped", "track", t.ID)
		return nil
	case err != nil:
		w.stats.Rejected++
		w.log.Warn("ts: malformed frame skipped", "track", t.ID, "ts", f.Timestamp, "err", err)
		return nil
	case len(u.data) == 0:
		return nil // parameter sets only: kept for the next keyframe
	}
	if t.video && !t.gotKey {
		if !u.key {
			w.stats.DroppedVideo++
			return nil
		}
		t.gotKey = true
		if !w.started {
			t.reserve = max(t.reserve, u.pts-u.dts)
		}
		if t.unlisted {
			if err := w.relist(t); err != nil {
				return err
			}
		}
		if w.started && (w.pcr == nil || !w.pcr.video) {
			// Video joined an audio-only program: it carries the PCR.
			w.setPCR(t)
		}
	}

	if !w.started {
		// Own the payload: it lives in the reused scratch buffer.
		u.data = append([]byte(nil), u.data...)
		w.pending = append(w.pending, u)
		w.pendingBytes += len(u.data)
		if w.allVideoKeyed() {
			return w.start()
		}
		if force || w.pendingBytes > maxPendingBytes || u.pts-w.pending[0].pts > maxPendingTicks {
			w.log.Warn("ts: starting without video tracks that sent no keyframe",
				"held_bytes", w.pendingBytes)
			return w.start()
		}
		return nil
	}
	if err := w.writeUnit(u); err != nil {
		return err
	}
	return w.flush()
}

// Close writes what is still held and flushes. MPEG-TS has no trailer, so
// the output is complete after every WriteFrame; Close does not close the
// underlying writer.
func (w *Writer) Close() error {
	if w.dst.Closed {
		return nil
	}
	var err error
	if !w.started && len(w.pending) > 0 && w.dst.Err == nil {
		err = w.start()
	}
	w.dst.Closed = true
	if err == nil {
		err = w.dst.Err
	}
	return err
}

// prepare turns a frame into a PES unit, in w.buf.
func (w *Writer) prepare(t *track, f mux.Frame) (unit, error) {
	if len(f.Payload) == 0 {
		return unit{}, fmt.Errorf("empty payload: %w", ErrBadFrame)
	}
	pts := ticksFromMicros(f.Timestamp)
	u := unit{t: t, pts: pts, dts: pts, key: true, in: len(f.Payload)}
	var err error
	buf := w.buf[:0]
	switch {
	case t.video:
		buf, u.key, u.pts, u.dts, err = t.v.accessUnit(buf, f)
	case t.es.adts != nil:
		n := len(f.Payload) + len(t.es.adts)
		if n > maxADTSFrame {
			return unit{}, fmt.Errorf("AAC frame of %d bytes does not fit ADTS: %w", len(f.Payload), ErrBadFrame)
		}
		buf = append(buf, t.es.adts...)
		putADTSLength(buf, n)
		buf = append(buf, f.Payload...)
	case t.es.opus:
		buf, err = appendOpusAU(buf, f.Payload)
	default:
		buf = append(buf, f.Payload...)
	}
	w.buf = buf
	if err != nil {
		return unit{}, err
	}
	u.data = buf
	return u, nil
}

// hasVideo reports whether any video track is present.
func (w *Writer) hasVideo() bool {
	for _, t := range w.order {
		if t.video {
			return true
		}
	}
	return false
}

// unlist leaves video track t, which has no keyframe, out of the PMT (and
// the PCR) until relist.
func (w *Writer) unlist(t *track) error {
	if err := w.ts.RemoveElementaryStream(t.pid); err != nil {
		return fmt.Errorf("ts: track %d: %w", t.ID, err)
	}
	t.unlisted = true
	w.tablesDue, w.tablesStale = true, true
	w.log.Warn("ts: track left out of the program until its first keyframe: none came before the output started", "track", t.ID, "codec", t.Codec)
	if w.pcr == t {
		w.pcr = nil
		if n := w.pickPCR(); n != nil {
			w.setPCR(n)
		}
	}
	return nil
}

// relist puts unlisted track t back in the PMT at its first keyframe.
func (w *Writer) relist(t *track) error {
	if err := w.ts.AddElementaryStream(astits.PMTElementaryStream{
		ElementaryPID:               t.pid,
		StreamType:                  t.es.streamType,
		ElementaryStreamDescriptors: t.es.descriptors,
	}); err != nil {
		return w.dst.Fail(fmt.Errorf("ts: track %d: %w", t.ID, err))
	}
	t.unlisted = false
	w.tablesDue, w.tablesStale = true, true
	w.log.Info("ts: track joins the program at its first keyframe", "track", t.ID, "codec", t.Codec)
	return nil
}

// allVideoKeyed reports whether every video track has its first keyframe.
func (w *Writer) allVideoKeyed() bool {
	for _, t := range w.order {
		if t.video && !t.gotKey {
			return false
		}
	}
	return true
}

// pickPCR chooses the PCR track: the first video track, else the first
// audio track.
func (w *Writer) pickPCR() *track {
	var first *track
	for _, t := range w.order {
		switch {
		case t.unlisted:
		case t.video:
			return t
		case first == nil:
			first = t
		}
	}
	return first
}

func (w *Writer) setPCR(t *track) {
	w.pcr = t
	w.ts.SetPCRPID(t.pid)
	w.tablesDue, w.tablesStale = true, true
}

// start fixes the timeline and writes the held frames. The video tracks
// without a keyframe yet (the start bound passed, or Close came) stay out
// of the PMT until their first one.
func (w *Writer) start() error {
	w.started = true
	for _, t := range w.order {
		if t.video && !t.gotKey {
			if err := w.unlist(t); err != nil {
				return err
			}
		}
	}
	pending := w.pending
	w.pending, w.pendingBytes = nil, 0
	if len(pending) == 0 {
		return nil
	}
	if !w.opts.KeepTimestamps {
		// The earliest frame goes out at offset, which is the largest DTS
		// reserve so that no DTS is negative.
		w.base = pending[0].pts
		for _, u := range pending {
			w.base = min(w.base, u.pts)
		}
		for _, t := range w.order {
			w.offset = max(w.offset, t.reserve)
		}
	}
	// Held frames stay in arrival order, the interleaving the engine chose.
	for _, u := range pending {
		if u.t.removed {
			continue
		}
		if err := w.writeUnit(u); err != nil {
			return err
		}
	}
	return w.flush()
}

// writeUnit packetizes one PES with the tables and PCRs due before it.
func (w *Writer) writeUnit(u unit) error {
	t := u.t
	pts, dts := u.pts, u.dts
	if !w.opts.KeepTimestamps {
		pts += w.offset - w.base
		dts += w.offset - w.base
		if dts < 0 {
			w.stats.DroppedLate++
			w.log.Debug("ts: frame before the start of the output dropped", "track", t.ID, "pts", pts)
			return nil
		}
	}

	// PAT/PMT before keyframes, after layout changes, and periodically.
	// On a random access point of the PCR PID they follow the PCR-only
	// packets, right before the PES (where astits placed them when it
	// wrote the PES packets too).
	tablesDue := w.tablesDue || !w.tablesSent || (t.video && u.key) ||
		pts-w.lastTablesAt >= tableInterval || pts < w.lastTablesAt
	rai := (t.video && u.key) || (!t.video && tablesDue)
	late := rai && t == w.pcr
	if tablesDue && !late {
		if err := w.writeTables(); err != nil {
			return err
		}
	}
	if tablesDue {
		w.tablesSent, w.tablesDue, w.lastTablesAt = true, false, pts
	}

	// PCR: derived from the smallest DTS that can still follow.
	t.lastDTS, t.hasDTS = dts, true
	pcrHere, err := w.schedulePCR(w.decodeFloor(), t)
	if err != nil {
		return err
	}
	if tablesDue && late {
		if err := w.writeTables(); err != nil {
			return err
		}
	}

	p := &w.pes
	*p = pesPacket{
		pid:      t.pid,
		streamID: t.es.streamID,
		pts:      wrap(pts),
		dts:      wrap(dts),
		hasDTS:   dts != pts,
		data:     u.data,
	}
	if rai {
		p.afFlags |= afRandomAccess
	}
	if t.disc {
		p.afFlags |= afDiscontinuity
		t.disc = false
	}
	if pcrHere {
		p.afFlags |= afPCR
		p.pcr = wrap(w.lastPCR)
	}
	w.out = appendPES(w.out, p, &t.cc)
	w.stats.Frames++
	w.stats.Bytes += int64(u.in)
	return nil
}

// stallWindow is how far a track's last DTS may lag the newest one before
// the track counts as stalled and stops holding the PCR back.
const stallWindow = clockRate

// decodeFloor returns the smallest DTS that a later PES can still carry, as
// far as the tracks' histories tell: DTS only grow within a track, so it is
// the smallest last DTS of the tracks that are not stalled.
func (w *Writer) decodeFloor() int64 {
	newest, found := int64(0), false
	for _, t := range w.order {
		if t.hasDTS && (!found || t.lastDTS > newest) {
			newest, found = t.lastDTS, true
		}
	}
	floor := newest
	for _, t := range w.order {
		if t.hasDTS && t.lastDTS >= newest-stallWindow {
			floor = min(floor, t.lastDTS)
		}
	}
	return floor
}

// schedulePCR writes the PCR-only packets due before a PES, given the
// smallest DTS that may still follow (clock), and reports whether the PES itself (on
// track t) should carry the next PCR, already stored in w.lastPCR.
func (w *Writer) schedulePCR(clock int64, t *track) (bool, error) {
	if w.pcr == nil {
		return false, nil
	}
	target := max(clock-pcrLead, 0)
	if w.opts.KeepTimestamps {
		target = clock - pcrLead
	}
	onPCR := t == w.pcr
	switch {
	case !w.pcrSent || w.pcrDisc:
		// First PCR, or a new time base: no back-fill.
		disc := w.pcrDisc && w.pcrSent
		w.pcrSent, w.pcrDisc = true, false
		w.lastPCR = target
		if onPCR {
			t.disc = t.disc || disc
			return true, nil
		}
		return false, w.writePCRPacket(target, disc)
	case target <= w.lastPCR:
		return false, nil
	}
	// Back-fill a gap in the media so that PCRs stay within pcrMaxGap.
	for n := 0; target-w.lastPCR > pcrMaxGap && n < pcrBackfill; n++ {
		if err := w.writePCRPacket(w.lastPCR+pcrInterval, false); err != nil {
			return false, err
		}
	}
	if target-w.lastPCR < pcrInterval && !(onPCR && t.video) {
		return false, nil
	}
	if onPCR {
		w.lastPCR = target
		return true, nil
	}
	return false, w.writePCRPacket(target, false)
}

// writePCRPacket writes an adaptation-field-only packet carrying a PCR on
// the PCR PID.
func (w *Writer) writePCRPacket(pcr int64, disc bool) error {
	w.lastPCR = pcr
	w.out = appendPCRPacket(w.out, w.pcr.pid, w.pcr.cc, wrap(pcr), disc)
	return nil
}

// writeTables writes the PAT and the PMT. astits builds them again only
// after a layout change (AddElementaryStream, RemoveElementaryStream,
// SetPCRPID bump the versions); otherwise the last ones are repeated with
// the next continuity counters.
func (w *Writer) writeTables() error {
	if w.tablesStale || len(w.tables) == 0 {
		w.psi.b = w.psi.b[:0]
		if _, err := w.ts.WriteTables(); err != nil {
			return w.dst.Fail(fmt.Errorf("ts: write: %w", err))
		}
		w.tables = append(w.tables[:0], w.psi.b...)
		w.tablesStale = false
	}
	n := len(w.out)
	w.out = append(w.out, w.tables...)
	for i := n; i+packetSize <= len(w.out); i += packetSize {
		h := w.out[i : i+4]
		cc := &w.pmtCC
		if pid := uint16(h[1]&0x1F)<<8 | uint16(h[2]); pid == astits.PIDPAT {
			cc = &w.patCC
		}
		*cc = (*cc + 1) & 0x0F
		h[3] = h[3]&0xF0 | *cc
	}
	return nil
}

// flush hands the packets written so far to the output.
func (w *Writer) flush() error {
	if w.dst.Err != nil {
		return w.dst.Err
	}
	b := w.out
	w.out = w.out[:0]
	if len(b) == 0 {
		return nil
	}
	pos := w.dst.Pos
	err := w.dst.Write(b)
	w.stats.Packets += (w.dst.Pos - pos) / packetSize
	return err
}

// psiCapture receives the PAT and PMT packets astits writes.
type psiCapture struct{ b []byte }

func (p *psiCapture) Write(b []byte) (int, error) {
	p.b = append(p.b, b...)
	return len(b), nil
}
