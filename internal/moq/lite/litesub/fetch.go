package litesub

import (
	"bufio"
	"context"
	"fmt"
	"time"

	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/varint"
)

// OpenFetch sends a moq-lite FETCH of r on its own stream; the frames
// that answer it are the reply. A moq-lite FETCH names one group.
func (c Conn) OpenFetch(ctx context.Context, rt *session.Remote, timescale uint64, r session.FetchRange, what string) (session.FetchReply, error) {
	if r.Groups > 1 {
		return nil, fmt.Errorf("%w: %s: a moq-lite FETCH names one group", session.ErrNoFetch, what)
	}
	str, err := c.C.OpenBidi(ctx)
	if err != nil {
		return nil, fmt.Errorf("open fetch stream: %w", err)
	}
	v := c.V
	m := wire.Fetch{Broadcast: rt.Broadcast, Track: rt.Name, Priority: session.Priority(rt.Name), Group: r.Group, FrameStart: r.From}
	if r.HasTo {
		m.FrameEnd = wire.Some(r.To)
	}
	if _, err := str.Write(m.AppendFor(varint.Append(nil, wire.StreamFetch), v)); err != nil {
		str.CancelRead(wire.CodeCancel)
		return nil, fmt.Errorf("send FETCH: %w", err)
	}
	return &fetchReply{s: c.S, str: str, fr: wire.NewFrameReader(bufio.NewReader(str), v), group: r.Group, timescale: timescale}, nil
}

// fetchReply is a moq-lite FETCH's answer: the group's frames on the
// request's stream.
type fetchReply struct {
	s                *Session
	str              session.Stream
	fr               *wire.FrameReader
	group, timescale uint64
}

func (f *fetchReply) Next() (hang.Object, uint64, bool, error) {
	payload, err := f.fr.Next()
	if err != nil {
		return hang.Object{}, f.group, false, session.FetchReadErr(ProtocolErr(err), f.s.isReset(err))
	}
	return hang.Object{Payload: payload, Timestamp: f.fr.Timestamp, Timescale: f.timescale, FrameTime: !f.fr.NoTimestamps}, f.group, false, nil
}

func (f *fetchReply) Interrupt() { f.str.SetReadDeadline(time.Now()) }

func (f *fetchReply) End(err error, bad bool) {
	switch {
	case err == nil:
		f.str.Close()
		f.str.CancelRead(wire.CodeCancel)
	case bad:
		session.ResetStream(f.str, wire.CodeDecode)
	default:
		session.ResetStream(f.str, wire.CodeCancel)
	}
}
