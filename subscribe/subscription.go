package subscribe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/varint"
)

// subscription is one SUBSCRIBE on one connection.
type subscription struct {
	id        uint64
	rt        *remoteTrack
	timescale uint64
	groups    sync.WaitGroup
	// ctx is the subscription attempt's: it ends with the attempt, or
	// when the drain gives up on the group streams still open (cancel);
	// group readers stop reading then.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// groupStops ends the group streams' reads when ctx ends.
	groupStops session.StopSet[recvStream]

	// started is closed once SUBSCRIBE_OK fixed the first group (or the
	// subscription ended without it): group streams that land earlier
	// wait for it before they become model groups, so that readers start
	// at the group it names and not at whichever stream landed first.
	started     chan struct{}
	startedOnce sync.Once
	// waiting holds the sequences of the group streams waiting for
	// started whose group is not created yet (under mu): a resume
	// releases them all at once (see releaseAtLive).
	waiting map[uint64]bool
	// gotOK is set at SUBSCRIBE_OK: from then on group streams wait for
	// started without a bound (a resume fills the gap first).
	gotOK atomic.Bool
	// madeGroup is set once a group stream made its model group: from
	// then on they no longer wait for each other (streamOrder).
	madeGroup atomic.Bool

	mu      sync.Mutex
	seen    session.GroupWindow // group sequences received
	arrived chan struct{}       // signalled when a group arrives

	// forget, when set, replaces Session.unregister (moq-transport
	// subscriptions are routed by track alias).
	forget func()
	// waits is the SUBSCRIBE whose parked waits Session.settle parks
	// afresh (park.go).
	waits settler
}

// markStarted releases the group streams waiting for SUBSCRIBE_OK.
func (sub *subscription) markStarted() {
	sub.startedOnce.Do(func() { close(sub.started) })
}

// waitStarted holds a group stream that landed before SUBSCRIBE_OK until
// the start group is known. A publisher sends SUBSCRIBE_OK no later than
// its first group, but on another stream, so the group may be read first;
// a peer that never sends it is waited for at most the request timeout.
func (sub *subscription) waitStarted(seq uint64) {
	select {
	case <-sub.started:
		return
	default:
	}
	sub.mu.Lock()
	if sub.waiting == nil {
		sub.waiting = map[uint64]bool{}
	}
	sub.waiting[seq] = true
	sub.mu.Unlock()
	log := sub.rt.rb.s.log
	log.Debug("moq: group landed before SUBSCRIBE_OK, waiting for it", "track", sub.rt.name, "group", seq)
	t := time.NewTimer(sub.rt.rb.s.opts.RequestTimeout)
	defer t.Stop()
	select {
	case <-sub.started:
	case <-sub.ctx.Done():
	case <-t.C:
		if sub.gotOK.Load() {
			select {
			case <-sub.started:
			case <-sub.ctx.Done():
			}
			return
		}
		log.Warn("moq: no SUBSCRIBE_OK before the group streams, reading them anyway", "track", sub.rt.name)
		sub.markStarted()
	}
}

// created notes that the stream of group seq made its model group (or
// gave up).
func (sub *subscription) created(seq uint64) {
	sub.mu.Lock()
	delete(sub.waiting, seq)
	sub.mu.Unlock()
}

// burstDone reports whether every group stream that waited for
// SUBSCRIBE_OK made its group.
func (sub *subscription) burstDone() bool {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return len(sub.waiting) == 0
}

// groupArrived records group seq.
func (sub *subscription) groupArrived(seq uint64) {
	sub.mu.Lock()
	sub.seen.Add(seq)
	sub.mu.Unlock()
	select {
	case sub.arrived <- struct{}{}:
	default:
	}
}

