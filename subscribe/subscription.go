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

	// router routes the subscription's group streams (the family's
	// subscribeWire): the drain stops it before it waits for the last.
	router interface{ unroute(*subscription) }
	// waits is the subscription whose parked waits Session.settle parks
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
	sub.router.unroute(sub)
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
// (backfills FETCH on it) and returns the detach to defer.
func (rt *remoteTrack) attach(c conn, timescale uint64) (detach func()) {
	rt.mu.Lock()
	rt.conn, rt.timescale = c, timescale
	rt.subGen++
	rt.mu.Unlock()
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

// A liteSubscription is one moq-lite SUBSCRIBE in its wire: TRACK and
// TRACK_INFO first (lite-05+), then SUBSCRIBE on its own stream and the
// publisher's responses on it (trackSubscription runs the rest).
type liteSubscription struct {
	rt  *remoteTrack
	ctx context.Context
	c   conn
	v   *wire.Version
	str bidiStream
	r   *bufio.Reader
	// waitErr is what the parked wait's read failed with.
	waitErr error
	// stopCancel undoes the FIN the attempt's end sends.
	stopCancel func() bool
}

func (l liteFamily) newSubscription(ctx context.Context, rt *remoteTrack) subscribeWire {
	return &liteSubscription{rt: rt, ctx: ctx, c: l.c, v: connVersion(l.c)}
}

// accept: without a Track stream (lite-01..04) nothing tells the
// timescale; frames carry no wire timestamp there either, so raw tracks
// get 0.
func (ls *liteSubscription) accept(ctx context.Context) (uint64, bool, error) {
	if !ls.v.TrackInfo {
		return publishTimescale, false, nil
	}
	info, err := ls.rt.trackInfo(ctx, ls.c)
	return info.Timescale, false, err
}

// route registers sub with the session: group streams name its id.
func (ls *liteSubscription) route(sub *subscription) error {
	s := ls.rt.rb.s
	s.mu.Lock()
	defer s.mu.Unlock()
	sub.id = s.nextSubID
	s.nextSubID++
	s.subs[sub.id] = sub
	return nil
}

func (ls *liteSubscription) unroute(sub *subscription) { ls.rt.rb.s.unregister(sub) }

// request sends SUBSCRIBE; a resumed lite-06 subscription asks from the
// rest of a cut group when it has one (floorOfCut).
func (ls *liteSubscription) request(ctx context.Context, sub *subscription, resumed bool) error {
	var floor resumeFloor
	if resumed && ls.v.FrameRange {
		floor = ls.rt.floorOfCut(ctx, ls.c, sub.timescale)
	}
	str, err := ls.rt.sendSubscribe(ctx, ls.c, ls.v, sub.id, resumed, floor)
	if err != nil {
		return err
	}
	ls.str = str
	// Unsubscribe with a FIN when the attempt is cancelled (the @moq/net
	// publisher only stops on a FIN).
	ls.stopCancel = context.AfterFunc(ctx, func() {
		str.Close()
		str.SetReadDeadline(time.Now())
	})
	ls.r = bufio.NewReaderSize(str, subscribeReadBuffer)
	return nil
}

func (ls *liteSubscription) ready() bool { return ls.waitErr != nil || ls.r.Buffered() > 0 }

// next reads one response: the end of the stream is the publisher's
// (every group accounted for).
func (ls *liteSubscription) next() (subEvent, error) {
	err := ls.waitErr
	ls.waitErr = nil
	var resp wire.SubscribeResponse
	if err == nil {
		resp, err = wire.ReadSubscribeResponseFor(ls.r, ls.v)
	}
	if err == io.EOF && ls.ctx.Err() == nil && ls.c.Context().Err() == nil {
		return subEvent{kind: evDone}, nil
	}
	if err != nil {
		return subEvent{}, err
	}
	switch resp.Type {
	case wire.RespOK:
		return subEvent{kind: evStart, start: startNamed, group: resp.Group}, nil
	case wire.RespAck:
		// lite-01..04: accepted.
		return subEvent{kind: evStart, start: startAck, group: resp.Ack.Start.Seq, named: resp.Ack.Start.Valid}, nil
	case wire.RespEnd:
		return subEvent{kind: evEnd, group: resp.Group}, nil
	case wire.RespDrop:
		ls.rt.rb.s.log.Debug("moq: groups dropped", "broadcast", ls.rt.rb.path, "track", ls.rt.name,
			"start", resp.Start, "end", resp.End, "code", resp.Code)
	}
	return subEvent{}, nil
}

// failed: a reset refuses the subscription until it started and ends it
// after; anything else is a bad stream.
func (ls *liteSubscription) failed(err error, started bool) error {
	if re, ok := errors.AsType[*ResetError](err); ok {
		ls.str.CancelWrite(CodeCancel)
		if !started {
			return fmt.Errorf("%w: SUBSCRIBE %q/%q: %w", ErrRefused, ls.rt.rb.path, ls.rt.name, re)
		}
		return re
	}
	resetStream(ls.str, CodeDecode)
	return fmt.Errorf("subscribe stream: %w", protocolErr(err))
}

func (ls *liteSubscription) cancel() { ls.str.CancelRead(CodeCancel) }

func (ls *liteSubscription) release(_ error, done bool) {
	if ls.stopCancel != nil {
		ls.stopCancel()
	}
	if done {
		ls.str.Close()
	}
}

// wait peeks at the stream: the read is all the parked goroutine does.
func (ls *liteSubscription) wait() bool {
	_, ls.waitErr = ls.r.Peek(1)
	return false
}

// resettle: settle woke the wait with a deadline, which must not cut the
// reads that follow; a wait it cut parks afresh.
func (ls *liteSubscription) resettle(bool) bool {
	ls.str.SetReadDeadline(time.Time{})
	if ls.ctx.Err() != nil {
		// The cancellation's own deadline may be the one just
		// cleared: set it again.
		ls.str.SetReadDeadline(time.Now())
		return false
	}
	if isTimeout(ls.waitErr) {
		ls.waitErr = nil
		return true
	}
	return false
}

// wake is settle's: a deadline ends the parked read.
func (ls *liteSubscription) wake() { ls.str.SetReadDeadline(time.Now()) }

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
