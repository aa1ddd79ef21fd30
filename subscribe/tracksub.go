package subscribe

import (
	"context"
	"fmt"
	"sync"
)

// A trackSubscription is one subscription of a track, from the request to
// its end, as both families run it. The family speaks the wire
// (subscribeWire: what it asks, what its publisher answers); this is the
// rest, written once: the track goes live once accepted, its subscription
// is routed its group streams, the group the publisher names starts the
// track or, after a lost connection, fills the gap first (resume.go), the
// publisher's end drains the group streams still on their way, and the
// end undoes it all. Between the publisher's messages it parks (park.go).
type trackSubscription struct {
	rt  *remoteTrack
	ctx context.Context
	c   conn
	w   subscribeWire
	sub *subscription // nil until the publisher accepted the track
	// resumed: the track was live before this subscription (a lost
	// connection, a restart).
	resumed bool
	// then takes the subscription's end once it parked.
	then func(error)
	// detach undoes rt.attach.
	detach func()
	// What the publisher said so far: whether it started the
	// subscription, the first group it named, the end group it announced.
	started            bool
	first, end         uint64
	haveFirst, haveEnd bool

	parking
}

// subscribeWire is one subscription in a family's wire: the requests it
// sends, the publisher's answers read as subscription events, the routing
// of its group streams, and its parked wait.
type subscribeWire interface {
	// accept asks until the publisher accepted the track: moq-lite's
	// TRACK and TRACK_INFO (nothing before lite-05), moq-transport's
	// SUBSCRIBE and SUBSCRIBE_OK. It returns the track's timescale, and
	// whether the acceptance was the publisher's answer to the
	// subscription itself (answered: group streams may wait for the gap
	// fill without a bound).
	accept(ctx context.Context) (timescale uint64, answered bool, err error)
	// route makes the group streams of sub reach it (an error ends the
	// attempt); unroute stops that: no stream joins sub.groups after it
	// returns. unroute may run twice.
	route(sub *subscription) error
	unroute(sub *subscription)
	// request sends what is still to ask once sub is routed (moq-lite's
	// SUBSCRIBE; resumed: the track was live before).
	request(ctx context.Context, sub *subscription, resumed bool) error
	// ready reports whether next returns without waiting.
	ready() bool
	// next returns the publisher's next message as an event; an error
	// that is neither the attempt's end nor the connection's loss goes to
	// failed.
	next() (subEvent, error)
	// failed is the subscription's end after next failed with err;
	// started says the publisher had started it.
	failed(err error, started bool) error
	// cancel withdraws the subscription once the attempt ended.
	cancel()
	// release undoes what the family set up, once the subscription ended
	// with err (done: the publisher ended it).
	release(err error, done bool)
	// wait blocks until next has something to return, or settle's wake
	// ended it (woken); resettle, after a settle, says whether nothing
	// but the wake happened, so the wait parks afresh; wake is settle's.
	wait() (woken bool)
	resettle(woken bool) bool
	wake()
}

// subEvent is one message of a publisher about a subscription.
type subEvent struct {
	kind subEventKind
	// start says how the publisher started the subscription (evStart).
	start subStart
	// group is the first group named (evStart: when named) or the end
	// group announced (evEnd).
	group uint64
	named bool
	// streams is how many group streams the publisher sent in all
	// (evDone; 0: it did not count), err its verdict (nil: a clean end).
	streams uint64
	err     error
}

type subEventKind uint8

const (
	evOther subEventKind = iota // nothing the subscription acts on (the family logged it)
	evStart                     // the subscription started
	evEnd                       // the publisher announced the end group
	evDone                      // the publisher ended the subscription
)

// subStart is how a publisher started a subscription.
type subStart uint8

const (
	// startNamed: it named the first group (moq-lite's SUBSCRIBE_OK,
	// moq-transport's Largest): readers start there, and a resumed track
	// fills the gap up to it first.
	startNamed subStart = iota
	// startAck: moq-lite-01..04's acknowledgment, naming the first group
	// or not; no FETCH fills a gap on those versions.
	startAck
	// startUnnamed: moq-transport's SUBSCRIBE_OK without Largest (nothing
	// published yet): a resumed track starts a new timeline.
	startUnnamed
)

// subscribe runs one subscription of rt on c until it ends: nil for a
// clean end by the publisher, an error otherwise. Once subscribed it parks
// between the publisher's messages: then subscribe returns parked, and the
// subscription's end goes to resumed instead, on the goroutine that read
// it.
func (rt *remoteTrack) subscribe(ctx context.Context, cancel context.CancelCauseFunc, c conn, resumed func(error)) (err error, parked bool) {
	ts := &trackSubscription{rt: rt, ctx: ctx, c: c, then: resumed}
	ts.w = c.family().newSubscription(ctx, rt)
	timescale, answered, err := ts.w.accept(ctx)
	if err != nil {
		return ts.finish(err, false), false
	}
	ts.resumed = rt.live
	rt.live = true
	// One context per attempt, not a child context for the subscription,
	// which cost ~400 B per track: the subscription ends with the
	// attempt, and ends it with cancel (a drain that gives up).
	sub := &subscription{rt: rt, timescale: timescale, ctx: ctx, cancel: cancel, waits: ts, router: ts.w,
		arrived: make(chan struct{}, 1), started: make(chan struct{})}
	// An answered subscription's group streams wait for the start
	// without a bound (a resume fills the gap first).
	sub.gotOK.Store(answered)
	ts.sub = sub
	if err := ts.w.route(sub); err != nil {
		return ts.finish(err, false), false
	}
	ts.detach = rt.attach(c, timescale)
	if err := ts.w.request(ctx, sub, ts.resumed); err != nil {
		return ts.finish(err, false), false
	}
	return ts.events()
}