// drainQuiet is how long a drain without the subscription's bounds (moq-lite
// before 05 announces no end group) waits for another group stream: silence
// is the only sign that the last one came. Group streams sent before the
// publisher's FIN are in this side's QUIC stack by then, but being accepted
// takes a goroutine's scheduling: at 100 ms, TestEveryVersionInBothRoles
// lost whole groups on moq-lite-01..04 in most -race runs at load 25 (the
// streams came after the subscription was gone), and none in six runs at
// 1 s. The cost is a track end that many seconds later on those versions;
// streams already accepted and not yet made into groups extend the wait
// (see drain), and the drain grace bounds it.
const drainQuiet = time.Second

// drain waits, after the publisher's FIN, for the group streams still in
// flight: every group in [start, end) when both are known, otherwise until
// no new group arrived for a short while. Then it unregisters the
// subscription, so that no group stream joins the wait for those already
// reading, and waits for those. The whole wait is bounded by the drain
// grace period: group streams still open then get STOP_SENDING and their
// model groups end as truncated (ErrTruncated).
func (sub *subscription) drain(ctx context.Context, start, end uint64, bounded bool) {
	grace, stop := context.WithTimeout(ctx, sub.rt.rb.s.opts.drainGrace)
	defer stop()
	for {
		sub.mu.Lock()
		complete := false
		if bounded {
			complete = true
			for seq := start; seq < end && seq-start < 1<<16; seq++ {
				if !sub.seen.Has(seq) {
					complete = false
					break
				}
			}
		}
		sub.mu.Unlock()
		if complete {
			break
		}
		quiet := time.NewTimer(drainQuiet)
		if bounded {
			quiet.Stop()
		}
		select {
		case <-sub.arrived:
			quiet.Stop()
			continue
		case <-quiet.C:
			// Streams accepted but not yet made into groups may be
			// this subscription's: a quiet spell is only one while
			// the connection has none.
			if sub.rt.rb.s.uniOrder.Load().pending() > 0 {
				continue
			}
		case <-grace.Done():
			quiet.Stop()
		}
		break
	}
	if sub.forget != nil {
		sub.forget()
	} else {
		sub.rt.rb.s.unregister(sub)
	}
	done := make(chan struct{})
	go func() {
		sub.groups.Wait()
		close(done)
	}()
	select {
	case <-done:
		return
	case <-grace.Done():
	}
	if ctx.Err() == nil {
		sub.rt.rb.s.log.Warn("moq: group streams still open after the subscription ended, stopped",
			"broadcast", sub.rt.rb.path, "track", sub.rt.name)
	}
	sub.cancel(fmt.Errorf("%w: stream still open %v after the subscription ended", ErrTruncated, sub.rt.rb.s.opts.drainGrace))
	<-done
}

// attach records c and timescale as the track's current subscription
// (backfills FETCH on it) and returns the detach to defer. With
// newTimeline (a resumed subscription that does not fill the gap) the track
// starts a new timeline: its cut groups end, it gets a discontinuity, and
// its hold ends.
func (rt *remoteTrack) attach(c conn, timescale uint64, newTimeline bool) (detach func()) {
	rt.mu.Lock()
	rt.conn, rt.timescale = c, timescale
	rt.subGen++
	rt.mu.Unlock()
	if newTimeline {
		rt.newTimeline()
		rt.releaseAtLive(0, nil)
	}
	return func() {
		rt.mu.Lock()
		rt.conn = nil
		rt.mu.Unlock()
	}
}

// unregister removes sub from the session: group streams for it are
// refused from now on.
func (s *Session) unregister(sub *subscription) {
	s.mu.Lock()
	if s.subs[sub.id] == sub {
		delete(s.subs, sub.id)
	}
	s.mu.Unlock()
}

// subscribe runs TRACK and SUBSCRIBE on c until the subscription ends:
// nil for a clean end by the publisher, an error otherwise. A moq-lite
// subscription parks between responses (liteSubscription.park): then
// subscribe returns parked, and the subscription's end is handed to
// resumed instead, on the goroutine that read it.
func (rt *remoteTrack) subscribe(ctx context.Context, cancel context.CancelCauseFunc, c conn, resumed func(error)) (err error, parked bool) {
	return c.family().openSubscription(ctx, cancel, rt, resumed)
}

