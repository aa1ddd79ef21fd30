package archive

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moq-export/moq-export/archive/internal/layout"
	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
)

// ReadOptions configure Recording.Broadcast.
type ReadOptions struct {
	// From and To bound the media time read (µs of the broadcast's own
	// timestamps): video starts at the keyframe at or before From, every
	// other track at that keyframe's time; nothing at or after To is read.
	// 0 means the start and the end of what is held.
	From, To int64
	// Pace replays in real time (a live broadcast) instead of as fast as
	// it is read.
	Pace bool
	// Follow keeps reading the records a concurrent writer adds, looking
	// again every Follow, until ctx ends. 0 ends at what is stored.
	Follow time.Duration
	// Settle is how long the reader waits, after the first track is
	// asked for, for the others of the same selection (default 50 ms),
	// unless the reader says it asked for all of them
	// (model.Broadcast.Selected, as the export engine does).
	Settle time.Duration
	// Logger receives gaps met. Nil discards.
	Logger *slog.Logger
}

// step is the part of each track an unpaced replay writes at once, and
// ahead how many parts its readers have left to read when it writes the
// next: it waits until they reached the part ahead parts before the
// newest (model.Track.ReadTo), so they hold at most ahead+1 parts (6 s)
// unread, well inside model.MaxLag, and still have 5 s to read while
// the next part goes in. A reader that has little left when the writer
// is woken waits for it: with a part of 3 s written once the readers
// reached the one before (3 s left), the export of an hour parked about
// 1,100 times, waiting each time for the feeder's wakeup and its reads,
// and its goroutines overlapped on the two cores for less of its run
// (in turns at real-time priority, 98-106 ms per export against 86-98
// with 1 s parts 5 s ahead). Each part is a batch per group: one wakeup,
// not one per frame. A part goes in slices of a second, track after
// track: no track is more than that ahead of another. paceStep is a
// paced replay's tick.
const (
	step     = time.Second
	ahead    = 5
	slice    = time.Second
	paceStep = 20 * time.Millisecond
)

// Broadcast returns the recording as a model broadcast that a recorder
// (the export engine) or a publisher reads like a relay's: its catalog
// track holds the catalog in effect at From, and each track asked for
// is filled from the archive, unpacked from its container
// (subscribe.Unpacker), from its start point on. The broadcast ends after
// To (or the last record), unless Follow is set; cancelling ctx ends it
// with ctx's cause.
func (r *Recording) Broadcast(ctx context.Context, o ReadOptions) (*model.Broadcast, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Settle <= 0 {
		o.Settle = 50 * time.Millisecond
	}
	if o.To <= 0 {
		o.To = math.MaxInt64
	}
	cat, catFrames, err := r.Catalog(ctx, o.From)
	for err != nil && o.Follow > 0 && errors.Is(err, ErrNoBroadcast) {
		// A follower of an archive being started waits for its catalog.
		if serr := sleepUntil(ctx, time.Now().Add(o.Follow)); serr != nil {
			return nil, err
		}
		r.forget(r.catTrack)
		cat, catFrames, err = r.Catalog(ctx, o.From)
	}
	if err != nil {
		return nil, err
	}
	b := model.NewBroadcast(r.name)
	if !o.Pace {
		b.SetUnpaced() // written as fast as it is read
	}
	f := &feeder{r: r, o: o, b: b, cat: cat, asked: make(chan struct{}, 1), selected: make(chan struct{}, 1), tracks: map[string]*feedTrack{}}
	// The catalog in effect at the start, as stored.
	ct := b.CreateTrack(r.catTrack)
	var g *model.Group
	for _, fr := range catFrames {
		if g == nil {
			if g, err = ct.CreateGroup(fr.group); err != nil {
				return nil, err
			}
		}
		if err := g.WriteFrame(model.Frame{Timestamp: fr.ts, Payload: fr.payload}); err != nil {
			return nil, err
		}
	}
	if g != nil {
		g.Close(nil)
	}
	f.catGroup = catFrames[0].group
	b.HandleRequests(f.request)
	b.HandleSelected(func() {
		f.mu.Lock()
		none := len(f.order) == 0
		f.mu.Unlock()
		if none {
			return // a selection without tracks of this broadcast
		}
		select {
		case f.selected <- struct{}{}:
		default:
		}
	})
	ctx, cancel := context.WithCancelCause(ctx)
	b.HandleClose(func(err error) { cancel(errors.New("archive: broadcast closed")) })
	go func() {
		err := f.run(ctx)
		if f.poll != nil {
			f.poll.Stop()
		}
		cancel(nil)
		b.Close(err)
	}()
	return b, nil
}

