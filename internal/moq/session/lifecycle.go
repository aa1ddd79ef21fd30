package session

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
)

// Track is the side of a subscribed track that outlives its
// subscriptions, as one subscription attempt on one connection sees it.
// S is the family-facing subscription (the session's, embedding
// Subscription) that Wire routes its group streams to.
type Track[S any] interface {
	// GoLive marks the track live (accepted by its publisher once) and
	// reports whether it was before: a resumed track.
	GoLive() (wasLive bool)
	// NewSubscription makes the attempt's subscription, Init-ed, with
	// ctx and cancel the attempt's: one context per attempt, not a child
	// per subscription (~400 B per track).
	NewSubscription(ctx context.Context, cancel context.CancelCauseFunc, timescale uint64, waits Settler) (S, *Subscription)
	// Attach records the subscription as the track's current one (a
	// backfill FETCHes on its connection) and returns the detach.
	Attach(timescale uint64) (detach func())
	// Start makes readers start at group first.
	Start(first uint64)
	// Resume fills the gap a lost connection left up to group first
	// (FETCH), or starts a new timeline when it cannot.
	Resume(ctx context.Context, timescale, first uint64)
	// ReleaseAtLive ends the hold the lost connection took once the live
	// groups from first are in (burstDone: the group streams that waited
	// made their groups).
	ReleaseAtLive(first uint64, burstDone func() bool)
	// NewTimeline ends the groups a lost connection cut and starts a new
	// timeline.
	NewTimeline()
	// Gone reports whether err says the connection is gone, Loss why,
	// and Cut whether err leaves the group streams cut (the connection
	// gone, or the peer's session ending): a resumed subscription
	// completes them.
	Gone(err error) bool
	Loss(err error) error
	Cut(err error) bool
	// Logger and Names are for the lifecycle's lines.
	Logger() *slog.Logger
	Names() (broadcast, track string)
}

// Wire is one subscription in a family's wire: the requests it sends, the
// publisher's answers read as events, the routing of its group streams,
// and its parked wait. Subscribe runs the rest.
type Wire[S any] interface {
	// Accept asks until the publisher accepted the track: moq-lite's
	// TRACK and TRACK_INFO (nothing before lite-05), moq-transport's
	// SUBSCRIBE and SUBSCRIBE_OK. It returns the track's timescale, and
	// whether that was the publisher's answer to the subscription itself.
	Accept(ctx context.Context) (timescale uint64, answered bool, err error)
	// Route makes the group streams of sub reach it (an error ends the
	// attempt); Unroute stops that: no stream joins its Groups after it
	// returns. Unroute may run twice.
	Route(sub S) error
	Unroute(sub S)
	// Request sends what is still to ask once sub is routed (moq-lite's
	// SUBSCRIBE; resumed: the track was live before).
	Request(ctx context.Context, sub S, resumed bool) error
	// Ready reports whether Next returns without waiting.
	Ready() bool
	// Next returns the publisher's next message as an event; an error
	// that is neither the attempt's end nor the connection's loss goes to
	// Failed.
	Next() (Event, error)
	// Failed is the subscription's end after Next failed with err;
	// started says the publisher had started it.
	Failed(err error, started bool) error
	// Cancel withdraws the subscription once the attempt ended.
	Cancel()
	// Release undoes what the family set up, once the subscription ended
	// with err (done: the publisher ended it).
	Release(err error, done bool)
	// Wait blocks until Next has something to return, or settle's wake
	// ended it (woken); Resettle, after a settle, says whether nothing
	// but the wake happened, so the wait parks afresh; Wake is settle's.
	Wait() (woken bool)
	Resettle(woken bool) bool
	Wake()
}

// Event is one message of a publisher about a subscription.
type Event struct {
	Kind EventKind
	// Start says how the publisher started the subscription (EventStart).
	Start StartKind
	// Group is the first group named (EventStart, when Named or
	// StartNamed) or the end group announced (EventEnd).
	Group uint64
	Named bool
	// Streams is how many group streams the publisher sent in all
	// (EventDone; 0: it did not count), Err its verdict (nil: a clean
	// end).
	Streams uint64
	Err     error
}

