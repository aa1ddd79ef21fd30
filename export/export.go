package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/jitter"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
)

// Options configures an Export. The zero value exports every rendition the
// muxer accepts with a 500 ms jitter delay.
type Options struct {
	// CatalogTrack is the catalog's track name; empty means
	// catalog.TrackFor the broadcast's name.
	CatalogTrack string
	// Delay bounds how long a lagging track holds the output (see package
	// jitter). Zero means jitter.DefaultDelay.
	Delay time.Duration
	// MaxDelay is how far late frames may grow Delay, so that a track
	// that keeps lagging the others is waited for instead of dropped from
	// then on (jitter.Options.MaxDelay). Zero: Delay stays fixed.
	MaxDelay time.Duration
	// Latency is how far a newer group must be ahead before a track gives up
	// on a stalled group (see model.Track.Subscribe). Zero means Delay.
	Latency time.Duration
	// Late is the policy for frames that arrive after later ones left.
	Late jitter.LatePolicy
	// MediaTimeOnly makes the Delay bound count media time only: when
	// nothing flows at all (a network outage), the output waits for every
	// track instead of moving on after Delay of wall time, so the missed
	// groups a reconnect fetches are not late. For files (see
	// jitter.Options.MediaTimeOnly).
	MediaTimeOnly bool
	// Video and Audio name the renditions to export; nil: all the
	// container carries, empty: none (see Select). A named rendition it
	// cannot carry is an error.
	Video, Audio []string
	// Caps is what the muxer's container carries (flv.Caps, ...); zero
	// leaves it to AddTrack.
	Caps mux.Caps
	// MaxDuration stops the export after this much media time; 0 means no
	// limit.
	MaxDuration time.Duration
	// Resolve returns the broadcast a rendition's "broadcast" reference
	// names; nil skips such renditions with a warning.
	Resolve func(ref string) (*model.Broadcast, error)
	// Logger receives warnings; nil means slog.Default().
	Logger *slog.Logger
	// Now is the wall clock; nil means time.Now.
	Now func() time.Time
}

// Stats is a snapshot of an export's counters.
type Stats struct {
	Tracks          int           // tracks being exported now
	Frames          int64         // frames written to the output (the muxer's mux.Stats)
	Bytes           int64         // payload bytes of those frames (the muxer's mux.Stats)
	Late            int64         // late frames (dropped or passed)
	Dropped         int64         // by the jitter buffer or the muxer
	Skipped         int64         // groups abandoned for newer ones
	Discontinuities int64         // discontinuities passed to the muxer
	MediaTime       time.Duration // media time written since the first frame
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
}

// startGate holds the first tracks of an export unread until each holds a
// frame (or the deadline passed), so that the audio can be backfilled to
// the video's first keyframe before any consumer starts.
type startGate struct {
	tracks   []*trackState
	waiting  int // gated tracks without a frame
	deadline time.Time
	// backfilling is set once the backfills run (in goroutines, so no poll
	// blocks); pending counts those still running, cancel stops them.
	backfilling bool
	pending     atomic.Int32
	cancel      context.CancelFunc
}

// lateFill is the backfill of a late track (see startLateFill).
type lateFill struct {
	ts     *trackState
	cancel context.CancelFunc
}

// Export copies one broadcast into one muxer.
type Export struct {
	bc   *model.Broadcast
	m    mux.Muxer
	opts Options
	log  *slog.Logger

	ready    *model.ReadySet
	scratch  []*model.Consumer
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

	tracks  map[string]*trackState          // by rendition name
	byCons  map[*model.Consumer]*trackState // the media tracks' consumers
	all     []*trackState                   // every track, in the order added
	byID    []*trackState                   // by mux track ID (nextID counts up); nil: none or forgotten
	leaving []*trackState                   // ended, not yet removed from the muxer
	refused map[string]bool                 // renditions the muxer refused, by name
	nextID  int
	live    int    // tracks not ended
	skipped uint64 // groups the consumers abandoned, summed

	fills       []lateFill // late audio tracks being backfilled
	newest      int64      // newest timestamp written
	firstTS     int64
	haveFirst   bool
	finished    bool
	timeUp      bool // stopped by MaxDuration: what is buffered is past the end
	muxerClosed bool

	statsMu    sync.Mutex
	trackStats []TrackStats // published by syncStats, under statsMu
	stats      Stats
	media      atomic.Int64
}

