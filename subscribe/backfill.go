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
)

// errNoFetch means the peer refused a FETCH or the group has no frame.
var errNoFetch = session.ErrNoFetch

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
func (l liteFamily) OpenFetch(ctx context.Context, rt *session.Remote, timescale uint64, r session.FetchRange, _ string) (session.FetchReply, error) {
	str, err := l.c.OpenBidi(ctx)
	if err != nil {
		return nil, fmt.Errorf("open fetch stream: %w", err)
	}
	v := connVersion(l.c)
	m := wire.Fetch{Broadcast: rt.Broadcast, Track: rt.Name, Priority: priorityOf(rt.Name), Group: r.Group, FrameStart: r.From}
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
