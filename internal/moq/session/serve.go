package session

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/moq-export/moq-export/model"
)

// ErrGroupStopped is what a Sink returns (wrapped) when the subscriber
// stopped the group it writes (STOP_SENDING, a refused stream): Serve
// skips the rest of that group, up to its next keyframe, and carries on.
var ErrGroupStopped = errors.New("moq: the subscriber stopped the group")

// ErrWindowDone is what Serve returns when a Finite window was delivered.
var ErrWindowDone = errors.New("moq: the subscription's range was delivered")

// ErrGroupFailed is what ServeGroup returns (wrapping the group's error)
// when the group it serves ended in an error: it cannot be vouched for.
var ErrGroupFailed = errors.New("moq: the served group ended in an error")

// ErrNotHeld is what ServeGroup returns when the finished group holds
// fewer frames than the first one asked for.
var ErrNotHeld = errors.New("moq: the group does not hold the frames asked for")

// GroupEnd is how a Sink ends a group's stream.
type GroupEnd int

const (
	// GroupComplete: every frame of the group that the subscription
	// sends was written (FIN).
	GroupComplete GroupEnd = iota
	// GroupFailed: a write failed or the subscriber stopped the group
	// (a reset).
	GroupFailed
	// GroupCut: the session is ending; the subscriber reads the group as
	// cut, not complete, so that a resumed subscription completes it.
	GroupCut
)

// Sink is a family's wire for one served subscription: it opens the
// stream of a group, writes frames on it as its objects, and ends it.
// Serve calls it from one goroutine.
type Sink interface {
	// OpenGroup opens the stream of group seq, whose first frame is
	// the group's frame index first. On an error nothing is open: one
	// wrapping ErrGroupStopped skips the group, any other ends the
	// subscription.
	OpenGroup(seq, first uint64) error
	// WriteObject sends o, frame index of the open group. An error
	// wrapping ErrGroupStopped skips the rest of the group; any other
	// ends the subscription. Serve ends the group (GroupFailed) either
	// way.
	WriteObject(o Object, index uint64) error
	// CloseGroup ends the open group's stream.
	CloseGroup(how GroupEnd)
}

// Location is a frame of a track: its group, and its index in the group.
type Location struct{ Group, Frame uint64 }

// Window is the part of a track a served subscription sends.
type Window struct {
	// Start is the first frame sent, when HasStart; a new timeline of
	// the producer (a restarted publisher) drops it: its group numbers
	// are not the ones Start counted.
	Start    Location
	HasStart bool
	// End is the last group sent, when HasEnd; EndFrame, when not 0, is
	// the index in it of the first frame not sent.
	End      uint64
	EndFrame uint64
	HasEnd   bool
	// Finite ends the subscription (ErrWindowDone) once its end was
	// delivered; otherwise the frames past it are skipped until the track
	// ends.
	Finite bool
}

// before reports whether frame index of group seq lies before the
// window, after whether it lies past its end.
func (w *Window) before(seq, index uint64) bool {
	return w.HasStart && (seq < w.Start.Group || (seq == w.Start.Group && index < w.Start.Frame))
}

func (w *Window) after(seq, index uint64) bool {
	return w.HasEnd && (seq > w.End || (seq == w.End && w.EndFrame > 0 && index >= w.EndFrame))
}

// Served is what a served subscription sent.
type Served struct {
	// Last is the newest group whose stream was opened, when Opened.
	Last   uint64
	Opened bool
	// EndErr is the error the track ended with (a track's end, Serve
	// returning nil).
	EndErr error
}

// Serve sends what cons reads of t inside w through sink, in order, each
// frame packaged by enc, each model group on a stream of its own (a new one at a keyframe), until the
// track ends (nil), a Finite window was delivered (ErrWindowDone), ctx
// ends (its error) or the sink fails (its error). A group's stream ends
// as soon as the group is finished and all of it was sent, not when the
// next begins: the subscriber learns at once that it is complete, and a
// paused broadcast holds no stream open. When ctx ends and ending reports
// that the session is ending (not the subscriber leaving), the open group
// is cut (GroupCut) rather than completed.
func Serve(ctx context.Context, t *model.Track, cons *model.Consumer, w Window, enc *Encoder, sink Sink, ending func() bool) (Served, error) {
	var (
		res     Served
		seq     uint64 // the group of the open (or stopped) stream
		open    bool   // a group stream is open
		last    uint64 // index of the last frame written on it
		dropped bool   // the subscriber stopped group seq
		// index is the group-local index of the frame being read, idxGroup
		// its group.
		index, idxGroup uint64
		idxSet          bool
	)
	closeGroup := func(how GroupEnd) {
		if open {
			sink.CloseGroup(how)
			open = false
		}
	}
	defer closeGroup(GroupComplete)
	// failed handles a sink's error: nil to go on.
	failed := func(err error) error {
		if errors.Is(err, context.Canceled) || ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, ErrGroupStopped) {
			dropped = true
			return nil
		}
		return err
	}
	rs := model.NewReadySet()
	cons.Watch(rs)
	var ready []*model.Consumer // reused: Take into nil allocates per wake-up
	for {
		for ev, ok := cons.Next(); ok; ev, ok = cons.Next() {
			switch ev.Kind {
			case model.EventDiscontinuity:
				// A new timeline: the start belongs to the old one. (A
				// marker's discontinuity goes on on the same timeline: the
				// start holds.)
				if ev.Restart {
					w.HasStart, idxSet = false, false
				}
				closeGroup(GroupComplete)
			case model.EventEnd:
				closeGroup(GroupComplete)
				res.EndErr = ev.Err
				return res, nil
			case model.EventFrame:
				if !idxSet || ev.Group != idxGroup {
					index, idxGroup, idxSet = 0, ev.Group, true
				} else {
					index++
				}
				if w.after(ev.Group, index) {
					if w.Finite {
						return res, ErrWindowDone
					}
					if open && ev.Group == seq {
						// Past the end frame: the group's stream is
						// complete.
						closeGroup(GroupComplete)
					}
					continue
				}
				if w.before(ev.Group, index) {
					continue
				}
				if dropped && ev.Group == seq && !ev.Keyframe {
					continue
				}
				dropped = false
				if !open || ev.Group != seq || ev.Keyframe {
					closeGroup(GroupComplete)
					seq = ev.Group
					if err := sink.OpenGroup(seq, index); err != nil {
						if err := failed(err); err != nil {
							return res, err
						}
						continue
					}
					open, res.Last, res.Opened = true, seq, true
				}
				last = index
				if err := sink.WriteObject(enc.Object(ev.Frame), index); err != nil {
					closeGroup(GroupFailed)
					if err := failed(err); err != nil {
						return res, err
					}
				}
			}
		}
		if open && !dropped && groupDone(t, seq, last) {
			closeGroup(GroupComplete)
		}
		if w.Finite && w.HasEnd && idxSet && idxGroup == w.End && groupDone(t, w.End, index) {
			return res, ErrWindowDone
		}
		select {
		case <-rs.Wakeup():
			ready = rs.Take(ready[:0])
		case <-ctx.Done():
			if open && ending != nil && ending() {
				closeGroup(GroupCut)
			}
			return res, ctx.Err()
		}
	}
}

