package subscribe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/varint"
)

// unregister removes sub from the session: group streams for it are
// refused from now on.
func (s *Session) unregister(sub *session.Sub) {
	s.mu.Lock()
	if s.subs[sub.ID] == sub {
		delete(s.subs, sub.ID)
	}
	s.mu.Unlock()
}

// A liteSubscription is one moq-lite SUBSCRIBE in its wire: TRACK and
// TRACK_INFO first (lite-05+), then SUBSCRIBE on its own stream and the
// publisher's responses on it (session.Subscribe runs the rest).
type liteSubscription struct {
	session.AttemptTrack
	s   *Session
	c   conn
	ctx context.Context
	v   *wire.Version
	str bidiStream
	r   *bufio.Reader
	// waitErr is what the parked wait's read failed with.
	waitErr error
	// stopCancel undoes the FIN the attempt's end sends.
	stopCancel func() bool
}

func (l liteFamily) NewSubscription(ctx context.Context, rt *session.Remote) session.SubscriptionWire {
	return &liteSubscription{AttemptTrack: session.AttemptTrack{R: rt, C: l}, s: sessionOf(rt), c: l.c, ctx: ctx, v: connVersion(l.c)}
}

// Accept: without a Track stream (lite-01..04) nothing tells the
// timescale; frames carry no wire timestamp there either, so raw tracks
// get 0.
func (ls *liteSubscription) Accept(ctx context.Context) (uint64, bool, error) {
	if !ls.v.TrackInfo {
		return publishTimescale, false, nil
	}
	info, err := ls.trackInfo(ctx)
	return info.Timescale, false, err
}

// Route registers sub with the session: group streams name its id.
func (ls *liteSubscription) Route(sub *session.Sub) error {
	s := ls.s
	s.mu.Lock()
	defer s.mu.Unlock()
	sub.ID, sub.Router = s.nextSubID, ls
	s.nextSubID++
	s.subs[sub.ID] = sub
	return nil
}

func (ls *liteSubscription) Unroute(sub *session.Sub) { ls.s.unregister(sub) }

