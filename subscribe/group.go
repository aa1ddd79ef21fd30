package subscribe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/model"
)

// readGroup turns one group stream into a model group.
func (s *Session) readGroup(ctx context.Context, c conn, str recvStream, r *bufio.Reader, t orderTicket) {
	var h wire.Group
	body, err := wire.ReadMessageBuffered(r, 0)
	if err == nil {
		err = h.DecodeFor(body, connVersion(c))
	}
	if err = protocolErr(err); err != nil {
		if _, reset := errors.AsType[*ResetError](err); reset {
			s.log.Debug("moq: group reset before its header", "err", err)
			return
		}
		str.CancelRead(CodeDecode)
		if !connGone(c, err) {
			s.log.Warn("moq: bad group header", "err", err)
		}
		return
	}
	t.name(h.SubscribeID, h.Sequence)
	s.mu.Lock()
	sub := s.subs[h.SubscribeID]
	if sub != nil {
		sub.Groups.Add(1)
	}
	s.mu.Unlock()
	if sub == nil {
		str.CancelRead(CodeNotFound)
		return
	}
	defer sub.Groups.Done()
	sub.GroupArrived(h.Sequence)
	sub.WaitStarted(h.Sequence)
	rt := sub.rt
	rt.waitCutGroups(sub.Ctx, h.Sequence)
	g, skip, adopted, err := sub.createGroup(h.Sequence, t)
	if adopted {
		s.log.Debug("moq: completing a cut group", "track", rt.name, "group", h.Sequence, "have", skip, "frame_start", h.FrameStart)
	}
	if err != nil {
		s.log.Debug("moq: group dropped", "track", rt.name, "group", h.Sequence, "err", err)
		str.CancelRead(CodeCancel)
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
			frames, ferr := rt.fetchFrames(sub.Ctx, c, sub.Timescale, h.Sequence, have, wire.Some(h.FrameStart-1))
			if ferr == nil && uint64(len(frames)) != h.FrameStart-have {
				ferr = fmt.Errorf("%w: FETCH returned %d frames of %d", errNoFetch, len(frames), h.FrameStart-have)
			}
			for _, f := range frames {
				if ferr != nil {
					break
				}
				ferr = g.WriteFrame(f)
			}
			if ferr != nil {
				s.log.Warn("moq: group begins inside, its head could not be fetched: dropped", "track", rt.name, "group", h.Sequence, "frame_start", h.FrameStart, "err", ferr)
				s.lostGroups.Add(1)
				str.CancelRead(CodeCancel)
				g.Close(fmt.Errorf("group %d of %q begins at frame %d: %w", h.Sequence, rt.name, h.FrameStart, ferr))
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
	defer sub.groupStops.Remove(sub.groupStops.Add(sub.Ctx, str, stopGroupRead))
	// The group's payloads are cut from a slab sized by the previous
	// group: a buffer or two per group instead of one per frame.
	fr := wire.NewFrameReader(r, connVersion(c))
	fr.Slab, fr.UseSlab = wire.Slab{Hint: int(rt.groupBytes.Load())}, true
	pump := session.Pump{Dec: rt.pack.Decoder(), Group: g, Skip: skip, Log: s.log, Track: rt.name, Seq: h.Sequence}
	pump.Dec.Verbatim = s.opts.Objects
	defer pump.Dec.Close()
	for {
		payload, err := fr.Next()
		if err != nil {
			// At the end of the stream nothing was cut (and asking would
			// cost an allocation per group: hang's audio sends a group a
			// frame).
			cut := false
			if err == io.EOF {
				rt.groupBytes.Store(int64(fr.Slab.Used()))
			} else {
				cut = connGone(c, err) || sessionEndingReset(c, err)
			}
			sub.endGroup(str, g, h.Sequence, err, cut, CodeDecode)
			return
		}
		err = pump.Feed(hang.Object{Payload: payload, Timestamp: fr.Timestamp, Timescale: sub.Timescale, FrameTime: !fr.NoTimestamps})
		if errors.Is(err, session.ErrGroupClosed) {
			s.log.Debug("moq: group closed before its stream ended", "track", rt.name, "group", h.Sequence, "err", err)
			str.CancelRead(CodeCancel)
			return
		}
		if err != nil {
			err = decodeErr(err)
			str.CancelRead(CodeDecode)
			s.log.Warn("moq: bad frame", "track", rt.name, "group", h.Sequence, "err", err)
			g.Close(fmt.Errorf("group %d of %q: %w", h.Sequence, rt.name, err))
			return
		}
	}
}

// createGroup makes group seq of sub's track for the group stream that
// holds ticket t, in the order the streams were accepted: a new group, or
// one a lost connection cut, adopted to be completed (skip: the frames it
// has; adopted says it was one). Both families' group readers open
// their groups here.
func (sub *subscription) createGroup(seq uint64, t orderTicket) (g *model.Group, skip int, adopted bool, err error) {
	rt := sub.rt
	t.wait(sub.Ctx, &sub.MadeGroup)
	g, err = rt.track.CreateGroup(seq)
	sub.MadeGroup.Store(true)
	t.done()
	if errors.Is(err, model.ErrDuplicateGroup) {
		if g, skip, adopted = rt.adopt(seq); adopted {
			err = nil
		}
	}
	sub.Created(seq)
	return g, skip, adopted, err
}

// endGroup ends group seq (g; nil when the stream ended before it was
// made) after its stream's read failed with err: io.EOF completes it; cut
// (the family says the connection, or the peer's session, went with it)
// or a lost connection leaves it open for a resumed subscription to
// complete; the subscription's end truncates it; anything else is a reset
// or a bad stream, cancelled with the family's badCode. Both families'
// group readers end their groups here.
func (sub *subscription) endGroup(str recvStream, g *model.Group, seq uint64, err error, cut bool, badCode uint64) {
	rt, log := sub.rt, sub.rt.rb.s.log
	switch {
	case err == io.EOF:
		if g != nil {
			g.Close(nil)
		}
	case cut || errors.Is(context.Cause(sub.Ctx), errConnLost):
		if g != nil {
			// Left open: a resumed subscription completes it.
			rt.interrupt(seq, g)
		}
	case sub.Ctx.Err() != nil:
		cause := context.Cause(sub.Ctx)
		if !errors.Is(cause, ErrTruncated) {
			cause = fmt.Errorf("%w: %w", ErrTruncated, cause)
		}
		log.Debug("moq: group stopped", "track", rt.name, "group", seq, "err", cause)
		if g != nil {
			g.Close(fmt.Errorf("group %d of %q: %w", seq, rt.name, cause))
		}
	default:
		if _, reset := errors.AsType[*ResetError](err); !reset {
			str.CancelRead(badCode)
			log.Warn("moq: bad group stream", "track", rt.name, "group", seq, "err", err)
		} else {
			log.Debug("moq: group reset", "track", rt.name, "group", seq, "err", err)
		}
		if g != nil {
			g.Close(fmt.Errorf("group %d of %q: %w", seq, rt.name, protocolErr(err)))
		}
	}
}

// sessionEndingReset reports whether err is a reset of a moq-lite stream
// whose peer is closing or draining its session: the group is cut, and a
// resumed subscription completes it.
func sessionEndingReset(c conn, err error) bool { return c.family().sessionEndingReset(err) }

// decodeErr is the error of a payload package hang could not decode: a
// protocol error (the peer sent what its catalog does not say).
func decodeErr(err error) error {
	if errors.Is(err, hang.ErrMalformed) {
		return fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	return err
}

// stopGroupRead ends a group stream's reads when its subscription ends.
func stopGroupRead(str recvStream) { stopReading(str, CodeCancel) }

// stopReading ends the reads of str, which another goroutine may be
// blocked in: CancelRead with code, and a read deadline now. A
// webtransport-go stream that met the peer's "session gone" reset waits in
// Read for its session to close it, which CancelRead stops (it takes the
// stream off the session's list) and a deadline always ends.
func stopReading(str interface {
	CancelRead(uint64)
	SetReadDeadline(time.Time) error
}, code uint64) {
	str.CancelRead(code)
	str.SetReadDeadline(time.Now())
}