// groupDone reports whether group seq of t is finished with frame index
// last as its last one.
func groupDone(t *model.Track, seq, last uint64) bool {
	g := t.Group(seq)
	if g == nil {
		return false
	}
	frames, finished, _ := g.Frames(int(min(last, math.MaxInt32)) + 1)
	return finished && len(frames) == 0
}

// Edge is a track's live edge: its newest group and how many frames that
// group holds.
type Edge struct {
	Group  uint64
	Frames uint64
	// OK is false before the track has a group.
	OK bool
}

// EdgeOf returns t's live edge.
func EdgeOf(t *model.Track) Edge {
	seq, ok := t.LatestGroup()
	if !ok {
		return Edge{}
	}
	e := Edge{Group: seq, OK: true}
	if g := t.Group(seq); g != nil {
		frames, _, _ := g.Frames(0)
		e.Frames = uint64(len(frames))
	}
	return e
}

// OldestUnexpired returns the oldest group of t at or above floor that a
// subscriber's max age (ms) does not expire (moq-lite-06 section 6.2): a
// group's reach is the first timestamp of the next group, its age the
// newest frame's timestamp minus its reach, and it expires when its age
// reaches maxAge. The latest group never expires; a group whose successor
// has no frame yet does not either. Groups the track no longer holds end
// the walk.
func OldestUnexpired(t *model.Track, floor, maxAge uint64) (uint64, bool) {
	latest, ok := t.LatestGroup()
	if !ok || latest < floor {
		return 0, false
	}
	newest, hasNewest := int64(0), false
	for seq := latest; ; seq-- {
		g := t.Group(seq)
		if g == nil {
			break
		}
		if frames, _, _ := g.Frames(0); len(frames) > 0 {
			newest, hasNewest = frames[len(frames)-1].Timestamp, true
			break
		}
		if seq == 0 {
			break
		}
	}
	first := latest
	for seq := latest; seq > floor; seq-- {
		g := t.Group(seq - 1)
		if g == nil || t.Group(seq) == nil {
			break
		}
		if next, _, _ := t.Group(seq).Frames(0); len(next) > 0 && hasNewest &&
			newest-next[0].Timestamp >= int64(min(maxAge, math.MaxInt64/1000)*1000) {
			break
		}
		first = seq - 1
	}
	return first, true
}

// ServeGroup hands emit the frames of group g from index from on, below
// index to (0: to the group's end), packaged by enc, one object at a time
// (index is its frame's) as the group is written, batchEnd set on the
// last object of what the group holds so far, until the group or the
// range is complete (nil). It returns ErrGroupFailed
// (wrapping the group's error) for a group that ended in an error,
// ErrNotHeld when the finished group holds fewer than from frames, ctx's
// error when it ends first, and emit's error. wake is woken when the
// track changes (a Consumer's ReadySet).
func ServeGroup(ctx context.Context, g *model.Group, wake *model.ReadySet, from, to uint64, enc *Encoder, emit func(o Object, index uint64, batchEnd bool) error) error {
	next := uint64(min(from, math.MaxInt32))
	var ready []*model.Consumer
	for {
		frames, finished, err := g.Frames(int(next))
		if to > 0 && next+uint64(len(frames)) >= to {
			frames = frames[:max(0, int(to)-int(next))]
			finished, err = true, nil
		}
		if finished && len(frames) == 0 && next > 0 && next == from {
			if held, _, _ := g.Frames(0); uint64(len(held)) < from {
				return ErrNotHeld
			}
		}
		for i, f := range frames {
			if err := emit(enc.Object(f), next+uint64(i), i == len(frames)-1); err != nil {
				return err
			}
		}
		next += uint64(len(frames))
		if finished {
			if err != nil {
				return fmt.Errorf("%w: %w", ErrGroupFailed, err)
			}
			return nil
		}
		select {
		case <-wake.Wakeup():
			ready = wake.Take(ready[:0])
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