// EventKind is what an Event says.
type EventKind uint8

const (
	EventOther EventKind = iota // nothing the subscription acts on (the family logged it)
	EventStart                  // the subscription started
	EventEnd                    // the publisher announced the end group
	EventDone                   // the publisher ended the subscription
)

// StartKind is how a publisher started a subscription.
type StartKind uint8

const (
	// StartNamed: it named the first group (moq-lite's SUBSCRIBE_OK,
	// moq-transport's Largest): readers start there, and a resumed track
	// fills the gap up to it first.
	StartNamed StartKind = iota
	// StartAck: moq-lite-01..04's acknowledgment, naming the first group
	// or not; no FETCH fills a gap on those versions.
	StartAck
	// StartUnnamed: moq-transport's SUBSCRIBE_OK without Largest
	// (nothing published yet): a resumed track starts a new timeline.
	StartUnnamed
)

// Subscribe runs one subscription of track over w until it ends, as both
// families run one: the track goes live once accepted, its subscription is
// routed its group streams, the group the publisher names starts the
// track or, after a lost connection, fills the gap first, the publisher's
// end drains the group streams still on their way, and the end undoes it
// all. It returns nil for a clean end by the publisher, an error
// otherwise. Between the publisher's messages it parks: then Subscribe
// returns parked, and the subscription's end goes to then instead, on the
// goroutine that read it. ctx and cancel are the attempt's.
func Subscribe[S any](ctx context.Context, cancel context.CancelCauseFunc, track Track[S], w Wire[S], then func(error)) (err error, parked bool) {
	r := &run[S]{track: track, w: w, ctx: ctx, then: then}
	timescale, answered, err := w.Accept(ctx)
	if err != nil {
		return r.finish(err, false), false
	}
	r.resumed = track.GoLive()
	s, sub := track.NewSubscription(ctx, cancel, timescale, r)
	// An answered subscription's group streams wait for the start
	// without a bound (a resume fills the gap first).
	sub.GotOK.Store(answered)
	r.s, r.sub = s, sub
	if err := w.Route(s); err != nil {
		return r.finish(err, false), false
	}
	r.detach = track.Attach(timescale)
	if err := w.Request(ctx, s, r.resumed); err != nil {
		return r.finish(err, false), false
	}
	return r.events()
}

// run is one subscription that Subscribe runs.
type run[S any] struct {
	track Track[S]
	w     Wire[S]
	ctx   context.Context
	s     S
	sub   *Subscription // nil until the publisher accepted the track
	// resumed: the track was live before this subscription (a lost
	// connection, a restart).
	resumed bool
	// then takes the subscription's end once it parked.
	then   func(error)
	detach func()
	// What the publisher said so far: whether it started the
	// subscription, the first group it named, the end group it announced.
	started            bool
	first, end         uint64
	haveFirst, haveEnd bool

	parking
}

// events reads and applies the publisher's messages. It returns the
// subscription's end, or parked once none is waiting.
func (r *run[S]) events() (err error, parked bool) {
	for {
		if !r.w.Ready() {
			r.park()
			return nil, true
		}
		ev, err := r.w.Next()
		if err != nil {
			return r.finish(r.failed(err), false), false
		}
		switch ev.Kind {
		case EventStart:
			r.startWith(ev)
		case EventEnd:
			r.end, r.haveEnd = ev.Group, true
			broadcast, track := r.track.Names()
			r.track.Logger().Debug("moq: subscription end announced", "broadcast", broadcast, "track", track, "end", ev.Group)
		case EventDone:
			return r.finish(r.done(ev), true), false
		}
	}
}

