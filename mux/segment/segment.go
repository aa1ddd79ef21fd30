package segment

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/moq-export/moq-export/mux"
)

// Options configure a Muxer.
type Options struct {
	// Duration is the length of an output in media time: output n ends
	// at the first video keyframe (any keyframe without video) at or
	// after (n+1) x Duration from the first frame, as ffmpeg's segment
	// muxer counts, so the lengths do not drift when a keyframe lands a
	// little late. Zero never cuts.
	Duration time.Duration
	// End, when positive, is the media time (from the first frame) at
	// which the run is known to stop (a recording's duration): no output
	// is started when less than half a Duration remains, so the last
	// frames of a run never make a file of their own.
	End time.Duration
	// Next returns the muxer of output n (1, 2, ...; the first output, 0,
	// is given to New). It is called after output n-1 was closed.
	Next func(n int) (mux.Muxer, error)
	// SplitForLateTracks makes a track that the current output refuses
	// with mux.ErrLateTrack (it cannot add tracks after its header) start
	// the next output at the next keyframe that may cut (see Duration);
	// until then that track's frames are dropped and counted in
	// mux.Stats.Dropped. Without it such AddTrack calls fail as the
	// output's do.
	SplitForLateTracks bool
	// Full, when set, is asked at each keyframe that may cut, once the
	// current output holds a frame, whether the output has no room left
	// for the group this keyframe starts (a size limit): true starts the
	// next output at this keyframe.
	Full func(next mux.Frame) bool
	// Logger says when a late track splits the output; nil logs nothing.
	Logger *slog.Logger
}

// Muxer is a mux.Muxer writing a sequence of outputs. Calls come from one
// goroutine.
type Muxer struct {
	cur  mux.Muxer
	opts Options

	tracks   []mux.Track // added and not removed, in the order added
	hasVideo bool        // a video track was added
	n        int         // number of the current output
	// nextStart is the first frame's timestamp of the output being
	// opened, while opening (NextStart).
	nextStart int64
	opening   bool
	origin    int64 // timestamp of the first frame: the targets count from it
	target    int64 // the current output ends at the first cut at or after it (µs after origin)
	started   bool
	err       error        // sticky: closing or opening an output failed
	closed    mux.Stats    // of the outputs already closed
	pending   []mux.Track  // late tracks waiting for the next output
	refused   map[int]bool // tracks no output takes: their frames are dropped
	dropped   int64        // frames of pending and refused tracks
	// split asks for the next output at the next keyframe that may cut
	// (Split); wrote says the current output has a frame.
	split atomic.Bool
	wrote bool
	// newest is the newest timestamp written (µs): where the output
	// stands when a late track comes (the log says it).
	newest int64
}

var _ mux.Muxer = (*Muxer)(nil)

// New returns a Muxer whose first output is first.
func New(first mux.Muxer, opts Options) *Muxer {
	return &Muxer{cur: first, opts: opts}
}

// Outputs returns how many outputs were started.
func (m *Muxer) Outputs() int { return m.n + 1 }

// AddTrack adds t to the current output and to the next ones.
func (m *Muxer) AddTrack(t mux.Track) error {
	if m.err != nil {
		return m.err
	}
	if err := m.cur.AddTrack(t); err != nil {
		if !m.opts.SplitForLateTracks || !errors.Is(err, mux.ErrLateTrack) {
			return err
		}
		m.logf("a late track starts the next file at the next keyframe: this one cannot add it", "track", t.Name, "id", t.ID,
			"written_to", time.Duration(m.newest)*time.Microsecond, "err", err)
		m.pending = append(m.pending, t)
	}
	m.tracks = append(m.tracks, t)
	m.hasVideo = m.hasVideo || t.Kind == mux.Video
	return nil
}

// RemoveTrack removes track id from the current output; later outputs do
// not get it.
func (m *Muxer) RemoveTrack(id int) error {
	if m.err != nil {
		return m.err
	}
	for i, t := range m.tracks {
		if t.ID == id {
			m.tracks = slices.Delete(m.tracks, i, i+1)
			break
		}
	}
	if m.isPending(id) || m.refused[id] {
		m.pending = slices.DeleteFunc(m.pending, func(t mux.Track) bool { return t.ID == id })
		delete(m.refused, id)
		return nil
	}
	return m.cur.RemoveTrack(id)
}

// isPending reports whether track id waits for the next output.
func (m *Muxer) isPending(id int) bool {
	return slices.ContainsFunc(m.pending, func(t mux.Track) bool { return t.ID == id })
}

func (m *Muxer) logf(msg string, args ...any) {
	if m.opts.Logger != nil {
		m.opts.Logger.Warn(msg, args...)
	}
}

