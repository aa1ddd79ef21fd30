package litesub

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

// DefaultTimescale is a track's timescale where nothing tells it
// (lite-01..04 have no TRACK_INFO): microseconds, as hang's containers
// carry their own timestamps.
const DefaultTimescale = 1_000_000

// A subscription is one moq-lite SUBSCRIBE in its wire: TRACK and
// TRACK_INFO first (lite-05+), then SUBSCRIBE on its own stream and the
// publisher's responses on it (session.Subscribe runs the rest).
type subscription struct {
	session.AttemptTrack
	s   *Session
	c   session.Conn
	ctx context.Context
	v   *wire.Version
	str session.Stream
	r   *bufio.Reader
	// waitErr is what the parked wait's read failed with.
	waitErr error
	// stopCancel undoes the FIN the attempt's end sends.
	stopCancel func() bool
}

// NewSubscription is one subscription attempt of rt on the connection
// (session.Subscribe runs it).
func (c Conn) NewSubscription(ctx context.Context, rt *session.Remote) session.SubscriptionWire {
	return &subscription{AttemptTrack: session.AttemptTrack{R: rt, C: c}, s: c.S, c: c.C, ctx: ctx, v: c.V}
}

// Accept: without a Track stream (lite-01..04) nothing tells the
// timescale; frames carry no wire timestamp there either, so raw tracks
// get 0.
func (ls *subscription) Accept(ctx context.Context) (uint64, bool, error) {
	if !ls.v.TrackInfo {
		return DefaultTimescale, false, nil
	}
	info, err := ls.trackInfo(ctx)
	return info.Timescale, false, err
}

// Route registers sub with the session: group streams name its id.
func (ls *subscription) Route(sub *session.Sub) error {
	sub.Router = ls
	ls.s.route(sub)
	return nil
}

func (ls *subscription) Unroute(sub *session.Sub) { ls.s.Unroute(sub) }

// Request sends SUBSCRIBE; a resumed lite-06 subscription asks from the
// newest frame held of a cut group when it has one
// (session.Remote.FloorOfCut).
func (ls *subscription) Request(ctx context.Context, sub *session.Sub, resumed bool) error {
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
	ls.r = bufio.NewReaderSize(str, session.RequestReadBuffer)
	return nil
}

func (ls *subscription) Ready() bool { return ls.waitErr != nil || ls.r.Buffered() > 0 }

// Next reads one response: the end of the stream is the publisher's
// (every group accounted for).
func (ls *subscription) Next() (session.Event, error) {
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
		ls.s.Log.Debug("moq: groups dropped", "broadcast", ls.R.Broadcast, "track", ls.R.Name,
			"start", resp.Start, "end", resp.End, "code", resp.Code)
	}
	return session.Event{}, nil
}

// Failed: a reset refuses the subscription until it started and ends it
// after; anything else is a bad stream.
func (ls *subscription) Failed(err error, started bool) error {
	if ls.s.isReset(err) {
		ls.str.CancelWrite(wire.CodeCancel)
		if !started {
			return fmt.Errorf("%w: SUBSCRIBE %q/%q: %w", session.ErrRefused, ls.R.Broadcast, ls.R.Name, err)
		}
		return err
	}
	session.ResetStream(ls.str, wire.CodeDecode)
	return fmt.Errorf("subscribe stream: %w", ProtocolErr(err))
}

func (ls *subscription) Cancel() { ls.str.CancelRead(wire.CodeCancel) }

func (ls *subscription) Release(_ error, done bool) {
	if ls.stopCancel != nil {
		ls.stopCancel()
	}
	if done {
		ls.str.Close()
	}
}

// Wait peeks at the stream: the read is all the parked goroutine does.
func (ls *subscription) Wait() bool {
	_, ls.waitErr = ls.r.Peek(1)
	return false
}

