package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/moq-export/moq-export/archive/internal/layout"
	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/model"
)

// WriteOptions configure Write.
type WriteOptions struct {
	// Retention is the DVR window kept per track: a track's oldest
	// records are deleted as new ones land while the rest still span
	// it. 0 keeps everything (an archive).
	Retention time.Duration
	// Grace is how long an expired object stays after the timeline
	// stopped pointing at it, for readers still fetching it: 0 means
	// layout.RetentionGrace (30 s), a negative value none.
	Grace time.Duration
	// Latency is how long a stalled group is waited for before newer
	// groups are archived past it (default 5 s).
	Latency time.Duration
	// Logger receives gaps and refusals. Nil discards.
	Logger *slog.Logger
	// OnRecord, when set, is called after each record is committed (or
	// dropped as a gap), from the goroutine of its track: concurrently for
	// different tracks. Tests and progress lines use it.
	OnRecord func(RecordEvent)

	now func() time.Time
}

// RecordEvent reports one record of one track.
type RecordEvent struct {
	Track    string
	Sequence uint64
	// Start and End are the media time span of its frames (µs).
	Start, End int64
	Frames     int
	Bytes      int64 // payload bytes
	// Gap is set when the record could not be stored: its frames are lost
	// and the next record takes its sequence. Err says why.
	Gap bool
	Err error
}

// ErrSourceRestarted means a track's group sequence went back (the source
// restarted): an archive prefix holds one run of a broadcast.
var ErrSourceRestarted = errors.New("archive: the source restarted its tracks; archive it under a new prefix")

// BroadcastPrefix is the key prefix of broadcast name under root: each
// path element encoded as a track name is, so that no name from the
// network can leave root.
func BroadcastPrefix(root, name string) (string, error) {
	name = strings.Trim(name, "/")
	if name == "" {
		return "", fmt.Errorf("%w: an empty broadcast name", ErrBadKey)
	}
	parts := strings.Split(name, "/")
	for i, p := range parts {
		if p == "" {
			return "", fmt.Errorf("%w: broadcast %q has an empty element", ErrBadKey, name)
		}
		parts[i] = layout.EncodeName(p)
	}
	p := strings.Join(parts, "/")
	if root = strings.Trim(root, "/"); root != "" {
		p = root + "/" + p
	}
	return p, nil
}

// Write archives broadcast b into st under prefix, in the Recording
// format version 2: the catalog track, every rendition its catalog
// lists (as it changes), and a timeline per track. b's frames must be the
// objects as received (subscribe.Options.Objects). It returns when b
// ends, or when ctx is cancelled, after each track's open record is
// committed; a track that fails ends with an error, the others go on.
func Write(ctx context.Context, st Store, prefix string, b *model.Broadcast, o WriteOptions) error {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Latency <= 0 {
		o.Latency = 5 * time.Second
	}
	if o.Grace == 0 {
		o.Grace = layout.RetentionGrace
	}
	if o.now == nil {
		o.now = time.Now
	}
	w := &bcWriter{ctx: ctx, st: st, prefix: prefix, b: b, o: o, started: map[string]bool{}}
	catTrack := catalog.TrackFor(b.Name())
	w.start(catTrack, true, catalog.NewReader(catTrack))
	w.wg.Wait()
	return errors.Join(w.errs...)
}

type bcWriter struct {
	ctx    context.Context
	st     Store
	prefix string
	b      *model.Broadcast
	o      WriteOptions

	wg      sync.WaitGroup
	mu      sync.Mutex
	started map[string]bool
	errs    []error
	// firsts are, per round of alignStart, the first timestamps the
	// media tracks hold; firstsChanged is closed when one is added.
	firsts        [alignRounds]map[string]int64
	media         int
	firstsChanged chan struct{}
}

// Bounds of alignStart: how long a media track's first group is waited
// for, how long the first groups of the other media tracks are, and how
// long the source is given to hand over what it holds from before.
const (
	alignFirstWait  = 2 * time.Second
	alignOthersWait = time.Second
	alignFillWait   = 5 * time.Second
	// alignRounds: the first aligns every track with the earliest first
	// frame; a video track then starts at the keyframe before it, and
	// the second aligns the others with that keyframe.
	alignRounds = 2
)

