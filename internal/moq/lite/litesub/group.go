package litesub

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/model"
)

// ReadGroup turns one group stream (str, read through r past its type)
// into a model group of the subscription its header names.
//
// It runs on a goroutine of its own per group stream (hang's audio sends
// a group a frame), and a goroutine starts with a 2 KiB stack that the
// runtime copies to twice the size whenever a call goes deeper: so the
// per-frame path (this function, frames, Pump.Feed and hang's decoder,
// under which quic-go's reads and the model's writes run) keeps small
// frames, and what happens at most once per group (the header, the
// joins, the fetch of a group's head, every log line and error) is in
// functions of their own, whose frames are gone by the time frames are
// read. Inlined, those put about 1.8 KiB in this frame, and the stack
// was copied twice per group instead of once (BenchmarkEndToEnd
// loopback-quic/audio, +25% CPU per frame).
// TestAGroupReadersFramesLeaveRoomForQuicGosReads (package session)
// adds up this path's frames, as the compiler sizes them, against a budget.
func (c Conn) ReadGroup(str session.RecvStream, r *bufio.Reader, t session.OrderTicket) {
	var h wire.Group
	if !c.readGroupHeader(str, r, &h) {
		return
	}
	t.Name(h.SubscribeID, h.Sequence)
	sub := c.S.routes.Join(h.SubscribeID)
	if sub == nil {
		str.CancelRead(wire.CodeNotFound)
		return
	}
	defer sub.Groups.Done()
	g, skip, ok := c.startGroup(str, sub, &h, t)
	if !ok {
		return
	}
	// The group ends with its subscription: STOP_SENDING wakes the read,
	// and so does a deadline (a WebTransport stream whose session the peer
	// closed waits in Read for our side to close, which CancelRead does not
	// end, and Session.Close closes only after its readers returned).
	defer sub.GroupStops.Remove(sub.GroupStops.Add(sub.Ctx, str, stopGroupRead))
	c.readFrames(str, r, sub, g, h.Sequence, skip)
}

// readGroupHeader reads a group stream's header into h. When it cannot,
// it ends the stream and returns false.
//
//go:noinline
func (c Conn) readGroupHeader(str session.RecvStream, r *bufio.Reader, h *wire.Group) bool {
	body, err := wire.ReadMessageBuffered(r, 0)
	if err == nil {
		err = h.DecodeFor(body, c.V)
	}
	if err = ProtocolErr(err); err == nil {
		return true
	}
	if c.S.isReset(err) {
		c.S.Log.Debug("moq: group reset before its header", "err", err)
		return false
	}
	str.CancelRead(wire.CodeDecode)
	if !c.C.Gone(err) {
		c.S.Log.Warn("moq: bad group header", "err", err)
	}
	return false
}

// startGroup makes the model group of header h in sub, once the
// subscription started and any cut of its groups was waited for. lite-06:
// the stream starts at frame FrameStart of the group. Frames the track
// already has (a cut group) are not written twice; frames between those
// and FrameStart are fetched first (the publisher began the subscription
// inside the group, or holds only its tail), and a group whose head
// cannot be had is dropped rather than recorded without its keyframe. It
// returns the group and how many of the stream's frames to skip; false
// when the stream was ended instead.
//
//go:noinline
func (c Conn) startGroup(str session.RecvStream, sub *session.Sub, h *wire.Group, t session.OrderTicket) (*model.Group, int, bool) {
	s := c.S
	sub.GroupArrived(h.Sequence)
	sub.WaitStarted(h.Sequence)
	rt := sub.Remote
	rt.WaitCutGroups(sub.Ctx, h.Sequence)
	g, skip, adopted, err := sub.CreateGroup(h.Sequence, t)
	if adopted {
		s.Log.Debug("moq: completing a cut group", "track", rt.Name, "group", h.Sequence, "have", skip, "frame_start", h.FrameStart)
	}
	if err != nil {
		s.Log.Debug("moq: group dropped", "track", rt.Name, "group", h.Sequence, "err", err)
		str.CancelRead(wire.CodeCancel)
		return nil, 0, false
	}
	if h.FrameStart == 0 {
		return g, skip, true
	}
	have := uint64(skip)
	if have < h.FrameStart {
		frames, ferr := rt.FetchFrames(sub.Ctx, c, sub.Timescale, h.Sequence, have, h.FrameStart-1, true)
		if ferr == nil && uint64(len(frames)) != h.FrameStart-have {
			ferr = fmt.Errorf("%w: FETCH returned %d frames of %d", session.ErrNoFetch, len(frames), h.FrameStart-have)
		}
		for _, f := range frames {
			if ferr != nil {
				break
			}
			ferr = g.WriteFrame(f)
		}
		if ferr != nil {
			s.Log.Warn("moq: group begins inside, its head could not be fetched: dropped", "track", rt.Name, "group", h.Sequence, "frame_start", h.FrameStart, "err", ferr)
			rt.Host.AddLost(1)
			str.CancelRead(wire.CodeCancel)
			g.Close(fmt.Errorf("group %d of %q begins at frame %d: %w", h.Sequence, rt.Name, h.FrameStart, ferr))
			return nil, 0, false
		}
		have = h.FrameStart
	}
	return g, int(have - h.FrameStart), true
}

