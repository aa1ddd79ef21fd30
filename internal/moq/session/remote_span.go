package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/moq-export/moq-export/model"
)

// A span subscription takes a FETCH's place where the peer serves none:
// after a publisher restart (fillRestart) the groups of its new timeline
// before the live one are asked again by a second SUBSCRIBE of the track,
// bounded to them (moq-lite's Group Start and Group End, moq-transport's
// absolute range), beside the live
// subscription, whose groups wait meanwhile. Its groups go into a track
// of its own, and the core inserts them into the real one, oldest first,
// before the live groups, as it does fetched ones: no group twice, none
// out of order. The reference publisher (@moq/net) serves no FETCH but
// replays, to a new subscription, the groups it still holds (its latency
// window, 5 s by default) from the start group on.

// GroupSpan is what a span subscription asks: groups From to To
// (inclusive), reaching back at most MaxAge (moq-lite-06's max age; 0
// on a live subscription).
type GroupSpan struct {
	From, To uint64
	MaxAge   time.Duration
}

// span is a span subscription's state, on its own Remote.
type span struct {
	GroupSpan
	mu    sync.Mutex
	first uint64 // the first group the publisher named (named)
	named bool
	// ended: the publisher ended the span, after opening streams group
	// streams (moq-transport's PUBLISH_DONE, SpanEnded).
	ended   bool
	streams uint64
}

// SpanEnded records, for a span subscription, that the publisher ended it
// after opening streams group streams (moq-transport's PUBLISH_DONE with
// its Stream Count): once that many of the span's groups are in, nothing
// more is coming. moq-transport's SUBSCRIBE_OK names the publisher's
// newest group, not the first one an absolute range delivers, so that
// count and the range's end group are how such a span's end is known.
func (rt *Remote) SpanEnded(streams uint64) {
	if s := rt.span; s != nil {
		s.mu.Lock()
		s.ended, s.streams = true, streams
		s.mu.Unlock()
	}
}

// Span returns what the track's subscription asks when it is a span
// subscription (ok), for the family's SUBSCRIBE.
func (rt *Remote) Span() (s GroupSpan, ok bool) {
	if rt.span == nil {
		return GroupSpan{}, false
	}
	return rt.span.GroupSpan, true
}

// started records the first group the publisher named.
func (s *span) started(first uint64) {
	s.mu.Lock()
	s.first, s.named = first, true
	s.mu.Unlock()
}

func (s *span) isNamed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.named
}

// spanPoll is how often subscribeSpan looks at what came: rare (a
// restart of a peer without FETCH) and short, so a poll.
const spanPoll = 5 * time.Millisecond

// subscribeSpan subscribes groups [from, to] of the track on c, beside
// its live subscription, and returns the frames of those that came,
// newest first from group to, as far as they run without a gap (got[i]
// is group to-i). It waits until every group from the first one the
// publisher named (or from) to to is complete, or the publisher ended
// the subscription, or ctx ends, then unsubscribes. err says why nothing
// came (the peer refused the subscription, the connection went).
func (rt *Remote) subscribeSpan(ctx context.Context, c Family, sp GroupSpan) (got [][]model.Frame, err error) {
	tr := model.NewTrack(rt.Name)
	tr.SetKeepGroups(int(sp.To-sp.From) + 2)
	s := &span{GroupSpan: sp}
	other := &Remote{Host: rt.Host, Broadcast: rt.Broadcast, Name: rt.Name, Track: tr, Pack: rt.Pack, Exit: func() {}, span: s}
	actx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(c.Context(), func() { cancel(c.Cause()) })
	defer stop()
	ended := make(chan error, 1)
	w := c.NewSubscription(actx, other)
	go func() {
		err, parked := Subscribe(actx, cancel, w, w, func(err error) { ended <- err })
		if !parked {
			ended <- err
		}
	}()
	tick := time.NewTicker(spanPoll)
	defer tick.Stop()
	// A publisher that holds none of the span may never name a group
	// (@moq/net waits for one at or below the end), nor send one (a
	// moq-transport publisher, which names none).
	unnamed := time.Now().Add(rt.Host.Config().RequestTimeout)
	done := false
	for !done {
		select {
		case err = <-ended:
			done = true
			ended <- err // read again below
		case <-actx.Done():
			done = true
		case now := <-tick.C:
			done = s.complete(tr) || s.over(tr) || (!s.isNamed() && !s.arrived(tr) && now.After(unnamed))
		}
	}
	cancel(errSpanDone)
	err = <-ended
	if errors.Is(err, errSpanDone) || errors.Is(err, context.Canceled) {
		err = nil
	}
	for seq := sp.To; seq >= sp.From; seq-- {
		g := tr.Group(seq)
		if g == nil {
			break
		}
		frames, finished, gerr := g.Frames(0)
		if !finished || gerr != nil || len(frames) == 0 {
			break
		}
		got = append(got, frames)
		if seq == 0 {
			break
		}
	}
	tr.Close(nil)
	if len(got) == 0 && err == nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	if len(got) == 0 && err != nil {
		return nil, fmt.Errorf("SUBSCRIBE %q/%q groups %d-%d: %w", rt.Broadcast, rt.Name, sp.From, sp.To, err)
	}
	return got, nil
}

// errSpanDone ends a span subscription that got what it asked.
var errSpanDone = errors.New("moq: span subscription done")

// complete reports whether tr holds every group of the span from the
// first one the publisher named on (From when it named none), each
// complete.
func (s *span) complete(tr *model.Track) bool {
	s.mu.Lock()
	from, named := s.first, s.named
	s.mu.Unlock()
	if !named {
		from = s.From
	}
	from = max(from, s.From)
	for seq := from; seq <= s.To; seq++ {
		g := tr.Group(seq)
		if g == nil {
			return false
		}
		if _, finished, _ := g.Frames(1 << 30); !finished {
			return false
		}
	}
	return true
}

// over reports whether nothing more of the span is coming: the publisher
// ended it and as many of its groups as it opened streams for are in and
// complete, or a group past its end came (a publisher that does not honour
// the range's end: what it sends from then on is not the span's).
func (s *span) over(tr *model.Track) bool {
	if g := tr.NewestGroup(); g != nil && g.Sequence() > s.To {
		return true
	}
	s.mu.Lock()
	ended, streams := s.ended, s.streams
	s.mu.Unlock()
	if !ended {
		return false
	}
	n := uint64(0)
	for seq := s.From; seq <= s.To && n < streams; seq++ {
		if g := tr.Group(seq); g != nil {
			if _, finished, _ := g.Frames(1 << 30); !finished {
				return false
			}
			n++
		}
	}
	return n >= streams
}

// arrived reports whether a group of the span came.
func (s *span) arrived(tr *model.Track) bool {
	g := tr.NewestGroup()
	return g != nil && g.Sequence() >= s.From
}