// startTarget records first, the first timestamp of track name in round,
// and returns the earliest first timestamp of the broadcast's media tracks
// in that round, once each started one has its own or alignOthersWait
// passed.
func (w *bcWriter) startTarget(ctx context.Context, round int, name string, first int64) int64 {
	deadline := time.NewTimer(alignOthersWait)
	defer deadline.Stop()
	w.mu.Lock()
	firsts := w.firsts[round]
	if firsts == nil {
		firsts = map[string]int64{}
		w.firsts[round] = firsts
	}
	firsts[name] = first
	if w.firstsChanged != nil {
		close(w.firstsChanged)
		w.firstsChanged = nil
	}
	for {
		target := first
		for _, ts := range firsts {
			target = min(target, ts)
		}
		if len(firsts) >= w.media {
			w.mu.Unlock()
			return target
		}
		if w.firstsChanged == nil {
			w.firstsChanged = make(chan struct{})
		}
		ch := w.firstsChanged
		w.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return target
		case <-ctx.Done():
			return target
		}
		w.mu.Lock()
	}
}

func (w *bcWriter) start(name string, sparse bool, cat *catalog.Reader) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started[name] {
		return
	}
	w.started[name] = true
	t, err := w.b.Track(name)
	if err != nil {
		w.errs = append(w.errs, fmt.Errorf("archive: track %q: %w", name, err))
		return
	}
	tw := &trackWriter{w: w, name: name, sparse: sparse, cat: cat, track: t}
	w.wg.Go(func() {
		if err := tw.run(); err != nil {
			w.o.Logger.Warn("archive: track stopped", "broadcast", w.b.Name(), "track", name, "err", err)
			w.mu.Lock()
			w.errs = append(w.errs, err)
			w.mu.Unlock()
		}
	})
}

// renditions starts the writers of the renditions a catalog lists.
func (w *bcWriter) renditions(c *catalog.Catalog) {
	var names []string
	for _, r := range c.Renditions() {
		if r.Common().Broadcast != nil {
			w.o.Logger.Warn("archive: rendition of another broadcast not archived", "broadcast", w.b.Name(), "track", r.Name)
			continue
		}
		if layout.IsTimeline(r.Name) {
			w.o.Logger.Warn("archive: a track named like a timeline is not archived", "broadcast", w.b.Name(), "track", r.Name)
			continue
		}
		names = append(names, r.Name)
	}
	// Counted before any starts: each aligns its start with all of them.
	w.mu.Lock()
	for _, n := range names {
		if !w.started[n] {
			w.media++
		}
	}
	w.mu.Unlock()
	for _, n := range names {
		w.start(n, false, nil)
	}
}

// pending is one frame of the open record.
type pending struct {
	ts      int64
	payload []byte
}

// keptRecord is what retention needs of a committed record.
type keptRecord struct {
	seq      uint64
	pts, end int64 // µs
}

// trackWriter archives one track: it buffers the open record, commits
// it (segment object, then timeline object) and applies retention.
type trackWriter struct {
	w      *bcWriter
	name   string
	sparse bool
	cat    *catalog.Reader
	track  *model.Track

	enrolled bool
	next     uint64 // sequence of the next record
	offset   uint64 // oldest retained record
	kept     []keptRecord
	// A resumed prefix: the frames before resume were archived by an
	// earlier run, whose newest record starts at group resumeFloor; a
	// group before that means the source restarted its numbering.
	resuming    bool
	resume      layout.Position
	resumeFloor uint64
	expired     []expiry

	// The open record.
	start    layout.Position
	keyframe bool
	groups   []layout.Group
	frames   []pending
	cur      uint64 // current group
	idx      uint64 // frames of cur seen so far
	haveCur  bool
}

type expiry struct {
	due  time.Time
	keys []string
}