// Request sends SUBSCRIBE; a resumed lite-06 subscription asks from the
// rest of a cut group when it has one (session.Remote.FloorOfCut).
func (ls *liteSubscription) Request(ctx context.Context, sub *session.Sub, resumed bool) error {
	var floor session.ResumeFloor
	if resumed && ls.v.FrameRange {
		floor = ls.R.FloorOfCut(ctx, ls.C, sub.Timescale)
	}
	str, err := ls.sendSubscribe(ctx, sub.ID, resumed, floor)
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

func (ls *liteSubscription) Ready() bool { return ls.waitErr != nil || ls.r.Buffered() > 0 }

// Next reads one response: the end of the stream is the publisher's
// (every group accounted for).
func (ls *liteSubscription) Next() (session.Event, error) {
	err := ls.waitErr
	ls.waitErr = nil
	var resp wire.SubscribeResponse
	if err == nil {
		resp, err = wire.ReadSubscribeResponseFor(ls.r, ls.v)
	}
	if err == io.EOF && ls.ctx.Err() == nil && ls.c.Context().Err() == nil {
		return session.Event{Kind: session.EventDone}, nil
	}
	if err != nil {
		return session.Event{}, err
	}
	switch resp.Type {
	case wire.RespOK:
		return session.Event{Kind: session.EventStart, Start: session.StartNamed, Group: resp.Group}, nil
	case wire.RespAck:
		// lite-01..04: accepted.
		return session.Event{Kind: session.EventStart, Start: session.StartAck, Group: resp.Ack.Start.Seq, Named: resp.Ack.Start.Valid}, nil
	case wire.RespEnd:
		return session.Event{Kind: session.EventEnd, Group: resp.Group}, nil
	case wire.RespDrop:
		ls.s.log.Debug("moq: groups dropped", "broadcast", ls.R.Broadcast, "track", ls.R.Name,
			"start", resp.Start, "end", resp.End, "code", resp.Code)
	}
	return session.Event{}, nil
}

// Failed: a reset refuses the subscription until it started and ends it
// after; anything else is a bad stream.
func (ls *liteSubscription) Failed(err error, started bool) error {
	if re, ok := errors.AsType[*ResetError](err); ok {
		ls.str.CancelWrite(CodeCancel)
		if !started {
			return fmt.Errorf("%w: SUBSCRIBE %q/%q: %w", ErrRefused, ls.R.Broadcast, ls.R.Name, re)
		}
		return re
	}
	resetStream(ls.str, CodeDecode)
	return fmt.Errorf("subscribe stream: %w", protocolErr(err))
}

func (ls *liteSubscription) Cancel() { ls.str.CancelRead(CodeCancel) }

func (ls *liteSubscription) Release(_ error, done bool) {
	if ls.stopCancel != nil {
		ls.stopCancel()
	}
	if done {
		ls.str.Close()
	}
}

// Wait peeks at the stream: the read is all the parked goroutine does.
func (ls *liteSubscription) Wait() bool {
	_, ls.waitErr = ls.r.Peek(1)
	return false
}

// Resettle: settle woke the wait with a deadline, which must not cut the
// reads that follow; a wait it cut parks afresh.
func (ls *liteSubscription) Resettle(bool) bool {
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

// Wake is settle's: a deadline ends the parked read.
func (ls *liteSubscription) Wake() { ls.str.SetReadDeadline(time.Now()) }

// sendSubscribe opens the subscription's stream and sends SUBSCRIBE. A
// resumed one asks no max age on lite-06, where it would reach back: its
// gap is FETCHed (session.Remote's resume), which needs the live edge in SUBSCRIBE_OK;
// it asks from floor when there is one (the rest of a cut group).
func (ls *liteSubscription) sendSubscribe(ctx context.Context, id uint64, resumed bool, floor session.ResumeFloor) (bidiStream, error) {
	s, rt, v := ls.s, ls.R, ls.v
	str, err := ls.c.OpenBidi(ctx)
	if err != nil {
		return nil, fmt.Errorf("open subscribe stream: %w", err)
	}
	m := wire.Subscribe{
		ID: id, Broadcast: rt.Broadcast, Track: rt.Name,
		SubscribeParams: wire.SubscribeParams{
			Priority: priorityOf(rt.Name), MaxLatency: uint64(s.opts.MaxLatency.Milliseconds()),
		},
	}
	if resumed && v.FrameRange {
		m.MaxLatency = 0
		if floor.OK {
			m.Start, m.FrameStart = wire.Some(floor.Group), floor.Frame
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
func (ls *liteSubscription) trackInfo(ctx context.Context) (wire.TrackInfo, error) {
	rt, c := ls.R, ls.c
	var info wire.TrackInfo
	str, err := c.OpenBidi(ctx)
	if err != nil {
		return info, fmt.Errorf("open track stream: %w", err)
	}
	m := wire.TrackRequest{Broadcast: rt.Broadcast, Track: rt.Name}
	if _, err := str.Write(m.Append(varint.Append(nil, wire.StreamTrack))); err != nil {
		str.CancelRead(CodeCancel)
		return info, fmt.Errorf("send TRACK: %w", err)
	}
	str.SetReadDeadline(time.Now().Add(ls.s.opts.RequestTimeout))
	stop := context.AfterFunc(ctx, func() { str.SetReadDeadline(time.Now()) })
	defer stop()
	err = readMsg(bufio.NewReader(str), versioned{&info, connVersion(c)})
	if err != nil {
		resetStream(str, CodeCancel)
		if ctx.Err() != nil {
			return info, context.Cause(ctx)
		}
		if errors.Is(err, ErrProtocol) {
			return info, fmt.Errorf("TRACK_INFO %q/%q: %w", rt.Broadcast, rt.Name, err)
		}
		if err == io.EOF {
			err = errors.New("FIN without TRACK_INFO")
		} else if isTimeout(err) {
			err = errors.New("no TRACK_INFO within the request timeout")
		}
		return info, fmt.Errorf("%w: TRACK %q/%q: %w", ErrRefused, rt.Broadcast, rt.Name, err)
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