// WriteFrame writes f, first starting the next output when f is the
// keyframe that ends the current one.
func (m *Muxer) WriteFrame(f mux.Frame) error {
	if m.err != nil {
		return m.err
	}
	if !m.started {
		m.origin, m.started = f.Timestamp, true
		m.target = m.opts.Duration.Microseconds()
	}
	rel := f.Timestamp - m.origin
	due := m.opts.Duration > 0 && rel+cutSlack >= m.target && !m.atEnd(rel)
	asked := m.wrote && m.split.Load()
	cuts := f.Keyframe && m.cuts(f.TrackID)
	if cuts && !due && !asked && m.wrote && m.opts.Full != nil && m.opts.Full(f) {
		asked = true
		m.split.Store(true)
	}
	if cuts && (due || asked || len(m.pending) > 0) {
		if err := m.rotate(f.Timestamp); err != nil {
			return err
		}
		m.wrote = false
		if asked {
			m.split.Store(false)
		}
		if d := m.opts.Duration.Microseconds(); d > 0 {
			// The next target on the grid after this cut: a cut that came
			// early (Split, a late track) or late (a long GOP) does not
			// shift the grid.
			m.target = ((rel+cutSlack)/d + 1) * d
		}
	}
	if m.refused[f.TrackID] || m.isPending(f.TrackID) {
		// Its output is still to come (or none takes it).
		m.dropped++
		return nil
	}
	m.wrote = true
	m.newest = max(m.newest, f.Timestamp)
	return m.cur.WriteFrame(f)
}

// EndFrame passes where a track's last frame ends (hang's end marker) to
// the current output, when its muxer keeps frame durations
// (mux.FrameEnder).
func (m *Muxer) EndFrame(id int, end int64) error {
	if m.err != nil {
		return m.err
	}
	if m.cur == nil || m.refused[id] || m.isPending(id) {
		return nil
	}
	if fe, ok := m.cur.(mux.FrameEnder); ok {
		return fe.EndFrame(id, end)
	}
	return nil
}

// Split asks for the next output to start at the next keyframe that may
// cut (a video keyframe when there is video), once the current output
// holds a frame. Unlike the other methods it may be called from any
// goroutine.
func (m *Muxer) Split() { m.split.Store(true) }

// cutSlack is how far before a target a keyframe still cuts: timestamps
// in microseconds, rounded from a media clock (30 fps is 33,333.3 µs a
// frame), put the keyframe of a whole second a microsecond or so short of
// it. A millisecond is far below any frame interval.
const cutSlack = 1000

// atEnd reports whether a cut at rel (µs after the first frame) would
// start an output for the last frames of the run (Options.End).
func (m *Muxer) atEnd(rel int64) bool {
	end := m.opts.End.Microseconds()
	return end > 0 && end-rel < m.opts.Duration.Microseconds()/2
}

// cuts reports whether a keyframe of track id may start an output.
func (m *Muxer) cuts(id int) bool {
	if !m.hasVideo {
		return true
	}
	for _, t := range m.tracks {
		if t.ID == id {
			return t.Kind == mux.Video
		}
	}
	return false
}

// rotate closes the current output and opens the next with the same
// tracks.
func (m *Muxer) rotate(ts int64) error {
	m.nextStart, m.opening = ts, true
	defer func() { m.opening = false }()
	if err := m.cur.Close(); err != nil {
		m.err = fmt.Errorf("segment: closing output %d: %w", m.n, err)
		return m.err
	}
	next, err := m.opts.Next(m.n + 1)
	if err != nil {
		m.err = fmt.Errorf("segment: opening output %d: %w", m.n+1, err)
		return m.err
	}
	m.closed = add(m.closed, m.cur.Stats())
	m.cur, m.n = next, m.n+1
	late := m.pending
	m.pending = nil
	kept := m.tracks[:0]
	for _, t := range m.tracks {
		err := next.AddTrack(t)
		if err != nil && slices.ContainsFunc(late, func(l mux.Track) bool { return l.ID == t.ID }) {
			// A new output refuses it too: no output will take it.
			m.logf("late track not recorded: the next file refuses it too", "track", t.Name, "id", t.ID, "err", err)
			if m.refused == nil {
				m.refused = map[int]bool{}
			}
			m.refused[t.ID] = true
			continue
		}
		if err != nil {
			return fmt.Errorf("segment: output %d: %w", m.n, err)
		}
		kept = append(kept, t)
	}
	m.tracks = kept
	return nil
}

// Stats implements mux.Muxer: the sum over every output.
func (m *Muxer) Stats() mux.Stats {
	st := add(m.closed, m.cur.Stats())
	st.Dropped += m.dropped
	return st
}

// Close closes the current output. After a failed rotation the last output
// was closed already and Close returns nil.
func (m *Muxer) Close() error {
	if m.err != nil {
		return nil
	}
	return m.cur.Close()
}

func add(a, b mux.Stats) mux.Stats {
	return mux.Stats{Frames: a.Frames + b.Frames, Bytes: a.Bytes + b.Bytes, Dropped: a.Dropped + b.Dropped}
}

// NextStart returns, while Options.Next opens an output, the timestamp (µs)
// of the frame that output begins with, for a name or date taken from it.
// It reports false at any other time. Next runs on the goroutine that
// calls WriteFrame, as NextStart must.
func (m *Muxer) NextStart() (int64, bool) { return m.nextStart, m.opening }