func (tw *trackWriter) run() error {
	c := tw.track.Subscribe(tw.w.o.Latency)
	defer c.Close()
	ready := model.NewReadySet()
	c.Watch(ready)
	ctx := tw.w.ctx
	if !tw.sparse {
		if err := tw.alignStart(ctx); err != nil {
			return err
		}
	}
	var taken []*model.Consumer
	for {
		// Taken off the ready list before reading, so a change that
		// lands while reading puts it back.
		taken = ready.Take(taken[:0])
		for {
			ev, ok := c.Next()
			if !ok {
				break
			}
			switch ev.Kind {
			case model.EventFrame:
				if ev.Frame.Marker {
					// A hang marker of a source that unpacked its
					// objects: no object of its own (a source that
					// keeps objects hands markers in as objects).
					continue
				}
				if err := tw.frame(ev.Group, ev.Frame); err != nil {
					return err
				}
			case model.EventDiscontinuity:
				// A skipped or cut group ends the open record.
				if err := tw.commitOpen(false); err != nil {
					return err
				}
			case model.EventEnd:
				return tw.finish()
			}
		}
		if err := tw.checkGroupEnd(); err != nil {
			return err
		}
		select {
		case <-ready.Wakeup():
		case <-ctx.Done():
			// Frames already held are archived before the end.
			for {
				ev, ok := c.Next()
				if !ok || ev.Kind != model.EventFrame {
					break
				}
				if ev.Frame.Marker {
					continue
				}
				if err := tw.frame(ev.Group, ev.Frame); err != nil {
					return err
				}
			}
			return tw.finish()
		}
	}
}

