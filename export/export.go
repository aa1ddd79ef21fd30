package export

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/jitter"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
)

// Stats is a snapshot of an export's counters.
type Stats struct {
	Tracks          int   // tracks being exported now
	Frames          int64 // frames written to the output (the muxer's mux.Stats)
	Bytes           int64 // payload bytes of those frames (the muxer's mux.Stats)
	Late            int64 // late frames (dropped or passed)
	Dropped         int64 // by the jitter buffer or the muxer
	Skipped         int64 // groups abandoned for newer ones
	Discontinuities int64 // discontinuities passed to the muxer
	// NotExported counts the renditions of the catalog skipped because
	// the output (or this build) cannot take them, each with a warning:
	// subtitles in a container without them, a codec it lacks. The ones
	// the selection leaves out are not counted.
	NotExported int
	MediaTime   time.Duration // media time written since the first frame
	// DataTracks counts the json and binary data tracks the catalog
	// listed: no media, not recorded (nor archived, by -f archive).
	DataTracks int64
}

type trackState struct {
	track    mux.Track
	consumer *model.Consumer
	acct     accounting
	skipped  uint64 // consumer.Skipped() already counted
	ended    bool
	removed  bool // left the catalog: its frames are not read any more
	gated    bool // held by the start gate: not read yet
	hasFirst bool // gated and its track holds a frame
	// filling: a late audio track not read yet while its backfill runs
	// (see startLateFill); filled says the backfill is done.
	filling bool
	filled  atomic.Bool
	// aligning mirrors filling for TrackState (another goroutine).
	aligning atomic.Bool
	// awaitKey: a video track started a new timeline; its next frame is
	// the restart key the audio aligns with (see rejoin.go).
	awaitKey bool
	// check tests a frame's payload against the codec (payloadCheck);
	// skipToKey drops video up to a keyframe after a malformed frame.
	check           func([]byte) error
	skipToKey       bool
	warnedMalformed bool
	// plain: a "utf8" text track, whose cue ends where the next one
	// begins; held is its newest cue, waiting for that (text.go).
	plain bool
	held  *mux.Frame
	// handed is the timestamp of the newest frame of the track the
	// engine handed to the muxer (model.NoTimestamp before any): where
	// Behind measures its written position (behind.go).
	handed atomic.Int64
}

// Export copies one broadcast into one muxer.
type Export struct {
	bc   *model.Broadcast
	m    mux.Muxer
	opts Options
	log  *slog.Logger

	ready   *model.ReadySet
	scratch []*model.Consumer
	// evs holds the run of events readTrack takes of a track at once
	// (made at the first read: an idle export holds none).
	evs      []model.Event
	jit      *jitter.Buffer
	cat      *catalog.Watcher
	catEnded bool
	started  bool
	gate     *startGate // nil when no gate is pending
	gateUsed bool       // the first tracks were gated already
	ctx      context.Context

	// Driving by Go (see park): done receives the outcome, resume is the
	// ready set's wakeup of a parked export, stopCtxWake ends ctx's, timer
	// is the next deadline's.
	done        func(error)
	resume      func()
	stopCtxWake func() bool
	timer       *time.Timer
	// unpaced: the broadcast is written as fast as it is read; the
	// export lingers before it parks (linger).
	unpaced bool

	tracks  map[string]*trackState          // by rendition name
	byCons  map[*model.Consumer]*trackState // the media tracks' consumers
	all     []*trackState                   // every track, in the order added
	byID    []*trackState                   // by mux track ID (nextID counts up); nil: none or forgotten
	leaving []*trackState                   // ended, not yet removed from the muxer
	refused map[string]bool                 // renditions the muxer refused, by name
	// disabled: renditions said once to be disabled (enabled: false);
	// dataNoted: data tracks counted in dataTracks.
	disabled   map[string]bool
	dataNoted  map[string]bool
	dataTracks int64
	nextID     int
	live       int    // tracks not ended
	skipped    uint64 // groups the consumers abandoned, summed

	fills       []lateFill // late or restarted audio tracks being backfilled
	restartKey  restartKey // the newest video keyframe that began a new timeline
	newest      int64      // newest timestamp written
	firstTS     int64      // of the first frame the muxer wrote
	haveFirst   bool
	firstHanded int64 // of the first frame handed to the muxer
	haveHanded  bool
	finished    bool
	timeUp      bool // stopped by MaxDuration: what is buffered is past the end
	muxerClosed bool

	// pollNow is the jitter buffer's wall clock while a poll runs, read
	// at its first use in the poll (jitterNow): a poll pushes up to
	// maxReadTurn frames per track, and a clock read per frame was a
	// twentieth of the engine's CPU on an archive export. havePollNow: it
	// was read in this poll.
	pollNow     time.Time
	havePollNow bool

	statsMu    sync.Mutex
	trackStats []TrackStats // published by syncStats, under statsMu
	// reading are the tracks read, by rendition name, for TrackState;
	// under statsMu.
	reading map[string]*trackState
	stats   Stats
	media   atomic.Int64
}