// subscribeLite is subscribe on moq-lite.
func (rt *remoteTrack) subscribeLite(ctx context.Context, cancel context.CancelCauseFunc, c conn, resumed func(error)) (err error, parked bool) {
	v := connVersion(c)
	// Without a Track stream (lite-01..04) nothing tells the timescale;
	// frames carry no wire timestamp there either, so raw tracks get 0.
	timescale := uint64(publishTimescale)
	if v.TrackInfo {
		info, err := rt.trackInfo(ctx, c)
		if err != nil {
			return err, false
		}
		timescale = info.Timescale
	}
	ls := &liteSubscription{rt: rt, ctx: ctx, c: c, v: v, then: resumed,
		st: subscribeState{resumed: rt.live}}
	rt.live = true
	ls.sub = rt.register(ctx, cancel, timescale, ls)
	// A resumed subscription fills the gap at SUBSCRIBE_OK (resume.go).
	ls.detach = rt.attach(c, timescale, false)
	var floor resumeFloor
	if ls.st.resumed && v.FrameRange {
		floor = rt.floorOfCut(ctx, c, timescale)
	}
	ls.str, err = rt.sendSubscribe(ctx, c, v, ls.sub.id, ls.st.resumed, floor)
	if err != nil {
		return ls.end(err), false
	}
	// Unsubscribe with a FIN when the attempt is cancelled (the @moq/net
	// publisher only stops on a FIN).
	str := ls.str
	ls.stopCancel = context.AfterFunc(ctx, func() {
		str.Close()
		str.SetReadDeadline(time.Now())
	})
	ls.r = bufio.NewReaderSize(str, subscribeReadBuffer)
	return ls.readResponses(nil)
}

// A liteSubscription is one moq-lite SUBSCRIBE on its stream, from the
// request to its end.
//
// Between responses it parks (park.go).
type liteSubscription struct {
	rt  *remoteTrack
	ctx context.Context
	c   conn
	v   *wire.Version
	sub *subscription
	str bidiStream
	r   *bufio.Reader
	st  subscribeState
	// then takes the subscription's end once it parked.
	then func(error)
	// detach and stopCancel undo what subscribe set up.
	detach     func()
	stopCancel func() bool

	parking
}

// readResponses reads and applies the subscription's responses, waitErr
// being what the parked wait for the next one failed with. It returns the
// subscription's end, or parked once none is buffered.
func (ls *liteSubscription) readResponses(waitErr error) (err error, parked bool) {
	for {
		var resp wire.SubscribeResponse
		err := waitErr
		if err == nil && ls.r.Buffered() == 0 {
			ls.park()
			return nil, true
		}
		if err == nil {
			resp, err = wire.ReadSubscribeResponseFor(ls.r, ls.v)
		}
		if err != nil {
			return ls.end(ls.rt.responsesEnded(ls.ctx, ls.c, ls.sub, ls.str, &ls.st, err)), false
		}
		ls.rt.response(ls.ctx, ls.c, ls.v, ls.sub, &ls.st, &resp)
	}
}

// end undoes what subscribe set up once the subscription ended with err,
// and returns err.
func (ls *liteSubscription) end(err error) error {
	if ls.stopCancel != nil {
		ls.stopCancel()
	}
	ls.detach()
	ls.sub.markStarted()
	// Group streams that stop because the connection is gone are left
	// open for the resumed subscription (resume.go), also when the
	// subscribe stream saw the loss before the connection did.
	// A reset that says the peer's session is ending counts as the loss
	// it announces.
	lost := err != nil && (connGone(ls.c, err) || sessionEndingReset(ls.c, err))
	if lost {
		ls.sub.cancel(fmt.Errorf("%w: %w", errConnLost, err))
	} else {
		ls.sub.cancel(nil)
	}
	ls.rt.rb.s.unregister(ls.sub)
	return err
}