// New returns an export of bc into m. Nothing happens until Run or Poll.
func New(bc *model.Broadcast, m mux.Muxer, opts Options) *Export {
	if opts.CatalogTrack == "" {
		opts.CatalogTrack = catalog.TrackFor(bc.Name())
	}
	if opts.Delay == 0 {
		opts.Delay = jitter.DefaultDelay
	}
	if opts.Latency == 0 {
		opts.Latency = max(opts.Delay, 0)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	e := &Export{
		bc: bc, m: m, opts: opts, log: log,
		ready:   model.NewReadySet(),
		byCons:  map[*model.Consumer]*trackState{},
		tracks:  map[string]*trackState{},
		refused: map[string]bool{},
		ctx:     context.Background(),
	}
	e.jit = jitter.New(jitter.Options{Delay: opts.Delay, MaxDelay: opts.MaxDelay, Late: opts.Late, MediaTimeOnly: opts.MediaTimeOnly, Now: opts.Now, Pending: e.pending})
	return e
}

// pending reports whether track id has data its consumer has not read yet,
// or is held by its producer (missed groups are on their way).
func (e *Export) pending(id int) bool {
	ts := e.track(id)
	return ts != nil && (ts.consumer.Pending() || ts.consumer.Held() || ts.filling)
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

// Done reports whether the broadcast ended or MaxDuration was reached.
func (e *Export) Done() bool { return e.finished }

// start subscribes to the catalog track.
func (e *Export) start() error {
	if e.started {
		return nil
	}
	w, err := catalog.Watch(e.bc, catalog.WatchOptions{Track: e.opts.CatalogTrack, Ready: e.ready, Logger: e.log})
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	e.started, e.cat = true, w
	return nil
}

// Poll does whatever work is ready without blocking: it reads the tracks
// that received something, and writes the frames the jitter buffer releases.
// A poll that nothing woke returns at once. Poll never waits: the audio
// backfills of the start gate (see the package doc) run in the background.
// Such a caller ends the export with Close.
func (e *Export) Poll() error {
	if e.started && e.ready.Empty() && e.gate == nil && len(e.fills) == 0 && !e.jitterDue() {
		return nil
	}
	return e.poll()
}

// gateDue reports whether the start gate's deadline passed.
func (e *Export) gateDue() bool {
	return e.gate != nil && !e.opts.Now().Before(e.gate.deadline)
}

func (e *Export) jitterDue() bool {
	d, ok := e.jit.Deadline()
	return ok && !e.opts.Now().Before(d)
}

func (e *Export) poll() error {
	if err := e.start(); err != nil {
		return err
	}
	e.scratch = e.ready.Take(e.scratch[:0])
	for _, c := range e.scratch {
		ts, ok := e.byCons[c]
		if !ok { // the catalog's (or a track forgotten since: costs nothing)
			if err := e.readCatalog(); err != nil {
				return err
			}
			continue
		}
		if ts.gated {
			e.gateCheck(ts)
			continue
		}
		if ts.filling {
			continue
		}
		if err := e.readTrack(ts); err != nil {
			return err
		}
	}
	clear(e.scratch)
	if len(e.fills) > 0 {
		if err := e.endLateFills(); err != nil {
			return err
		}
	}
	if g := e.gate; g != nil && !g.backfilling && (g.waiting == 0 || e.gateDue()) {
		e.startBackfills()
	}
	if g := e.gate; g != nil && g.backfilling && (g.pending.Load() == 0 || e.gateDue()) {
		if err := e.openGate(); err != nil {
			return err
		}
	}
	for !e.finished {
		it, ok := e.jit.Pop()
		if !ok {
			break
		}
		if err := e.write(it); err != nil {
			return err
		}
	}
	if len(e.leaving) > 0 {
		if err := e.removeDrained(); err != nil {
			return err
		}
	}
	e.syncStats()
	if e.catEnded && e.live == 0 {
		e.finished = true
	}
	return nil
}

// removeDrained removes from the muxer, and forgets, the tracks that ended
// once the jitter buffer holds none of their frames. A track that left the
// catalog goes at once; one that ended by itself stays while the muxer has
// written nothing (it may still hold the track's first frames, as the MKV
// header and the TS keyframe waits do, and removing would drop them) and
// when the whole broadcast ended (Close finalizes it with the others).
func (e *Export) removeDrained() error {
	ending := e.catEnded && e.live == 0
	started := !ending && e.m.Stats().Frames > 0
	keep := e.leaving[:0]
	for _, ts := range e.leaving {
		if e.jit.Holds(ts.track.ID) || !ts.removed && !started {
			keep = append(keep, ts)
			continue
		}
		if err := e.m.RemoveTrack(ts.track.ID); err != nil {
			return fmt.Errorf("export: removing track %q: %w", ts.track.Name, err)
		}
		e.forget(ts)
	}
	clear(e.leaving[len(keep):])
	e.leaving = keep
	return nil
}

// forget drops the engine's state of a track removed from the muxer.
func (e *Export) forget(ts *trackState) {
	delete(e.byCons, ts.consumer)
	e.byID[ts.track.ID] = nil
	if e.tracks[ts.track.Name] == ts {
		delete(e.tracks, ts.track.Name)
	}
	e.all = slices.DeleteFunc(e.all, func(o *trackState) bool { return o == ts })
}

// syncStats publishes the counters for Stats, sampling the muxer's. It
// costs the same whatever the number of tracks: the per-track counters are
// summed as tracks are read.
func (e *Export) syncStats() {
	js := e.jit.Stats()
	ms := e.m.Stats()
	e.statsMu.Lock()
	e.stats.Frames, e.stats.Bytes = ms.Frames, ms.Bytes
	e.stats.Late, e.stats.Dropped = js.Late, js.Dropped+ms.Dropped
	e.stats.Tracks, e.stats.Skipped = e.live, int64(e.skipped)
	e.syncTrackStats()
	e.statsMu.Unlock()
}

func (e *Export) readTrack(ts *trackState) error {
	defer func() {
		n := ts.consumer.Skipped()
		e.skipped += n - ts.skipped
		ts.skipped = n
	}()
	for {
		ev, ok := ts.consumer.Next()
		if !ok {
			return nil
		}
		switch ev.Kind {
		case model.EventFrame:
			if ts.removed {
				continue
			}
			err := e.pushFrame(ts, mux.Frame{TrackID: ts.track.ID, Timestamp: ev.Frame.Timestamp, Keyframe: ev.Keyframe, Payload: ev.Frame.Payload})
			if err != nil {
				return fmt.Errorf("export: %w", err)
			}
		case model.EventDiscontinuity:
			ts.acct.gap()
			e.jit.PushDiscontinuity(ts.track.ID)
		case model.EventEnd:
			if ev.Err != nil {
				e.log.Warn("track ended with an error", "track", ts.track.Name, "err", ev.Err)
			}
			e.endTrack(ts)
			return nil
		}
	}
}

func (e *Export) endTrack(ts *trackState) {
	if ts.ended {
		return
	}
	ts.ended = true
	if ts.gated && !ts.hasFirst {
		ts.hasFirst = true
		e.gate.waiting--
	}
	e.live--
	e.jit.EndTrack(ts.track.ID)
	ts.consumer.Close()
	e.leaving = append(e.leaving, ts)
}

func (e *Export) readCatalog() error {
	for !e.catEnded {
		cat, err := e.cat.Poll()
		switch {
		case cat != nil:
			if err := e.applyCatalog(cat); err != nil {
				return err
			}
			continue
		case err == nil:
			return nil
		case !errors.Is(err, io.EOF):
			e.log.Warn("catalog track ended with an error", "err", err)
		}
		e.catEnded = true
	}
	return nil
}

// applyCatalog adds the renditions that appeared and ends those that left.
func (e *Export) applyCatalog(cat *catalog.Catalog) error {
	seen := map[string]bool{}
	counts := map[mux.Kind]int{}
	for _, ts := range e.tracks {
		if !ts.ended {
			counts[ts.track.Kind]++
		}
	}
	var added []*trackState
	for _, r := range cat.Renditions() {
		seen[r.Name] = true
		ts, err := e.addRendition(r, counts)
		if err != nil {
			return err
		}
		if ts != nil {
			added = append(added, ts)
		}
	}
	late := e.gateUsed && e.gate == nil
	if len(added) > 0 && !e.gateUsed {
		e.gateUsed = true
		if e.opts.Delay > 0 {
			e.gate = &startGate{tracks: added, waiting: len(added), deadline: e.opts.Now().Add(e.opts.Delay)}
			for _, ts := range added {
				ts.gated = true
				e.gateCheck(ts)
			}
		}
	}
	if late {
		for _, ts := range added {
			e.startLateFill(ts)
		}
	}
	for name, ts := range e.tracks {
		if !seen[name] && !ts.ended {
			e.log.Info("rendition left the catalog", "track", name)
			ts.removed = true
			e.endTrack(ts)
		}
	}
	for _, want := range [][]string{e.opts.Video, e.opts.Audio} {
		for _, name := range want {
			if !seen[name] {
				e.log.Warn("requested rendition is not in the catalog (yet)", "track", name)
			}
		}
	}
	return nil
}

// addRendition adds rendition r and returns its track state, or nil when it
// was not added.
func (e *Export) addRendition(r catalog.Rendition, counts map[mux.Kind]int) (*trackState, error) {
	if existing, ok := e.tracks[r.Name]; ok && !existing.ended {
		if t := TrackFromRendition(r, existing.track.ID); !sameRendition(t, existing.track) {
			e.log.Warn("rendition changed its codec configuration; the container keeps the first one", "track", r.Name, "codec", t.Codec)
		}
		return nil, nil
	}
	if e.refused[r.Name] {
		return nil, nil
	}
	explicit := named(r, e.opts)
	skip := func(msg string, args ...any) {
		e.refused[r.Name] = true
		e.log.Warn(msg, append([]any{"track", r.Name}, args...)...)
	}
	if err := Select(r, e.opts, counts); err != nil {
		switch {
		case errors.Is(err, ErrNotSelected):
			e.refused[r.Name] = true
		case explicit:
			return nil, fmt.Errorf("export: %w", err)
		default:
			skip("rendition not exported", "err", err)
		}
		return nil, nil
	}
	c := r.Common()
	bc := e.bc
	if c.Broadcast != nil && *c.Broadcast != "" {
		if e.opts.Resolve == nil {
			skip("rendition skipped: it lives in another broadcast", "broadcast", *c.Broadcast)
			return nil, nil
		}
		var err error
		if bc, err = e.opts.Resolve(*c.Broadcast); err != nil {
			skip("rendition skipped: its broadcast cannot be resolved", "broadcast", *c.Broadcast, "err", err)
			return nil, nil
		}
	}
	t := TrackFromRendition(r, e.nextID)
	e.nextID++
	if err := e.m.AddTrack(t); err != nil {
		if explicit && !errors.Is(err, mux.ErrLateTrack) {
			return nil, fmt.Errorf("export: rendition %q: %w", r.Name, err)
		}
		skip("rendition not exported", "err", err)
		return nil, nil
	}
	src, err := bc.Track(r.Name)
	if err != nil {
		_ = e.m.RemoveTrack(t.ID)
		skip("rendition not exported: cannot subscribe", "err", err)
		return nil, nil
	}
	ts := &trackState{track: t}
	ts.consumer = src.Subscribe(e.opts.Latency)
	e.byCons[ts.consumer] = ts
	e.all = append(e.all, ts)
	for len(e.byID) <= t.ID { // IDs count up; a refused rendition leaves a nil
		e.byID = append(e.byID, nil)
	}
	e.byID[t.ID] = ts
	e.tracks[r.Name] = ts
	if err := e.jit.AddTrack(t.ID, t.Kind); err != nil {
		return nil, err
	}
	counts[t.Kind]++
	e.live++
	ts.consumer.Watch(e.ready)
	e.log.Debug("exporting rendition", "track", r.Name, "codec", t.Codec, "id", t.ID)
	return ts, nil
}

// gateCheck notes whether gated track ts holds a frame now.
func (e *Export) gateCheck(ts *trackState) {
	if ts.hasFirst {
		return
	}
	if _, ok := ts.consumer.Track().OldestTimestamp(); ok || ts.ended {
		ts.hasFirst = true
		e.gate.waiting--
	}
}

// maxBackfill bounds how long opening the gate waits for backfills.
const maxBackfill = time.Second

// startBackfills starts, in the background, the backfill of every gated
// audio track that starts after the earliest video keyframe K, back to K,
// and gives them min(Delay, maxBackfill) more before the gate opens. A
// failed backfill is only logged: that track starts at its first live group.
func (e *Export) startBackfills() {
	g := e.gate
	g.backfilling = true
	g.deadline = e.opts.Now().Add(min(e.opts.Delay, maxBackfill))
	var k int64
	haveK := false
	for _, ts := range g.tracks {
		if ts.track.Kind != mux.Video || ts.ended {
			continue
		}
		if first, ok := ts.consumer.Track().OldestTimestamp(); ok && (!haveK || first < k) {
			k, haveK = first, true
		}
	}
	if !haveK {
		return
	}
	ctx, cancel := context.WithDeadline(e.ctx, g.deadline)
	g.cancel = cancel
	for _, ts := range g.tracks {
		if ts.track.Kind != mux.Audio || ts.ended {
			continue
		}
		t := ts.consumer.Track()
		if first, ok := t.OldestTimestamp(); !ok || first <= k {
			continue
		}
		g.pending.Add(1)
		name := ts.track.Name
		go func() {
			if err := t.Backfill(ctx, k); err != nil {
				e.log.Debug("backfill failed; the track starts at its first live group", "track", name, "err", err)
			}
			if g.pending.Add(-1) == 0 {
				e.ready.Wake() // let Run open the gate now
			}
		}()
	}
}

// startLateFill backfills a late audio track (a rendition a catalog update
// added) back to the newest timestamp written, in the background and for
// at most maxBackfill, before it is read: it joined at the newest group
// when it was subscribed, which may be some frames after the rendition
// began. Meanwhile the jitter buffer waits for it (pending), so its frames
// from that point on are not late. Video starts at its newest keyframe as
// it does when joining.
func (e *Export) startLateFill(ts *trackState) {
	if ts.track.Kind != mux.Audio || !e.haveFirst {
		return
	}
	t, target := ts.consumer.Track(), e.newest
	ctx, cancel := context.WithTimeout(e.ctx, maxBackfill)
	ts.filling = true
	e.fills = append(e.fills, lateFill{ts: ts, cancel: cancel})
	name := ts.track.Name
	go func() {
		if err := t.Backfill(ctx, target); err != nil {
			e.log.Debug("backfill of a late track failed; it starts at its first live group", "track", name, "err", err)
		}
		ts.filled.Store(true)
		e.ready.Wake()
	}()
}

// endLateFills reads the late tracks whose backfill is done.
func (e *Export) endLateFills() error {
	keep := e.fills[:0]
	for _, f := range e.fills {
		if !f.ts.filled.Load() {
			keep = append(keep, f)
			continue
		}
		f.cancel()
		f.ts.filling = false
		if !f.ts.ended {
			if err := e.readTrack(f.ts); err != nil {
				return err
			}
		}
	}
	clear(e.fills[len(keep):])
	e.fills = keep
	return nil
}

// openGate ends the start gate: every gated track is read from its oldest
// group, backfilled ones included.
func (e *Export) openGate() error {
	g := e.gate
	e.gate = nil
	if g.cancel != nil {
		g.cancel()
	}
	for _, ts := range g.tracks {
		ts.gated = false
		if ts.ended {
			continue
		}
		if err := e.readTrack(ts); err != nil {
			return err
		}
	}
	return nil
}

func muxKind(k catalog.Kind) mux.Kind {
	if k == catalog.KindVideo {
		return mux.Video
	}
	return mux.Audio
}

// write hands one released item to the muxer.
func (e *Export) write(it jitter.Item) error {
	f := it.Frame
	if !e.haveFirst {
		e.haveFirst, e.firstTS = true, f.Timestamp
	}
	if e.opts.MaxDuration > 0 && f.Timestamp-e.firstTS >= e.opts.MaxDuration.Microseconds() {
		e.finished, e.timeUp = true, true
		return nil
	}
	if f.Discontinuity {
		e.statsMu.Lock()
		e.stats.Discontinuities++
		e.statsMu.Unlock()
	}
	if err := e.writeFrame(f); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	e.newest = max(e.newest, f.Timestamp)
	if d := f.Timestamp - e.firstTS; d > e.media.Load() {
		e.media.Store(d)
	}
	return nil
}

// Run drives the export until the broadcast ends, MaxDuration is reached or
// ctx is done, then writes what is buffered and finalizes the container. A
// cancelled ctx returns ctx.Err() after that, or the finalizing error.
// Run is Go and a wait for its end.
func (e *Export) Run(ctx context.Context) error {
	ended := make(chan error, 1)
	e.Go(ctx, func(err error) { ended <- err })
	return <-ended
}

// Go drives the export as Run does, and calls done with what Run would
// return once it ended (from whichever goroutine ran it last). It works in
// the calling goroutine until it has to wait, then returns; the work after
// each wait runs in a new goroutine (see Export.park). No goroutine waits
// for an export that waits for its broadcast: an idle recording costs no
// stack at all.
func (e *Export) Go(ctx context.Context, done func(error)) {
	e.ctx, e.done = ctx, done
	wake := e.wake // bound once: a wakeup starts a goroutine without allocating
	e.resume = func() { go wake() }
	if err := e.start(); err != nil {
		e.end(err)
		return
	}
	// A cancelled ctx wakes the export like any other event.
	e.stopCtxWake = context.AfterFunc(ctx, e.ready.Wake)
	e.drive()
}

// wake goes on with a parked export: the goroutine its ready set's wakeup
// started. A done ctx ends it before anything else is read.
func (e *Export) wake() {
	if err := e.ctx.Err(); err != nil {
		e.end(err)
		return
	}
	e.drive()
}

// drive does the ready work until the export ends, or until nothing is
// left to do: then it parks the export and returns.
func (e *Export) drive() {
	for {
		if err := e.poll(); err != nil {
			e.end(err)
			return
		}
		if e.finished {
			e.end(nil)
			return
		}
		if e.park() {
			return
		}
		if err := e.ctx.Err(); err != nil {
			e.end(err)
			return
		}
	}
}

// park arranges for the export to go on at the next event: a consumer or
// the catalog receiving something, a backfill ending, ctx ending (Go's
// AfterFunc), or the next deadline of the jitter buffer or the start gate
// (a timer that wakes the ready set). It reports false when an event is
// pending already: the caller polls again at once.
//
// Parking instead of blocking in a select is what makes an idle export
// free: a goroutine blocked in Run's place would keep the stack its
// callers grew (a recording's setup: catalog, files, muxer), 8 KB, and the
// runtime halves a stack only while its blocked depth is under a quarter
// of it. A fresh goroutine per wakeup costs a few hundred nanoseconds
// more than waking a blocked one; a recording wakes per frame at most.
func (e *Export) park() bool {
	d, ok := e.jit.Deadline()
	if e.gate != nil && (!ok || e.gate.deadline.Before(d)) {
		d, ok = e.gate.deadline, true
	}
	switch {
	case ok && e.timer == nil:
		e.timer = time.AfterFunc(max(d.Sub(e.opts.Now()), time.Millisecond), e.ready.Wake)
	case ok:
		e.timer.Reset(max(d.Sub(e.opts.Now()), time.Millisecond))
	case e.timer != nil:
		e.timer.Stop() // nothing is due: an idle export gets no wakeups
	}
	return e.ready.Park(e.resume)
}

// end finishes the export (finish) and reports the outcome to Go's done.
// A failed finalize (a full disk, a closed pipe) matters more than the
// cancellation that asked for it: the caller must not take a half-written
// file for a finished one.
func (e *Export) end(err error) {
	if cerr := e.finish(); cerr != nil && (err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		err = cerr
	}
	if e.stopCtxWake != nil {
		e.stopCtxWake()
	}
	if e.timer != nil {
		e.timer.Stop()
	}
	e.done(err)
}

// Close ends an export driven by Poll as Run ends its own: it writes what
// is buffered (unless MaxDuration stopped it) and closes the muxer. Later
// calls return nil.
func (e *Export) Close() error { return e.finish() }

// finish flushes the jitter buffer into the muxer and closes it. Unless the
// export was stopped by MaxDuration, everything buffered is written.
func (e *Export) finish() error {
	if e.muxerClosed {
		return nil
	}
	e.muxerClosed = true
	if e.gate != nil && e.gate.cancel != nil {
		e.gate.cancel() // stop the start gate's backfills
	}
	for _, f := range e.fills {
		f.cancel()
	}
	var werr error
	for !e.timeUp {
		it, ok := e.jit.Flush()
		if !ok {
			break
		}
		if werr = e.write(it); werr != nil {
			break
		}
	}
	for _, ts := range e.all {
		if !ts.ended {
			ts.consumer.Close()
		}
	}
	if e.cat != nil {
		e.cat.Close()
	}
	if err := e.m.Close(); err != nil && werr == nil {
		werr = fmt.Errorf("export: finalizing: %w", err)
	}
	e.syncStats()
	return werr
}
