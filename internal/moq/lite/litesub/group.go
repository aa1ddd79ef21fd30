package litesub

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
)

// ReadGroup turns one group stream (str, read through r past its type)
// into a model group of the subscription its header names.
func (c Conn) ReadGroup(str session.RecvStream, r *bufio.Reader, t session.OrderTicket) {
	s := c.S
	var h wire.Group
	body, err := wire.ReadMessageBuffered(r, 0)
	if err == nil {
		err = h.DecodeFor(body, c.V)
	}
	if err = ProtocolErr(err); err != nil {
		if s.isReset(err) {
			s.Log.Debug("moq: group reset before its header", "err", err)
			return
		}
		str.CancelRead(wire.CodeDecode)
		if !c.C.Gone(err) {
			s.Log.Warn("moq: bad group header", "err", err)
		}
		return
	}
	t.Name(h.SubscribeID, h.Sequence)
	sub := s.routes.Join(h.SubscribeID)
	if sub == nil {
		str.CancelRead(wire.CodeNotFound)
		return
	}
	defer sub.Groups.Done()
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
		return
	}
	// lite-06: the stream starts at frame FrameStart of the group. Frames
	// the track already has (a cut group) are not written twice; frames
	// between those and FrameStart are fetched first (the publisher began
	// the subscription inside the group, or holds only its tail), and a
	// group whose head cannot be had is dropped rather than recorded
	// without its keyframe.
	if h.FrameStart > 0 {
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
				return
			}
			have = h.FrameStart
		}
		skip = int(have - h.FrameStart)
	}
	// The group ends with its subscription: STOP_SENDING wakes the read,
	// and so does a deadline (a WebTransport stream whose session the peer
	// closed waits in Read for our side to close, which CancelRead does not
	// end, and Session.Close closes only after its readers returned).
	defer sub.GroupStops.Remove(sub.GroupStops.Add(sub.Ctx, str, stopGroupRead))
	// The group's payloads are cut from a slab sized by the previous
	// group: a buffer or two per group instead of one per frame.
	fr := wire.NewFrameReader(r, c.V)
	fr.Slab, fr.UseSlab = wire.Slab{Hint: int(rt.GroupBytes.Load())}, true
	pump := session.Pump{Dec: rt.Pack.Decoder(), Group: g, Skip: skip, Log: s.Log, Track: rt.Name, Seq: h.Sequence}
	pump.Dec.Verbatim = rt.Host.Config().Objects
	defer pump.Dec.Close()
	for {
		payload, err := fr.Next()
		if err != nil {
			// At the end of the stream nothing was cut (and asking would
			// cost an allocation per group: hang's audio sends a group a
			// frame).
			cut, reset := false, false
			if err == io.EOF {
				rt.GroupBytes.Store(int64(fr.Slab.Used()))
			} else {
				cut, reset = c.C.Gone(err) || c.SessionEndingReset(err), s.isReset(err)
			}
			sub.EndGroup(str, g, h.Sequence, ProtocolErr(err), cut, reset, wire.CodeDecode)
			return
		}
		err = pump.Feed(hang.Object{Payload: payload, Timestamp: fr.Timestamp, Timescale: sub.Timescale, FrameTime: !fr.NoTimestamps})
		if errors.Is(err, session.ErrGroupClosed) {
			s.Log.Debug("moq: group closed before its stream ended", "track", rt.Name, "group", h.Sequence, "err", err)
			str.CancelRead(wire.CodeCancel)
			return
		}
		if err != nil {
			err = session.DecodeErr(err)
			str.CancelRead(wire.CodeDecode)
			s.Log.Warn("moq: bad frame", "track", rt.Name, "group", h.Sequence, "err", err)
			g.Close(fmt.Errorf("group %d of %q: %w", h.Sequence, rt.Name, err))
			return
		}
	}
}

// stopGroupRead ends a group stream's reads when its subscription ends.
func stopGroupRead(str session.RecvStream) { session.StopReading(str, wire.CodeCancel) }