// feeder fills a broadcast from a recording.
type feeder struct {
	r        *Recording
	o        ReadOptions
	b        *model.Broadcast
	cat      *catalog.Catalog
	catGroup uint64

	mu     sync.Mutex
	tracks map[string]*feedTrack
	order  []*feedTrack
	asked  chan struct{}
	ended  bool // the read ended: later requests are refused
	// selected: the reader asked for all the tracks it takes.
	selected chan struct{}
	// poll is waitRead's timer (the run goroutine's alone).
	poll *time.Timer
}

// feedTrack is one track being filled.
type feedTrack struct {
	name    string
	video   bool
	t       *model.Track
	it      *frameIter
	unpack  *subscribe.Unpacker
	g       *model.Group
	gseq    uint64
	started bool // positioned at its start point
	done    bool
	drained chan struct{}
	// skipBefore: frames before it are not written (µs).
	skipBefore int64
	after      uint64    // catalog: groups up to it were written at the start
	endBy      time.Time // its end waits for its readers until then
	graceBy    time.Time // and, paced, until then
	// batch holds the frames unpacked for the open group g, written
	// to it at once (flush): its readers take them in one turn.
	batch []model.Frame
	stage func(model.Frame) error
}

// flush writes the frames staged for the open group; false when the
// track was closed (its readers left).
func (ft *feedTrack) flush() bool {
	if len(ft.batch) == 0 {
		return true
	}
	err := ft.g.WriteFrames(ft.batch)
	clear(ft.batch)
	ft.batch = ft.batch[:0]
	if errors.Is(err, model.ErrClosed) {
		ft.done = true
		return false
	}
	return true
}

func (f *feeder) request(name string) (*model.Track, error) {
	var c *catalog.Container
	video := false
	found := false
	for _, rd := range f.cat.Renditions() {
		if rd.Name == name {
			c, video, found = rd.Common().Container, rd.Kind == catalog.KindVideo, true
		}
	}
	// A follower takes a track the catalog lists before its first record
	// is archived.
	if !found || !f.r.Has(context.Background(), name) && f.o.Follow <= 0 {
		return nil, fmt.Errorf("%w: %q in archived broadcast %q", model.ErrNotFound, name, f.r.name)
	}
	u, err := subscribe.NewUnpacker(name, c)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if ft, ok := f.tracks[name]; ok {
		return ft.t, nil
	}
	if f.ended {
		return nil, fmt.Errorf("%w: %q asked after the read of archived broadcast %q ended", model.ErrNotFound, name, f.r.name)
	}
	t := model.NewTrack(name)
	ft := &feedTrack{name: name, video: video, t: t, unpack: u, drained: make(chan struct{}, 1)}
	t.HandleDrained(func() {
		select {
		case ft.drained <- struct{}{}:
		default:
		}
	})
	f.tracks[name] = ft
	f.order = append(f.order, ft)
	select {
	case f.asked <- struct{}{}:
	default:
	}
	return t, nil
}

// endRead ends the read unless a track was asked for since the round of n
// tracks (those asked and the catalog) began: under the lock requests take,
// so that a track is either fed whole or refused, never closed empty with
// the broadcast.
func (f *feeder) endRead(n int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.order)+1 > n {
		return false
	}
	f.ended = true
	return true
}

// feederEnding, when set (by tests), is called as an unpaced read is about
// to end, with its broadcast.
var feederEnding atomic.Pointer[func(*model.Broadcast)]

// pending appends the tracks asked for, in order, to dst.
func (f *feeder) pending(dst []*feedTrack) []*feedTrack {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append(dst, f.order...)
}

func (f *feeder) gap(track string) func(layout.Record, error) {
	return func(rec layout.Record, err error) {
		f.o.Logger.Warn("archive: record missing, skipped", "broadcast", f.r.name, "track", track, "record", rec.Sequence, "err", err)
		f.mu.Lock()
		ft := f.tracks[track]
		f.mu.Unlock()
		if ft != nil && rec.End.Group > rec.Start.Group {
			ft.t.MarkLost(rec.Start.Group, rec.End.Group)
		}
	}
}

