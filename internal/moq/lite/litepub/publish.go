package litepub

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/varint"
	"github.com/moq-export/moq-export/model"
)

// MaxLatency is the TRACK_INFO max latency (the reference default).
const MaxLatency = 5000

// publishedTrack returns the published track a TRACK, SUBSCRIBE or FETCH
// request names and the encoder of its payloads, or resets str (30 for an
// unknown broadcast, 13 for an unknown track) and returns nil.
func (s *Publisher) publishedTrack(v *wire.Version, str session.Stream, broadcast, track string) (*model.Track, session.Encoder) {
	t, enc, err := s.Pubs.Track(broadcast, track)
	if err == nil {
		return t, enc
	}
	code := uint64(wire.CodeUnroutable)
	if errors.Is(err, session.ErrNoTrack) {
		code = wire.CodeNotFound
	}
	resetStream(str, wire.StreamCode(v, code))
	return nil, enc
}

// readRequest reads the request that opens a stream, or resets str with a
// decode error.
func readRequest(str session.Stream, r *bufio.Reader, m interface{ Decode([]byte) error }) bool {
	if err := readMsg(r, m); err != nil {
		resetStream(str, wire.CodeDecode)
		return false
	}
	return true
}

// readMsg reads one length-prefixed message into m.
func readMsg(r *bufio.Reader, m interface{ Decode([]byte) error }) error {
	body, err := wire.ReadMessage(r, 0)
	if err == nil {
		err = m.Decode(body)
	}
	return err
}

// versioned decodes a message laid out for a version, so that readMsg and
// readRequest take per-version messages too.
type versioned struct {
	m interface {
		DecodeFor([]byte, *wire.Version) error
	}
	v *wire.Version
}

func (x versioned) Decode(body []byte) error { return x.m.DecodeFor(body, x.v) }

// resetStream abandons both directions of str with code.
func resetStream(str session.Stream, code uint64) {
	str.CancelRead(code)
	str.CancelWrite(code)
}

// stopReading ends str's reading: a STOP_SENDING, and a deadline that
// wakes a read in progress.
func stopReading(str session.RecvStream, code uint64) {
	str.CancelRead(code)
	str.SetReadDeadline(time.Now())
}

// ServeTrack answers TRACK with TRACK_INFO, or resets the stream (30 for an
// unknown broadcast, 13 for an unknown track).
func (s *Publisher) ServeTrack(v *wire.Version, str session.Stream, r *bufio.Reader) {
	var req wire.TrackRequest
	if !readRequest(str, r, &req) {
		return
	}
	t, enc := s.publishedTrack(v, str, req.Broadcast, req.Track)
	if t == nil {
		return
	}
	info := wire.TrackInfo{MaxLatency: MaxLatency, Timescale: enc.Timescale()}
	if _, err := str.Write(info.AppendFor(nil, v)); err != nil {
		return
	}
	str.Close()
	str.CancelRead(wire.CodeCancel)
}