// register makes a subscription of the track, reading group streams for it
// from now on. It ends with ctx, the attempt's context, and ends it with
// cancel (a drain that gives up): one context per attempt instead of a
// child context for the subscription, which cost ~400 B per track.
func (rt *remoteTrack) register(ctx context.Context, cancel context.CancelCauseFunc, timescale uint64, waits settler) *subscription {
	s := rt.rb.s
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextSubID
	s.nextSubID++
	sub := &subscription{id: id, rt: rt, timescale: timescale, ctx: ctx, cancel: cancel, waits: waits,
		arrived: make(chan struct{}, 1), started: make(chan struct{})}
	s.subs[id] = sub
	return sub
}

// sendSubscribe opens the subscription's stream and sends SUBSCRIBE. A
// resumed one asks no max age on lite-06, where it would reach back: its
// gap is FETCHed (resume.go), which needs the live edge in SUBSCRIBE_OK;
// it asks from floor when there is one (the rest of a cut group).
func (rt *remoteTrack) sendSubscribe(ctx context.Context, c conn, v *wire.Version, id uint64, resumed bool, floor resumeFloor) (bidiStream, error) {
	s := rt.rb.s
	str, err := c.OpenBidi(ctx)
	if err != nil {
		return nil, fmt.Errorf("open subscribe stream: %w", err)
	}
	m := wire.Subscribe{
		ID: id, Broadcast: rt.rb.path, Track: rt.name,
		SubscribeParams: wire.SubscribeParams{
			Priority: priorityOf(rt.name), MaxLatency: uint64(s.opts.MaxLatency.Milliseconds()),
		},
	}
	if resumed && v.FrameRange {
		m.MaxLatency = 0
		if floor.ok {
			m.Start, m.FrameStart = wire.Some(floor.group), floor.frame
		}
	}
	if _, err := str.Write(m.AppendFor(varint.Append(nil, wire.StreamSubscribe), v)); err != nil {
		str.CancelRead(CodeCancel)
		return nil, fmt.Errorf("send SUBSCRIBE: %w", err)
	}
	return str, nil
}

// subscribeState is what readResponses learnt of a subscription so far.
type subscribeState struct {
	started            bool
	first, end         uint64
	haveFirst, haveEnd bool
	resumed            bool
}

// response applies one response of the subscription.
func (rt *remoteTrack) response(ctx context.Context, c conn, v *wire.Version, sub *subscription, st *subscribeState, resp *wire.SubscribeResponse) {
	s := rt.rb.s
	switch resp.Type {
	case wire.RespOK:
		st.started = true
		st.first, st.haveFirst = resp.Group, true
		sub.gotOK.Store(true)
		if st.resumed {
			// The groups missed since the connection was lost come
			// first, or the track starts a new timeline.
			rt.resume(ctx, c, sub.timescale, st.first)
			rt.releaseAtLive(st.first, sub.burstDone)
		} else {
			// Groups travel on separate streams: the first one may
			// land after the second. Readers start at the group
			// named here.
			rt.track.SetStart(resp.Group)
		}
		sub.markStarted()
		s.log.Debug("moq: subscribed", "broadcast", rt.rb.path, "track", rt.name, "group", resp.Group)
	case wire.RespAck:
		// lite-01..04: accepted. The reference names no start group
		// here (it sends none; our publisher does when it knows it),
		// so readers start where the first group lands otherwise.
		st.started = true
		if resp.Ack.Start.Valid {
			st.first, st.haveFirst = resp.Ack.Start.Seq, true
			rt.track.SetStart(st.first)
		}
		if st.resumed {
			// No FETCH to fill the gap on these versions: the hold the
			// lost connection took ends once the live groups are in
			// (every one from 0 when the start is not named), as after
			// a SUBSCRIBE_OK. A hold never released would keep the
			// track's reader from ever skipping a group the loss cut.
			rt.releaseAtLive(st.first, sub.burstDone)
		}
		sub.markStarted()
		s.log.Debug("moq: subscribed", "broadcast", rt.rb.path, "track", rt.name, "version", v.Name)
	case wire.RespEnd:
		st.end, st.haveEnd = resp.Group, true
		s.log.Debug("moq: subscription end announced", "broadcast", rt.rb.path, "track", rt.name, "end", resp.Group)
	case wire.RespDrop:
		s.log.Debug("moq: groups dropped", "broadcast", rt.rb.path, "track", rt.name,
			"start", resp.Start, "end", resp.End, "code", resp.Code)
	}
}