func (f *feeder) run(ctx context.Context) error {
	// Wait for the first track, then for the rest of the same selection:
	// until the reader says it has them all, or a moment passed without
	// another.
	select {
	case <-f.asked:
	case <-ctx.Done():
		return ignoreClosed(ctx)
	}
	settle := time.NewTimer(f.o.Settle)
	for waiting := true; waiting; {
		select {
		case <-f.asked:
			settle.Reset(f.o.Settle)
		case <-f.selected:
			waiting = false
		case <-settle.C:
			waiting = false
		case <-ctx.Done():
			return ignoreClosed(ctx)
		}
	}
	settle.Stop()
	// The start: the earliest keyframe at or before From of the video
	// tracks asked for.
	start := f.o.From
	if f.o.From > 0 {
		start = math.MaxInt64
		for _, ft := range f.pending(nil) {
			if !ft.video {
				continue
			}
			if _, key, err := f.r.seekKey(ctx, ft.name, f.o.From); err == nil {
				start = min(start, key)
			}
		}
		if start == math.MaxInt64 {
			start = f.o.From
		}
	}
	catTrack := &feedTrack{name: f.r.catTrack, t: f.b.CreateTrack(f.r.catTrack), unpack: &subscribe.Unpacker{}, after: f.catGroup, started: true, drained: make(chan struct{}, 1)}
	var err error
	if catTrack.it, err = f.r.frames(ctx, f.r.catTrack, f.o.From, true); err != nil {
		return err
	}
	catTrack.skipBefore = math.MinInt64
	if u, uerr := subscribe.NewUnpacker(f.r.catTrack, nil); uerr == nil {
		catTrack.unpack = u
	}
	wallStart := time.Now()
	var tracks []*feedTrack
	written := start // the tracks are written up to it
	for now := start; ; {
		now = min(now+int64(f.step()/time.Microsecond), f.o.To)
		if f.o.Pace {
			due := wallStart.Add(time.Duration(now-start) * time.Microsecond)
			if err := sleepUntil(ctx, due); err != nil {
				return ignoreClosed(ctx)
			}
		}
		tracks = append(f.pending(tracks[:0]), catTrack)
		for _, ft := range tracks {
			if !ft.started {
				if err := f.position(ctx, ft, start); err != nil {
					if f.o.Follow > 0 && errors.Is(err, fs.ErrNotExist) {
						continue // not archived yet: looked at again next round
					}
					return err
				}
			}
		}
		// The part goes in slices, track after track, so that no track
		// runs more than a slice ahead of another (the export's jitter
		// buffer waits for a lagging track only so long).
		for to := written; ; {
			to = min(to+slice.Microseconds(), now)
			for _, ft := range tracks {
				if ft.started {
					if err := f.fill(ctx, ft, to); err != nil {
						return err
					}
				}
			}
			if to >= now {
				break
			}
		}
		written = now
		live := 0
		for _, ft := range tracks {
			if ft.started && !ft.done && ft != catTrack {
				live++
			}
		}
		if live == 0 && f.o.Follow <= 0 {
			if fn := feederEnding.Load(); fn != nil {
				(*fn)(f.b)
			}
			if f.endRead(len(tracks)) {
				return nil
			}
			continue // a track asked since this round began: fed from the start
		}
		if !f.o.Pace {
			// The readers read the parts written while the next is:
			// wait until they reached the one ahead parts before the
			// newest, not until they read them.
			if err := f.waitRead(ctx, tracks, now-ahead*int64(f.step()/time.Microsecond)); err != nil {
				return ignoreClosed(ctx)
			}
		}
		if f.o.Follow > 0 && f.starved(tracks) {
			if err := sleepUntil(ctx, time.Now().Add(f.o.Follow)); err != nil {
				return ignoreClosed(ctx)
			}
			for _, ft := range tracks {
				if ft.it != nil {
					ft.it.refresh()
				}
			}
		}
	}
}

func (f *feeder) step() time.Duration {
	if f.o.Pace {
		return paceStep
	}
	return step
}

// ignoreClosed is nil when the broadcast was closed by its reader, the
// context's cause otherwise.
func ignoreClosed(ctx context.Context) error {
	err := context.Cause(ctx)
	if err != nil && err.Error() == "archive: broadcast closed" {
		return nil
	}
	return err
}

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// starved reports whether a follower has read all that is stored of
// every live track.
func (f *feeder) starved(tracks []*feedTrack) bool {
	for _, ft := range tracks {
		if ft.done || ft.it == nil {
			continue
		}
		if len(ft.it.buf) > 0 {
			return false
		}
	}
	return true
}

// position puts a track at its start point: video at its keyframe at or
// before start, other tracks at start.
func (f *feeder) position(ctx context.Context, ft *feedTrack, start int64) error {
	var err error
	if ft.video {
		var key int64
		ft.it, key, err = f.r.seekKey(ctx, ft.name, start)
		ft.skipBefore = min(key, start)
		if f.o.From <= 0 {
			ft.skipBefore = math.MinInt64
		}
	} else {
		ft.it, err = f.r.frames(ctx, ft.name, start-1000, true)
		ft.skipBefore = start
		if f.o.From <= 0 {
			ft.skipBefore = math.MinInt64
		}
	}
	if err != nil {
		return err
	}
	ft.started = true
	ft.it.onGap = f.gap(ft.name)
	ft.it.readAhead, ft.it.until = true, f.o.To
	return nil
}