// ServeSubscribe serves one SUBSCRIBE: one uni stream per model group,
// SUBSCRIBE_OK with the first group, SUBSCRIBE_END and FIN when the track
// ends, FIN when the peer unsubscribes. The groups go out through the
// core's session.Serve; liteSink writes them in moq-lite's wire.
func (s *Publisher) ServeSubscribe(ctx context.Context, v *wire.Version, openUni session.OpenUni, str session.Stream, r *bufio.Reader) {
	var req wire.Subscribe
	if !readRequest(str, r, versioned{&req, v}) {
		return
	}
	t, enc := s.publishedTrack(v, str, req.Broadcast, req.Track)
	if t == nil {
		return
	}
	parent := ctx // the connection's: done when the session ends
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The peer unsubscribes with a FIN (or a reset); updates are read and
	// ignored except for the end cap, which this publisher does not hold.
	var rwg sync.WaitGroup
	rwg.Add(1)
	go func() {
		defer rwg.Done()
		defer cancel()
		for {
			var u wire.SubscribeUpdate
			if err := readMsg(r, versioned{&u, v}); err != nil {
				return
			}
		}
	}()
	defer rwg.Wait()

	w := window(t, v, req)
	cons := t.Subscribe(time.Hour)
	defer cons.Close()
	if v.SubscribeOK {
		// lite-01..04 acknowledge at once, as the reference does: the
		// subscriber's priority, and (unlike the reference, which sends
		// none) the start group when it is already known, which the
		// layout has room for and our subscriber uses.
		ack := wire.SubscribeResponse{Type: wire.RespAck, Ack: wire.SubscribeParams{Priority: req.Priority}}
		if w.HasStart {
			ack.Ack.Start = wire.Some(w.Start.Group)
		}
		if _, err := str.Write(ack.AppendFor(nil, v)); err != nil {
			resetStream(str, wire.CodeCancel)
			return
		}
	}
	// Counted once the start group is fixed and the consumer attached:
	// every group appended from now on reaches the subscriber.
	s.Pubs.CountServing(req.Broadcast, req.Track, 1)
	defer s.Pubs.CountServing(req.Broadcast, req.Track, -1)
	sessionEnding := func() bool { return parent.Err() != nil || s.Ctx.Err() != nil }
	sink := &liteSink{open: openUni, stopped: s.Stopped, v: v, ctx: ctx, str: str, id: req.ID}
	served, err := session.Serve(ctx, t, cons, w, &enc, sink, sessionEnding)
	if err == nil {
		// SUBSCRIBE_END where the version has it (lite-05+); the FIN
		// alone ends the subscription before.
		if !v.SubscribeOK {
			end := uint64(0)
			if served.Opened {
				end = served.Last + 1
			}
			resp := wire.SubscribeResponse{Type: wire.RespEnd, Group: end}
			_, err = str.Write(resp.AppendFor(nil, v))
		}
		if served.EndErr != nil {
			s.Log.Debug("moq: published track ended with error", "track", req.Track, "err", served.EndErr)
		}
	}
	switch {
	case err == nil:
		str.Close()
	case sessionEnding():
		// The session is ending (Close, a server that stops): the
		// subscription is cut, not complete. A FIN would read as the
		// publisher's end of it.
		str.CancelWrite(wire.StreamCode(v, wire.CodeClosed))
	case ctx.Err() != nil:
		// Unsubscribed: finish our side too.
		str.Close()
	default:
		s.Log.Debug("moq: serving subscription", "track", req.Track, "err", err)
		str.CancelWrite(wire.CodeCancel)
	}
	str.CancelRead(wire.CodeCancel)
}

// window is the part of t a SUBSCRIBE asks for: from its start group
// (its Frame Start in it, lite-06), or the live edge without one, through
// its end group (and Frame End in it).
func window(t *model.Track, v *wire.Version, req wire.Subscribe) session.Window {
	first, hasFirst := req.Start.Seq, req.Start.Valid
	if latest, ok := t.LatestGroup(); v.FrameRange && ok && latest >= req.Start.Seq {
		// lite-06 (section 6.2): Group Start is a floor. The start is the
		// oldest group at or above it that the max age does not expire:
		// the latest one without a max age. A floor above the latest
		// group waits there.
		first, hasFirst = latest, true
		if req.MaxLatency > 0 {
			if seq, ok := session.OldestUnexpired(t, req.Start.Seq, req.MaxLatency); ok {
				first = seq
			}
		}
	}
	if !hasFirst {
		// Start at the live edge, like the reference publishers.
		first, hasFirst = t.LatestGroup()
	}
	w := session.Window{Start: session.Location{Group: first}, HasStart: hasFirst}
	if req.Start.Valid && first == req.Start.Seq {
		// Frame Start counts in the floor group only.
		w.Start.Frame = req.FrameStart
	}
	if req.End.Valid {
		w.End, w.HasEnd = req.End.Seq, true
		if req.FrameEnd.Valid {
			w.EndFrame = req.FrameEnd.Seq + 1
		}
	}
	return w
}

// liteSink writes one subscription's groups in moq-lite's wire: a uni
// stream per group with its GROUP header, then its FRAMEs.
type liteSink struct {
	open    session.OpenUni
	stopped func(error) bool // see Publisher.Stopped
	v       *wire.Version
	ctx     context.Context
	str     session.Stream
	id      uint64 // the SUBSCRIBE's id

	okSent bool
	group  session.SendStream
	last   int64 // the previous frame's wire timestamp on the group
	buf    []byte
}

func (k *liteSink) OpenGroup(seq, first uint64) error {
	if !k.okSent && !k.v.SubscribeOK {
		resp := wire.SubscribeResponse{Type: wire.RespOK, Group: seq}
		if _, err := k.str.Write(resp.Append(nil)); err != nil {
			return err
		}
		k.okSent = true
	}
	g, err := k.open(k.ctx)
	if err != nil {
		return err
	}
	h := wire.Group{SubscribeID: k.id, Sequence: seq, FrameStart: first}
	if _, err := g.Write(h.AppendFor(varint.Append(k.buf[:0], wire.UniGroup), k.v)); err != nil {
		g.CancelWrite(wire.CodeCancel)
		return err
	}
	k.group, k.last = g, 0
	return nil
}