// readFrames reads group seq's frames off str into g, skipping the first
// skip, until the stream ends.
func (c Conn) readFrames(str session.RecvStream, r *bufio.Reader, sub *session.Sub, g *model.Group, seq uint64, skip int) {
	var fr wire.FrameReader
	var pump session.Pump
	c.startFrames(&fr, &pump, r, sub.Remote, g, seq, skip)
	defer pump.Dec.Close()
	for {
		payload, err := fr.Next()
		if err != nil {
			c.endFrames(str, sub, g, seq, err, fr.Slab.Used())
			return
		}
		if err = pump.Feed(hang.Object{Payload: payload, Timestamp: fr.Timestamp, Timescale: sub.Timescale, FrameTime: !fr.NoTimestamps}); err != nil {
			c.badFrames(str, sub, g, seq, err)
			return
		}
	}
}

// startFrames readies fr to read frames off r and pump to write group
// seq's, after the first skip, into g.
//
//go:noinline
func (c Conn) startFrames(fr *wire.FrameReader, pump *session.Pump, r *bufio.Reader, rt *session.Remote, g *model.Group, seq uint64, skip int) {
	// The group's payloads are cut from a slab sized by the previous
	// group: a buffer or two per group instead of one per frame.
	*fr = *wire.NewFrameReader(r, c.V)
	fr.Slab, fr.UseSlab = wire.Slab{Hint: int(rt.GroupBytes.Load())}, true
	*pump = session.Pump{Dec: rt.Pack.Decoder(), Group: g, Skip: skip, Log: c.S.Log, Track: rt.Name, Seq: seq}
	pump.Dec.Verbatim = rt.Host.Config().Objects
}

// endFrames ends group seq (g) after its stream's read failed with err;
// used is what its payloads took.
//
//go:noinline
func (c Conn) endFrames(str session.RecvStream, sub *session.Sub, g *model.Group, seq uint64, err error, used int) {
	// At the end of the stream nothing was cut (and asking would cost an
	// allocation per group: hang's audio sends a group a frame).
	cut, reset := false, false
	if err == io.EOF {
		sub.Remote.GroupBytes.Store(int64(used))
	} else {
		cut, reset = c.C.Gone(err) || c.SessionEndingReset(err), c.S.isReset(err)
	}
	sub.EndGroup(str, g, seq, ProtocolErr(err), cut, reset, wire.CodeDecode)
}

// badFrames ends group seq (g) after the pump failed with err: the group
// was closed before its stream ended, or a payload is not what the
// catalog says.
//
//go:noinline
func (c Conn) badFrames(str session.RecvStream, sub *session.Sub, g *model.Group, seq uint64, err error) {
	name := sub.Remote.Name
	if errors.Is(err, session.ErrGroupClosed) {
		c.S.Log.Debug("moq: group closed before its stream ended", "track", name, "group", seq, "err", err)
		str.CancelRead(wire.CodeCancel)
		return
	}
	err = session.DecodeErr(err)
	str.CancelRead(wire.CodeDecode)
	c.S.Log.Warn("moq: bad frame", "track", name, "group", seq, "err", err)
	g.Close(fmt.Errorf("group %d of %q: %w", seq, name, err))
}

// stopGroupRead ends a group stream's reads when its subscription ends.
func stopGroupRead(str session.RecvStream) { session.StopReading(str, wire.CodeCancel) }