// fill writes the track's frames before media time now.
func (f *feeder) fill(ctx context.Context, ft *feedTrack, now int64) error {
	if ft.done || ft.it == nil {
		return nil
	}
	if ft.stage == nil {
		ft.stage = func(fr model.Frame) error {
			ft.batch = append(ft.batch, fr)
			return nil
		}
	}
	err := f.fillStaged(ctx, ft, now)
	if ft.g != nil {
		ft.flush()
	}
	return err
}

// fillStaged stages the track's frames before media time now, writing
// each group's as it ends.
func (f *feeder) fillStaged(ctx context.Context, ft *feedTrack, now int64) error {
	for {
		fr, ok, err := ft.it.peek(ctx)
		if err != nil {
			return err
		}
		if !ok {
			if f.o.Follow <= 0 && !f.endLater(ft) {
				f.end(ft)
			}
			return nil
		}
		if fr.ts >= f.o.To {
			if !f.endLater(ft) {
				f.end(ft)
			}
			return nil
		}
		if fr.ts >= now {
			return nil
		}
		ft.it.next(ctx)
		if fr.ts < ft.skipBefore || fr.group <= ft.after && ft.after > 0 {
			continue
		}
		if ft.g == nil || fr.group != ft.gseq {
			if ft.g != nil {
				if !ft.flush() {
					return nil
				}
				ft.g.Close(nil)
				if fr.group > ft.gseq+1 {
					// Groups the archive never held (the source skipped
					// them, or its recorder was down): its readers go on
					// at once instead of waiting for them.
					ft.t.MarkLost(ft.gseq+1, fr.group)
				}
			}
			g, err := ft.t.CreateGroup(fr.group)
			if err != nil {
				if errors.Is(err, model.ErrClosed) {
					ft.done = true
					return nil
				}
				continue
			}
			ft.g, ft.gseq = g, fr.group
			ft.unpack.Group()
		}
		if err := ft.unpack.Unpack(fr.ts, fr.payload, ft.stage); err != nil {
			f.o.Logger.Warn("archive: frame not unpacked", "broadcast", f.r.name, "track", ft.name, "group", fr.group, "err", err)
		}
	}
}

// endWait bounds how long a track's end waits for its readers; a paced
// replay (served to subscribers over the network) then waits endGrace
// more, as the reference's own publisher delays its close, for the last
// group's stream to land before the end does.
const (
	endWait  = 2 * time.Second
	endGrace = 500 * time.Millisecond
)

// endLater reports whether the end of ft waits: until its readers read
// its last group (a publisher's subscription then has sent it before it
// signals the end: a subscriber that stops at that signal, as the
// reference's does, does not lose the group still in flight), at most
// endWait, and for a paced replay endGrace after.
func (f *feeder) endLater(ft *feedTrack) bool {
	now := time.Now()
	if ft.endBy.IsZero() {
		ft.endBy = now.Add(endWait)
	}
	if !ft.t.Drained() && now.Before(ft.endBy) {
		return true
	}
	if !f.o.Pace {
		return false
	}
	if ft.graceBy.IsZero() {
		ft.graceBy = now.Add(endGrace)
	}
	return now.Before(ft.graceBy)
}

// end finishes a track: its last group and the track.
func (f *feeder) end(ft *feedTrack) {
	if ft.g != nil {
		ft.flush()
		ft.g.Close(nil)
		ft.g = nil
	}
	ft.unpack.Close()
	ft.done = true
	ft.t.Close(nil)
}

// waitRead waits until the readers of every track have taken a frame at or
// after media time to, or read all it holds (model.Track.ReadTo). The
// track signals; the feeder also looks again every 100 ms, on one timer
// it keeps (an hour read as fast as it is taken waits some thousand
// times).
func (f *feeder) waitRead(ctx context.Context, tracks []*feedTrack, to int64) error {
	for _, ft := range tracks {
		for !ft.t.ReadTo(to) {
			if lingerSignal(ft.drained) {
				continue
			}
			if f.poll == nil {
				f.poll = time.NewTimer(readPoll)
			} else {
				f.poll.Reset(readPoll)
			}
			select {
			case <-ft.drained:
			case <-f.poll.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// readPoll is how often waitRead looks again without a signal.
const readPoll = 100 * time.Millisecond

// lingerSignal waits up to model.LingerFor for a signal on c (the
// readers of an unpaced read take a part of 1 s in some 15 µs); it
// reports whether the signal came.
func lingerSignal(c <-chan struct{}) bool {
	return model.Linger(func() bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	})
}