// responsesEnded is how the subscription ends when reading its responses
// failed with err.
func (rt *remoteTrack) responsesEnded(ctx context.Context, c conn, sub *subscription, str bidiStream, st *subscribeState, err error) error {
	if ctx.Err() != nil {
		str.CancelRead(CodeCancel)
		return context.Cause(ctx)
	}
	if connGone(c, err) {
		return connLoss(c, err)
	}
	if err == io.EOF {
		// The publisher accounted for every group: wait for the
		// streams still on their way.
		sub.markStarted()
		sub.drain(ctx, st.first, st.end, st.haveFirst && st.haveEnd)
		str.Close()
		return nil
	}
	if re, ok := errors.AsType[*ResetError](err); ok {
		str.CancelWrite(CodeCancel)
		if !st.started {
			return fmt.Errorf("%w: SUBSCRIBE %q/%q: %w", ErrRefused, rt.rb.path, rt.name, re)
		}
		return re
	}
	resetStream(str, CodeDecode)
	return fmt.Errorf("subscribe stream: %w", protocolErr(err))
}

// trackInfo sends TRACK and reads TRACK_INFO, bounded by the request
// timeout (a @moq/net publisher never answers for an unknown track).
func (rt *remoteTrack) trackInfo(ctx context.Context, c conn) (wire.TrackInfo, error) {
	var info wire.TrackInfo
	str, err := c.OpenBidi(ctx)
	if err != nil {
		return info, fmt.Errorf("open track stream: %w", err)
	}
	m := wire.TrackRequest{Broadcast: rt.rb.path, Track: rt.name}
	if _, err := str.Write(m.Append(varint.Append(nil, wire.StreamTrack))); err != nil {
		str.CancelRead(CodeCancel)
		return info, fmt.Errorf("send TRACK: %w", err)
	}
	str.SetReadDeadline(time.Now().Add(rt.rb.s.opts.RequestTimeout))
	stop := context.AfterFunc(ctx, func() { str.SetReadDeadline(time.Now()) })
	defer stop()
	err = readMsg(bufio.NewReader(str), versioned{&info, connVersion(c)})
	if err != nil {
		resetStream(str, CodeCancel)
		if ctx.Err() != nil {
			return info, context.Cause(ctx)
		}
		if errors.Is(err, ErrProtocol) {
			return info, fmt.Errorf("TRACK_INFO %q/%q: %w", rt.rb.path, rt.name, err)
		}
		if err == io.EOF {
			err = errors.New("FIN without TRACK_INFO")
		} else if isTimeout(err) {
			err = errors.New("no TRACK_INFO within the request timeout")
		}
		return info, fmt.Errorf("%w: TRACK %q/%q: %w", ErrRefused, rt.rb.path, rt.name, err)
	}
	str.Close()
	str.CancelRead(CodeCancel)
	return info, nil
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// priorityOf is the hang default: catalog 100, audio 80, video 60. Without
// the catalog's kind at hand, media tracks get 60.
func priorityOf(name string) uint8 {
	if isCatalogTrack(name) {
		return 100
	}
	return 60
}

// controlReadBuffer is the read buffer of an announce feed's stream: its
// messages are a few bytes to a few hundred. A longer message is read
// through it all the same.
const controlReadBuffer = 512

// subscribeReadBuffer is the read buffer of a subscription's stream (and
// of a moq-transport request's, or a PUBLISH_NAMESPACE's), which carries a
// response or two of a few bytes each: a recorder of 1,000 broadcasts
// holds 3,000 such streams open, so bufio's 4 KB default would cost 12 MB
// for nothing (512 B: 1.5 MB). A longer message is read through it all
// the same (wire.ReadMessage and ietf.ReadMessage copy the body out).
const subscribeReadBuffer = 32