// alignStart, before a media track is read, asks its source for the
// groups it still holds from before the subscription, back to the
// earliest first frame of the broadcast's media tracks: a subscription
// begins at the source's newest group, and the tracks of one broadcast are
// subscribed one after the other, so the later ones would lose their first
// groups (a direct recording aligns its audio to the first video keyframe
// the same way). A source that holds nothing older, or a resumed archive,
// is read as it comes.
func (tw *trackWriter) alignStart(ctx context.Context) error {
	var first int64
	for wait := time.Now().Add(alignFirstWait); ; {
		ts, ok := tw.track.OldestTimestamp()
		if ok {
			first = ts
			break
		}
		if time.Now().After(wait) || ctx.Err() != nil {
			return nil
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	if err := tw.enroll(); err != nil {
		return err
	}
	if tw.resuming {
		return nil
	}
	fctx, cancel := context.WithTimeout(ctx, alignFillWait)
	defer cancel()
	for round := range alignRounds {
		target := tw.w.startTarget(ctx, round, tw.name, first)
		if first <= target {
			continue
		}
		if err := tw.track.Backfill(fctx, target); err != nil {
			tw.w.o.Logger.Debug("archive: the groups before the subscription could not be had", "broadcast", tw.w.b.Name(), "track", tw.name, "err", err)
		}
		if ts, ok := tw.track.OldestTimestamp(); ok {
			first = ts
		}
	}
	return nil
}

// finish commits the open record: a clean end, no marker object.
func (tw *trackWriter) finish() error {
	err := tw.commitOpen(true)
	tw.expire(true)
	return err
}

func (tw *trackWriter) frame(group uint64, f model.Frame) error {
	if !tw.enrolled {
		if err := tw.enroll(); err != nil {
			return err
		}
	}
	if tw.haveCur && group < tw.cur {
		return fmt.Errorf("track %q group %d after %d: %w", tw.name, group, tw.cur, ErrSourceRestarted)
	}
	newGroup := !tw.haveCur || group != tw.cur
	if tw.cat != nil {
		if c, err := tw.cat.Frame(group, newGroup, f.Payload); err == nil && c != nil {
			tw.w.renditions(c)
		}
	}
	if tw.resuming {
		idx := tw.idx
		if newGroup {
			idx = 0
		}
		if group < tw.resume.Group || group == tw.resume.Group && idx < tw.resume.Frame {
			if group < tw.resumeFloor {
				return fmt.Errorf("track %q group %d, before the group %d the archive under %s holds: %w", tw.name, group, tw.resumeFloor, tw.w.prefix, ErrSourceRestarted)
			}
			// Archived by the earlier run (a relay hands a resumed
			// subscriber its current group again): skipped.
			tw.cur, tw.idx, tw.haveCur = group, idx+1, true
			return nil
		}
		tw.resuming = false
	}
	if newGroup && len(tw.frames) > 0 {
		hole := group != tw.cur+1
		long := f.Timestamp-tw.frames[0].ts >= layout.CutMin.Microseconds()
		if tw.sparse || hole || long {
			end := f.Timestamp
			if hole {
				// Groups are missing: the record's media ends with its
				// own frames, not where the next group starts.
				end = tw.estimatedEnd()
			}
			if err := tw.commit(end, layout.Position{Group: tw.cur + 1}, !hole); err != nil {
				return err
			}
		}
	}
	if newGroup {
		tw.cur, tw.idx, tw.haveCur = group, 0, true
	} else if !tw.sparse && len(tw.frames) > 0 && f.Timestamp-tw.frames[0].ts >= layout.CutMax.Microseconds() {
		// A long group is split between frames.
		if err := tw.commit(f.Timestamp, layout.Position{Group: tw.cur, Frame: tw.idx}, true); err != nil {
			return err
		}
	}
	if len(tw.frames) == 0 {
		tw.start, tw.keyframe = layout.Position{Group: group, Frame: tw.idx}, tw.idx == 0
	}
	if n := len(tw.groups); n == 0 || tw.groups[n-1].Sequence != group {
		tw.groups = append(tw.groups, layout.Group{Sequence: group})
	}
	ts := max(f.Timestamp, 0)
	g := &tw.groups[len(tw.groups)-1]
	g.Frames = append(g.Frames, layout.Frame{Timestamp: uint64(ts), Payload: f.Payload})
	tw.frames = append(tw.frames, pending{ts: ts, payload: f.Payload})
	tw.idx++
	return nil
}

// checkGroupEnd commits the open record when its group finished and the
// record is long enough (sparse tracks: always): readers get it without
// waiting for the next group.
func (tw *trackWriter) checkGroupEnd() error {
	if len(tw.frames) == 0 || !tw.haveCur {
		return nil
	}
	g := tw.track.Group(tw.cur)
	if g == nil {
		return nil
	}
	frames, finished, err := g.Frames(int(tw.idx))
	if !finished || len(frames) > 0 || err != nil {
		return nil
	}
	if !tw.sparse && tw.estimatedEnd()-tw.frames[0].ts < layout.CutMin.Microseconds() {
		return nil
	}
	return tw.commit(tw.estimatedEnd(), layout.Position{Group: tw.cur + 1}, true)
}

// estimatedEnd is the end of the open record's media: its last frame plus
// the mean frame interval.
func (tw *trackWriter) estimatedEnd() int64 {
	n := len(tw.frames)
	first, last := tw.frames[0].ts, tw.frames[n-1].ts
	if n < 2 {
		return last
	}
	return last + (last-first)/int64(n-1)
}

// commitOpen commits the open record at the end of what it holds.
func (tw *trackWriter) commitOpen(final bool) error {
	if len(tw.frames) == 0 {
		return nil
	}
	end := layout.Position{Group: tw.cur, Frame: tw.idx}
	if final {
		if g := tw.track.Group(tw.cur); g != nil {
			if rest, finished, err := g.Frames(int(tw.idx)); finished && err == nil && len(rest) == 0 {
				end = layout.Position{Group: tw.cur + 1}
			}
		}
	}
	if end.Frame > 0 && tw.start.Group == end.Group && tw.start.Frame == 0 && !final {
		end = layout.Position{Group: tw.cur + 1}
	}
	return tw.commit(tw.estimatedEnd(), end, true)
}

// enroll writes the .info objects of the track and its timeline, or
// checks and resumes after the records an earlier run committed.
func (tw *trackWriter) enroll() error {
	ctx, st, prefix := tw.w.ctx, tw.w.st, tw.w.prefix
	if ctx.Err() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	tl := layout.TimelineOf(tw.name)
	for _, x := range []struct {
		track string
		info  layout.Info
	}{
		{tw.name, layout.Info{Version: 2, Priority: layout.PublisherPriority, Timescale: layout.MediaTimescale}},
		{tl, layout.Info{Version: 2, Priority: layout.PublisherPriority, Timescale: layout.ArchiveTimescale}},
	} {
		want, err := layout.MarshalInfo(x.info)
		if err != nil {
			return err
		}
		have, err := st.Get(ctx, layout.InfoKey(prefix, x.track))
		switch {
		case err == nil:
			in, perr := layout.ParseInfo(have)
			if perr != nil || !layout.SameTrack(in, x.info) {
				return fmt.Errorf("archive: track %q is archived under %s with other settings (%s): archive it under a new prefix", x.track, prefix, have)
			}
		case errors.Is(err, fs.ErrNotExist):
			if err := st.Put(ctx, layout.InfoKey(prefix, x.track), want); err != nil {
				return fmt.Errorf("archive: track %q: %w", x.track, err)
			}
		default:
			return fmt.Errorf("archive: track %q: %w", x.track, err)
		}
	}
	tw.enrolled = true
	return tw.recover(ctx)
}

// recover resumes after the newest record an earlier run committed under
// the prefix: the next sequence follows it, objects past it (never
// referenced) are deleted, and groups up to its end are not archived
// again.
func (tw *trackWriter) recover(ctx context.Context) error {
	st, prefix := tw.w.st, tw.w.prefix
	tl := layout.TimelineOf(tw.name)
	keys, err := st.List(ctx, layout.SegmentsDir(prefix, tl))
	if err != nil || len(keys) == 0 {
		return err
	}
	last, err := layout.ParseID(keys[len(keys)-1][strings.LastIndexByte(keys[len(keys)-1], '/')+1:])
	if err != nil {
		return fmt.Errorf("archive: track %q: %w", tw.name, err)
	}
	recs, win, err := readTimelineObject(ctx, st, layout.SegmentKey(prefix, tl, last))
	if err != nil {
		return fmt.Errorf("archive: track %q: recovering: %w", tw.name, err)
	}
	r, ok := recs[last]
	if !ok {
		return fmt.Errorf("archive: track %q: recovering: timeline object %d lacks its record", tw.name, last)
	}
	tw.next, tw.offset = last+1, win.Offset
	tw.resuming, tw.resume, tw.resumeFloor = true, r.End, r.Start.Group
	if tw.w.o.Retention > 0 {
		// The DVR window goes on from the records retained: each one's
		// span, from its own timeline object (a GET each, over a window).
		for seq := win.Offset; seq <= last; seq++ {
			rr, ok := recs[seq]
			if !ok {
				more, _, err := readTimelineObject(ctx, st, layout.SegmentKey(prefix, tl, seq))
				if err != nil {
					continue // expired or lost: nothing to trim
				}
				if rr, ok = more[seq]; !ok {
					continue
				}
			}
			tw.kept = append(tw.kept, keptRecord{seq: seq, pts: int64(rr.PTS) * 1000, end: int64(rr.PTS+rr.Duration) * 1000})
		}
	}
	media, err := st.List(ctx, layout.SegmentsDir(prefix, tw.name))
	if err != nil {
		return err
	}
	for _, k := range media {
		if id, err := layout.ParseID(k[strings.LastIndexByte(k, '/')+1:]); err == nil && id > last {
			if err := st.Delete(ctx, k); err != nil {
				return err
			}
		}
	}
	return nil
}

// commit stores the open record, ending at end (its media running to
// endTS), as record tw.next; keyframeNext says whether the record after
// it starts at a join point.
func (tw *trackWriter) commit(endTS int64, end layout.Position, _ bool) error {
	ctx, st, prefix := tw.w.ctx, tw.w.st, tw.w.prefix
	if ctx.Err() != nil {
		ctx = context.WithoutCancel(ctx) // the final records of a stop
	}
	seq := tw.next
	firstTS, lastTS, n := tw.frames[0].ts, tw.frames[len(tw.frames)-1].ts, len(tw.frames)
	endTS = max(endTS, lastTS)
	seg := layout.Segment{Version: 2, FrameStart: tw.start.Frame, Groups: tw.groups}
	rec := layout.Record{Sequence: seq, PTS: uint64(firstTS) / 1000, Start: tw.start, End: end, Keyframe: tw.keyframe,
		Duration: uint64(endTS)/1000 - uint64(firstTS)/1000}
	ev := RecordEvent{Track: tw.name, Sequence: seq, Start: firstTS, End: endTS, Frames: n}
	for _, f := range tw.frames {
		ev.Bytes += int64(len(f.payload))
	}
	tw.groups, tw.frames = nil, nil
	gap := func(err error) error {
		ev.Gap, ev.Err = true, err
		tw.w.o.Logger.Warn("archive: record lost (a gap)", "broadcast", tw.w.b.Name(), "track", tw.name, "record", seq, "err", err)
		if tw.w.o.OnRecord != nil {
			tw.w.o.OnRecord(ev)
		}
		return nil
	}
	body, err := layout.AppendSegment(nil, seg)
	if err != nil {
		return gap(err)
	}
	segKey := layout.SegmentKey(prefix, tw.name, seq)
	if err := st.Put(ctx, segKey, body); err != nil {
		return gap(err)
	}
	// Retention: pop the oldest records while the rest span the window.
	kept := append(tw.kept, keptRecord{seq: seq, pts: firstTS, end: endTS})
	var expired []keptRecord
	if r := tw.w.o.Retention; r > 0 {
		for len(kept) >= 2 && endTS-kept[1].pts >= r.Microseconds() {
			expired = append(expired, kept[0])
			kept = kept[1:]
		}
	}
	offset := tw.offset
	if len(expired) > 0 {
		offset = kept[0].seq
	}
	rj, err := json.Marshal(rec)
	if err != nil {
		return gap(err)
	}
	frames, err := layout.EncodeGroup(layout.MarshalCheckpoint(offset, seq, rj))
	if err != nil {
		return gap(err)
	}
	tlObj, err := layout.AppendSegment(nil, layout.Segment{Version: 2, Groups: []layout.Group{{Sequence: seq,
		Frames: []layout.Frame{{Timestamp: rec.PTS, Payload: frames[0]}}}}})
	if err != nil {
		return gap(err)
	}
	tl := layout.TimelineOf(tw.name)
	if err := st.Put(ctx, layout.SegmentKey(prefix, tl, seq), tlObj); err != nil {
		// Not referenced: the segment goes, and the next record takes
		// its sequence. If it cannot go, the track cannot continue.
		if derr := st.Delete(ctx, segKey); derr != nil {
			return fmt.Errorf("archive: track %q record %d: timeline %w; and its segment stays: %w", tw.name, seq, err, derr)
		}
		return gap(err)
	}
	tw.next, tw.kept, tw.offset = seq+1, kept, offset
	for _, e := range expired {
		tw.expired = append(tw.expired, expiry{due: tw.w.o.now().Add(max(tw.w.o.Grace, 0)),
			keys: []string{layout.SegmentKey(prefix, tw.name, e.seq), layout.SegmentKey(prefix, tl, e.seq)}})
	}
	tw.expire(false)
	if tw.w.o.OnRecord != nil {
		tw.w.o.OnRecord(ev)
	}
	return nil
}

// expire deletes the expired objects whose grace has passed (all of them
// at the end when the grace is none).
func (tw *trackWriter) expire(final bool) {
	ctx := context.WithoutCancel(tw.w.ctx)
	now := tw.w.o.now()
	for len(tw.expired) > 0 && (!tw.expired[0].due.After(now) || final && tw.w.o.Grace < 0) {
		for _, k := range tw.expired[0].keys {
			if err := tw.w.st.Delete(ctx, k); err != nil {
				tw.w.o.Logger.Warn("archive: expired object stays", "key", k, "err", err)
			}
		}
		tw.expired = tw.expired[1:]
	}
}