// events reads and applies the publisher's messages. It returns the
// subscription's end, or parked once none is waiting.
func (ts *trackSubscription) events() (err error, parked bool) {
	for {
		if !ts.w.ready() {
			ts.park()
			return nil, true
		}
		ev, err := ts.w.next()
		if err != nil {
			return ts.finish(ts.failed(err), false), false
		}
		switch ev.kind {
		case evStart:
			ts.startWith(ev)
		case evEnd:
			ts.end, ts.haveEnd = ev.group, true
			ts.rt.rb.s.log.Debug("moq: subscription end announced", "broadcast", ts.rt.rb.path, "track", ts.rt.name, "end", ev.group)
		case evDone:
			return ts.finish(ts.done(ev), true), false
		}
	}
}

// startWith starts the subscription as the publisher said.
func (ts *trackSubscription) startWith(ev subEvent) {
	rt, sub := ts.rt, ts.sub
	ts.started = true
	switch ev.start {
	case startNamed:
		ts.first, ts.haveFirst = ev.group, true
		sub.gotOK.Store(true)
		if ts.resumed {
			// The groups missed since the connection was lost come
			// first, or the track starts a new timeline.
			rt.resume(ts.ctx, ts.c, sub.timescale, ts.first)
			rt.releaseAtLive(ts.first, sub.burstDone)
		} else {
			// Groups travel on separate streams: the first one may
			// land after the second. Readers start at the group
			// named here.
			rt.track.SetStart(ts.first)
		}
	case startAck:
		// The reference names no start group here (it sends none; our
		// publisher does when it knows it), so readers start where the
		// first group lands otherwise.
		if ev.named {
			ts.first, ts.haveFirst = ev.group, true
			rt.track.SetStart(ts.first)
		}
		if ts.resumed {
			// No FETCH to fill the gap on these versions: the hold the
			// lost connection took ends once the live groups are in
			// (every one from 0 when the start is not named), as after
			// a SUBSCRIBE_OK. A hold never released would keep the
			// track's reader from ever skipping a group the loss cut.
			rt.releaseAtLive(ts.first, sub.burstDone)
		}
	case startUnnamed:
		if ts.resumed {
			// Nothing to fill the gap up to: a new timeline (its cut
			// groups end, it gets a discontinuity, its hold ends).
			rt.newTimeline()
			rt.releaseAtLive(0, nil)
		}
	}
	sub.markStarted()
	rt.rb.s.log.Debug("moq: subscribed", "broadcast", rt.rb.path, "track", rt.name, "group", ev.group, "named", ev.named || ev.start == startNamed)
}

// failed is how the subscription ends when reading the publisher's
// messages failed with err.
func (ts *trackSubscription) failed(err error) error {
	switch {
	case ts.ctx.Err() != nil:
		ts.w.cancel()
		return context.Cause(ts.ctx)
	case connGone(ts.c, err):
		return connLoss(ts.c, err)
	}
	return ts.w.failed(err, ts.started)
}

// done is how the subscription ends when the publisher ended it: once the
// group streams still on their way arrived (all it counted, when it
// counted; every group it bounded; else until they stop coming), with the
// publisher's verdict.
func (ts *trackSubscription) done(ev subEvent) error {
	ts.sub.markStarted()
	if ev.streams > 0 {
		ts.sub.waitStreams(ts.ctx, ev.streams)
	}
	ts.sub.drain(ts.ctx, ts.first, ts.end, ts.haveFirst && ts.haveEnd)
	return ev.err
}

// finish undoes what subscribe set up once the subscription ended with
// err (done: the publisher ended it), and returns err.
func (ts *trackSubscription) finish(err error, done bool) error {
	ts.w.release(err, done)
	if ts.detach != nil {
		ts.detach()
	}
	if sub := ts.sub; sub != nil {
		sub.markStarted()
		// Group streams that stop because the connection is gone are
		// left open for the resumed subscription (resume.go), also
		// when the subscription saw the loss before the connection
		// did. A reset that says the peer's session is ending counts
		// as the loss it announces.
		if err != nil && (connGone(ts.c, err) || sessionEndingReset(ts.c, err)) {
			sub.cancel(fmt.Errorf("%w: %w", errConnLost, err))
		} else {
			sub.cancel(nil)
		}
		ts.w.unroute(sub)
	}
	return err
}

// park waits for the publisher's next message on a new goroutine and
// returns. The caller must not touch the subscription afterwards: the
// message may already be read.
func (ts *trackSubscription) park() {
	ts.parking.begin()
	go ts.wait()
}

// wait is the parked goroutine: the family's wait is all it does before a
// message wakes it, so its stack stays the one it started with.
func (ts *trackSubscription) wait() { ts.woken(ts.w.wait()) }

// woken goes on with the subscription after its parked wait ended
// (woken: by settle's wake), and with the track once it ends.
//
//go:noinline
func (ts *trackSubscription) woken(woken bool) {
	if settling := ts.woke(); settling != nil {
		if ts.w.resettle(woken) {
			ts.park() // afresh; this goroutine ends
			settling.Done()
			return
		}
		settling.Done()
	}
	if err, parked := ts.events(); !parked {
		ts.then(err)
	}
}

// settle wakes the parked wait through the family's wake (see settler).
func (ts *trackSubscription) settle(settled *sync.WaitGroup) { ts.renew(settled, ts.w.wake) }