// New returns an export of bc into m. Nothing happens until Run or Go.
func New(bc *model.Broadcast, m mux.Muxer, opts Options) *Export {
	if opts.Delay == 0 {
		opts.Delay = jitter.DefaultDelay
	}
	if opts.Latency == 0 {
		opts.Latency = max(opts.Delay, 0)
		if opts.MediaTimeOnly && opts.MaxDelay > opts.Latency {
			// A file waits for a group on its way as long as for a
			// lagging track (see Consumer.Waiting and pending).
			opts.Latency = opts.MaxDelay
		}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Export{
		bc: bc, m: m, opts: opts, log: log,
		ready:   model.NewReadySet(),
		byCons:  map[*model.Consumer]*trackState{},
		tracks:  map[string]*trackState{},
		refused: map[string]bool{},
		ctx:     context.Background(),

		disabled:  map[string]bool{},
		dataNoted: map[string]bool{},
		unpaced:   bc.Unpaced(),
	}
	e.jit = jitter.New(jitter.Options{Delay: opts.Delay, MaxDelay: opts.MaxDelay, Late: opts.Late, MediaTimeOnly: opts.MediaTimeOnly, Now: e.jitterNow, Pending: e.pending})
	return e
}

// jitterNow is the jitter buffer's clock: Options.Now, read once per poll.
// The frames one poll reads arrived by the time it began, so they share a
// time; what the buffer measures with it (a track's silence, how long the
// output has been blocked) is a matter of the delay, hundreds of
// milliseconds, against a poll's microseconds.
func (e *Export) jitterNow() time.Time {
	if !e.havePollNow {
		e.pollNow, e.havePollNow = e.opts.Now(), true
	}
	return e.pollNow
}

// pending reports whether track id has data its consumer has not read yet,
// is held by its producer (missed groups are on their way), or waits, for
// less than its latency, at a group that has not come while newer ones
// did (Consumer.Waiting): its next frames are on their way, and the
// jitter buffer does not run the other tracks past them. Under load, a
// group's stream can land a second after the next one's (its goroutine
// not run, a packet dropped from quic-go's full queue and sent again);
// the reader gave up on it at the Delay, and the file lost a GOP of video
// or a run of audio frames that did come.
func (e *Export) pending(id int) bool {
	ts := e.track(id)
	return ts != nil && (ts.consumer.Pending() || ts.consumer.Held() || ts.filling || ts.consumer.Waiting())
}

// track returns the state of the track with mux ID id, or nil.
func (e *Export) track(id int) *trackState {
	if id < 0 || id >= len(e.byID) {
		return nil
	}
	return e.byID[id]
}

// Stats returns the export's counters, from any goroutine.
func (e *Export) Stats() Stats {
	e.statsMu.Lock()
	s := e.stats
	e.statsMu.Unlock()
	s.MediaTime = time.Duration(e.media.Load()) * time.Microsecond
	return s
}
