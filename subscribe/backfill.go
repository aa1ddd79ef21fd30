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
	"github.com/moq-export/moq-export/internal/varint"
	"github.com/moq-export/moq-export/model"
)

// errNoFetch means the peer refused a FETCH or the group has no frame.
var errNoFetch = session.ErrNoFetch

// backfill is the model.Track backfill handler of a subscribed track: the
// core's (session.Backfill) over FETCHes on the track's current
// subscription. It returns nil: a backfill stops quietly.
func (rt *remoteTrack) backfill(ctx context.Context, target int64) error {
	rt.mu.Lock()
	c, timescale, gen := rt.conn, rt.timescale, rt.subGen
	rt.mu.Unlock()
	if c == nil {
		return nil
	}
	if v := connVersion(c); v.Family == wire.FamilyLite && !v.Fetch {
		// Said once per connection at Info (logNegotiated).
		rt.rb.s.log.Debug("moq: no backfill: the protocol version has no FETCH", "track", rt.name, "version", connVersion(c).Name)
		return nil
	}
	session.Backfill(ctx, rt.track, target,
		func(ctx context.Context, seq uint64) ([]model.Frame, error) { return rt.fetch(ctx, c, timescale, seq) },
		func() bool {
			rt.mu.Lock()
			defer rt.mu.Unlock()
			return rt.subGen == gen && rt.conn == c
		},
		rt.rb.s.log.With("broadcast", rt.rb.path, "track", rt.name))
	return nil
}

// fetch runs one FETCH for group seq on c and returns its frames (at least
// one). A reset, or a group without frames, is errNoFetch.
func (rt *remoteTrack) fetch(ctx context.Context, c conn, timescale, seq uint64) ([]model.Frame, error) {
	return rt.fetchRange(ctx, c, timescale, session.FetchRange{Group: seq})
}

// fetchFrames runs one FETCH of group seq, frames from..to (inclusive; to
// absent = the group's end; a range needs a FrameRange version, lite-06).
func (rt *remoteTrack) fetchFrames(ctx context.Context, c conn, timescale, seq, from uint64, to wire.Opt) ([]model.Frame, error) {
	return rt.fetchRange(ctx, c, timescale, session.FetchRange{Group: seq, From: from, To: to.Seq, HasTo: to.Valid})
}

// fetchRange runs one FETCH of r on c: c's family sends it and waits for
// the answer in its own wire, the core (session.Fetch) reads the reply
// into frames through the track's decoder.
func (rt *remoteTrack) fetchRange(ctx context.Context, c conn, timescale uint64, r session.FetchRange) ([]model.Frame, error) {
	what := fmt.Sprintf("FETCH %q/%q group %d", rt.rb.path, rt.name, r.Group)
	reply, err := c.family().openFetch(ctx, rt, timescale, r, what)
	if err != nil {
		return nil, err
	}
	dec := rt.pack.Decoder()
	dec.Verbatim = rt.rb.s.opts.Objects
	defer dec.Close()
	frames, err := session.Fetch(ctx, reply, &dec, what)
	return frames, decodeErr(err)
}

// fetchReadErr is how a FETCH reply's read error reaches the core: a
// reset is the peer withdrawing it (errNoFetch), bytes either codec
// rejects are ErrProtocol.
func fetchReadErr(err error) error {
	if err == io.EOF {
		return err
	}
	if re, ok := errors.AsType[*ResetError](err); ok {
		return fmt.Errorf("%w: %w", errNoFetch, re)
	}
	return protocolErr(err)
}

// openFetch sends a moq-lite FETCH of r on its own stream; the frames
// that answer it are the reply.
func (l liteFamily) openFetch(ctx context.Context, rt *remoteTrack, timescale uint64, r session.FetchRange, _ string) (session.FetchReply, error) {
	str, err := l.c.OpenBidi(ctx)
	if err != nil {
		return nil, fmt.Errorf("open fetch stream: %w", err)
	}
	v := connVersion(l.c)
	m := wire.Fetch{Broadcast: rt.rb.path, Track: rt.name, Priority: priorityOf(rt.name), Group: r.Group, FrameStart: r.From}
	if r.HasTo {
		m.FrameEnd = wire.Some(r.To)
	}
	if _, err := str.Write(m.AppendFor(varint.Append(nil, wire.StreamFetch), v)); err != nil {
		str.CancelRead(CodeCancel)
		return nil, fmt.Errorf("send FETCH: %w", err)
	}
	return &liteFetchReply{str: str, fr: wire.NewFrameReader(bufio.NewReader(str), v), timescale: timescale}, nil
}

// liteFetchReply is a moq-lite FETCH's answer: the group's frames on the
// request's stream.
type liteFetchReply struct {
	str       bidiStream
	fr        *wire.FrameReader
	timescale uint64
}

func (f *liteFetchReply) Next() (hang.Object, bool, error) {
	payload, err := f.fr.Next()
	if err != nil {
		return hang.Object{}, false, fetchReadErr(err)
	}
	return hang.Object{Payload: payload, Timestamp: f.fr.Timestamp, Timescale: f.timescale, FrameTime: !f.fr.NoTimestamps}, false, nil
}

func (f *liteFetchReply) Interrupt() { f.str.SetReadDeadline(time.Now()) }

func (f *liteFetchReply) End(err error, bad bool) {
	switch {
	case err == nil:
		f.str.Close()
		f.str.CancelRead(CodeCancel)
	case bad:
		resetStream(f.str, CodeDecode)
	default:
		resetStream(f.str, CodeCancel)
	}
}