// Resettle: settle woke the wait with a deadline, which must not cut the
// reads that follow; a wait it cut parks afresh.
func (ls *subscription) Resettle(bool) bool {
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
func (ls *subscription) Wake() { ls.str.SetReadDeadline(time.Now()) }

// sendSubscribe opens the subscription's stream and sends SUBSCRIBE. A
// resumed one asks no max age on lite-06, where it would reach back: its
// gap is FETCHed (session.Remote's resume), which needs the live edge in SUBSCRIBE_OK;
// it asks from floor when there is one (the rest of a cut group). A span
// subscription asks its span.
func (ls *subscription) sendSubscribe(ctx context.Context, id uint64, resumed bool, floor session.ResumeFloor) (session.Stream, error) {
	s, rt, v := ls.s, ls.R, ls.v
	str, err := ls.c.OpenBidi(ctx)
	if err != nil {
		return nil, fmt.Errorf("open subscribe stream: %w", err)
	}
	m := wire.Subscribe{
		ID: id, Broadcast: rt.Broadcast, Track: rt.Name,
		SubscribeParams: wire.SubscribeParams{
			Priority: session.Priority(rt.Name), MaxLatency: uint64(s.MaxLatency.Milliseconds()),
		},
	}
	if resumed && v.FrameRange {
		m.MaxLatency = 0
		if floor.OK {
			m.Start, m.FrameStart = wire.Some(floor.Group), floor.Frame
		}
	}
	if sp, ok := rt.Span(); ok {
		// A span of past groups (session.Remote's span subscription):
		// from Group Start, through Group End; on lite-06 the max age
		// says how far back the floor may reach.
		m.Start, m.End, m.FrameStart = wire.Some(sp.From), wire.Some(sp.To), 0
		if v.FrameRange {
			m.MaxLatency = uint64(sp.MaxAge.Milliseconds())
		}
	}
	if _, err := str.Write(m.AppendFor(varint.Append(nil, wire.StreamSubscribe), v)); err != nil {
		str.CancelRead(wire.CodeCancel)
		return nil, fmt.Errorf("send SUBSCRIBE: %w", err)
	}
	return str, nil
}

// trackInfo sends TRACK and reads TRACK_INFO, bounded by the request
// timeout (a @moq/net publisher never answers for an unknown track): a
// FIN or a reset is the publisher's refusal (session.ErrRefused), no
// answer in time is session.ErrTimeout.
func (ls *subscription) trackInfo(ctx context.Context) (wire.TrackInfo, error) {
	rt, c := ls.R, ls.c
	var info wire.TrackInfo
	str, err := c.OpenBidi(ctx)
	if err != nil {
		return info, fmt.Errorf("open track stream: %w", err)
	}
	m := wire.TrackRequest{Broadcast: rt.Broadcast, Track: rt.Name}
	if _, err := str.Write(m.Append(varint.Append(nil, wire.StreamTrack))); err != nil {
		str.CancelRead(wire.CodeCancel)
		return info, fmt.Errorf("send TRACK: %w", err)
	}
	str.SetReadDeadline(time.Now().Add(ls.s.RequestTimeout))
	stop := context.AfterFunc(ctx, func() { str.SetReadDeadline(time.Now()) })
	defer stop()
	err = ReadMessage(bufio.NewReader(str), versioned{&info, ls.v})
	if err != nil {
		session.ResetStream(str, wire.CodeCancel)
		switch {
		case ctx.Err() != nil:
			return info, context.Cause(ctx)
		case errors.Is(err, session.ErrProtocol):
			return info, fmt.Errorf("TRACK_INFO %q/%q: %w", rt.Broadcast, rt.Name, err)
		case c.Gone(err):
			return info, fmt.Errorf("TRACK %q/%q: %w", rt.Broadcast, rt.Name, err)
		case err == io.EOF:
			// The publisher's word: it has no such track.
			return info, fmt.Errorf("%w: TRACK %q/%q: FIN without TRACK_INFO", session.ErrRefused, rt.Broadcast, rt.Name)
		case isTimeout(err):
			// Silence is no answer: the connection may be dead and not
			// found so yet (the track's retry tells, session.LostWith).
			return info, fmt.Errorf("%w: TRACK %q/%q: no TRACK_INFO within %v", session.ErrTimeout, rt.Broadcast, rt.Name, ls.s.RequestTimeout)
		}
		// The publisher reset the request.
		return info, fmt.Errorf("%w: TRACK %q/%q: %w", session.ErrRefused, rt.Broadcast, rt.Name, err)
	}
	str.Close()
	str.CancelRead(wire.CodeCancel)
	return info, nil
}