func (k *liteSink) WriteObject(o session.Object, _ uint64) error {
	k.buf = AppendFrame(k.buf[:0], k.v, o, k.last)
	k.last = o.Track
	if _, err := k.group.Write(k.buf); err != nil {
		if k.stopped != nil && k.stopped(err) {
			// The subscriber stopped this group (STOP_SENDING).
			return fmt.Errorf("%w: %w", session.ErrGroupStopped, err)
		}
		return err
	}
	return nil
}

func (k *liteSink) CloseGroup(how session.GroupEnd) {
	switch how {
	case session.GroupComplete:
		k.group.Close()
	case session.GroupCut:
		// A reset the subscriber reads as the session closing, so that
		// its resumed subscription completes the group.
		k.group.CancelWrite(wire.StreamCode(k.v, wire.CodeClosed))
	default:
		k.group.CancelWrite(wire.CodeCancel)
	}
	k.group = nil
}

// ServeFetch answers FETCH with the frames of one group the published
// track still holds, then FIN; a group it does not hold (never made, or
// dropped from the track's buffer) is reset with 13, as the reference does.
// A group still being written is served as its frames arrive.
func (s *Publisher) ServeFetch(ctx context.Context, v *wire.Version, str session.Stream, r *bufio.Reader) {
	var req wire.Fetch
	if !readRequest(str, r, versioned{&req, v}) {
		return
	}
	if s.NoFetch {
		s.Log.Debug("moq: fetch refused: this publisher serves none", "track", req.Track, "group", req.Group)
		resetStream(str, wire.CodeCancel)
		return
	}
	t, enc := s.publishedTrack(v, str, req.Broadcast, req.Track)
	if t == nil {
		return
	}
	g := t.Group(req.Group)
	if g == nil {
		s.Log.Debug("moq: fetch of a group not held", "track", req.Track, "group", req.Group)
		resetStream(str, wire.StreamCode(v, wire.CodeNotFound))
		return
	}
	// A reset of the subscriber's side cancels the fetch; its FIN does not.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		if _, err := io.Copy(io.Discard, r); err != nil {
			cancel()
		}
	}()
	// A consumer that never reads serves as the wake-up of a group still
	// being written.
	cons := t.Subscribe(time.Hour)
	defer cons.Close()
	rs := model.NewReadySet()
	cons.Watch(rs)
	// A frame range (lite-06) starts at FrameStart and stops after
	// FrameEnd; a group that ends before FrameStart cannot serve it and is
	// reset (never a shorter run), one that ends before FrameEnd is served
	// to its end.
	to := uint64(0)
	if req.FrameEnd.Valid {
		to = req.FrameEnd.Seq + 1
	}
	var buf []byte
	var last int64
	var werr error
	sent, bytes := 0, 0
	err := session.ServeGroup(ctx, g, rs, req.FrameStart, to, &enc, func(o session.Object, _ uint64, batchEnd bool) error {
		buf = AppendFrame(buf, v, o, last)
		last = o.Track
		sent++
		if !batchEnd {
			return nil
		}
		bytes += len(buf)
		_, werr = str.Write(buf)
		buf = buf[:0]
		return werr
	})
	switch {
	case err == nil:
		// Logged before the FIN, so that it is there once the subscriber
		// has the frames.
		s.Log.Debug("moq: fetch served", "track", req.Track, "group", req.Group, "from", req.FrameStart, "frames", sent, "bytes", bytes)
		str.Close()
		str.CancelRead(wire.CodeCancel)
	case errors.Is(err, session.ErrNotHeld):
		s.Log.Debug("moq: fetch of frames a group does not hold", "track", req.Track, "group", req.Group, "from", req.FrameStart)
		resetStream(str, wire.StreamCode(v, wire.CodeNotFound))
	case werr != nil:
		str.CancelRead(wire.CodeCancel)
	default:
		// Cancelled, or a group that ended in an error.
		resetStream(str, wire.CodeCancel)
	}
}

// AppendFrame appends one FRAME of o (on a group or a fetch stream) laid
// out for v: the timestamp, in the track's timescale, as a delta from the
// previous frame's (last, in that timescale) where v has frame
// timestamps, and o's payload.
func AppendFrame(b []byte, v *wire.Version, o session.Object, last int64) []byte {
	if v.FrameTimestamps {
		b = varint.Append(b, wire.Zigzag(o.Track-last))
	}
	b = varint.Append(b, uint64(len(o.Payload)))
	return append(b, o.Payload...)
}