// startWith starts the subscription as the publisher said.
func (r *run[S]) startWith(ev Event) {
	t, sub := r.track, r.sub
	r.started = true
	switch ev.Start {
	case StartNamed:
		r.first, r.haveFirst = ev.Group, true
		sub.GotOK.Store(true)
		if r.resumed {
			// The groups missed since the connection was lost come
			// first, or the track starts a new timeline.
			t.Resume(r.ctx, sub.Timescale, r.first)
			t.ReleaseAtLive(r.first, sub.BurstDone)
		} else {
			// Groups travel on separate streams: the first one may
			// land after the second. Readers start at the group
			// named here.
			t.Start(r.first)
		}
	case StartAck:
		// The reference names no start group here (it sends none; our
		// publisher does when it knows it), so readers start where the
		// first group lands otherwise.
		if ev.Named {
			r.first, r.haveFirst = ev.Group, true
			t.Start(r.first)
		}
		if r.resumed {
			// No FETCH to fill the gap on these versions: the hold the
			// lost connection took ends once the live groups are in
			// (every one from 0 when the start is not named), as after
			// a named start. A hold never released would keep the
			// track's reader from ever skipping a group the loss cut.
			t.ReleaseAtLive(r.first, sub.BurstDone)
		}
	case StartUnnamed:
		if r.resumed {
			// Nothing to fill the gap up to: a new timeline (its cut
			// groups end, it gets a discontinuity, its hold ends).
			t.NewTimeline()
			t.ReleaseAtLive(0, nil)
		}
	}
	sub.MarkStarted()
	broadcast, track := t.Names()
	t.Logger().Debug("moq: subscribed", "broadcast", broadcast, "track", track, "group", ev.Group, "named", ev.Named || ev.Start == StartNamed)
}

// failed is how the subscription ends when reading the publisher's
// messages failed with err.
func (r *run[S]) failed(err error) error {
	switch {
	case r.ctx.Err() != nil:
		r.w.Cancel()
		return context.Cause(r.ctx)
	case r.track.Gone(err):
		return r.track.Loss(err)
	}
	return r.w.Failed(err, r.started)
}

// done is how the subscription ends when the publisher ended it: once the
// group streams still on their way arrived (all it counted, when it
// counted; every group it bounded; else until they stop coming), with the
// publisher's verdict.
func (r *run[S]) done(ev Event) error {
	r.sub.MarkStarted()
	if ev.Streams > 0 {
		r.sub.WaitStreams(r.ctx, ev.Streams)
	}
	r.sub.Drain(r.ctx, r.first, r.end, r.haveFirst && r.haveEnd)
	return ev.Err
}

// finish undoes what Subscribe set up once the subscription ended with err
// (done: the publisher ended it), and returns err.
func (r *run[S]) finish(err error, done bool) error {
	r.w.Release(err, done)
	if r.detach != nil {
		r.detach()
	}
	if sub := r.sub; sub != nil {
		sub.MarkStarted()
		// Group streams that stop because the connection is gone are
		// left open for the resumed subscription, also when the
		// subscription saw the loss before the connection did. A
		// reset that says the peer's session is ending counts as the
		// loss it announces.
		if err != nil && r.track.Cut(err) {
			sub.Cancel(fmt.Errorf("%w: %w", ErrConnLost, err))
		} else {
			sub.Cancel(nil)
		}
		r.w.Unroute(r.s)
	}
	return err
}

// park waits for the publisher's next message on a new goroutine and
// returns. The caller must not touch the subscription afterwards: the
// message may already be read.
func (r *run[S]) park() {
	r.parking.begin()
	go r.wait()
}

// wait is the parked goroutine: the family's wait is all it does before a
// message wakes it, so its stack stays the one it started with.
func (r *run[S]) wait() { r.woken(r.w.Wait()) }

// woken goes on with the subscription after its parked wait ended
// (woken: by settle's wake), and with the track once it ends.
//
//go:noinline
func (r *run[S]) woken(woken bool) {
	if settling := r.woke(); settling != nil {
		if r.w.Resettle(woken) {
			r.park() // afresh; this goroutine ends
			settling.Done()
			return
		}
		settling.Done()
	}
	if err, parked := r.events(); !parked {
		r.then(err)
	}
}

// Settle wakes the parked wait through the family's Wake (see Settler).
func (r *run[S]) Settle(settled *sync.WaitGroup) { r.renew(settled, r.w.Wake) }
