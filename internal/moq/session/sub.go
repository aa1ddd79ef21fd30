package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/model"
)

// Sub is one subscription of a track on one connection: the state both
// families' group readers share (Subscription) with the track it feeds
// and the family's routing of its group streams.
type Sub struct {
	Subscription
	Remote *Remote
	// GroupStops ends the group streams' reads when Ctx ends.
	GroupStops StopSet[RecvStream]
	// Router routes the subscription's group streams (its family's
	// wire, set by its Route): Unroute stops it.
	Router Wire[*Sub]
}

// The subscription is its core's host (Host).

func (sub *Sub) Logger() *slog.Logger { return sub.Remote.Host.Logger() }
func (sub *Sub) Names() (broadcast, track string) {
	return sub.Remote.Broadcast, sub.Remote.Name
}
func (sub *Sub) Timeouts() (request, drainGrace time.Duration) {
	cfg := sub.Remote.Host.Config()
	return cfg.RequestTimeout, cfg.DrainGrace
}
func (sub *Sub) PendingStreams() int { return sub.Remote.Host.PendingStreams() }
func (sub *Sub) Unroute()            { sub.Router.Unroute(sub) }

// CreateGroup makes group seq of the track for the group stream that
// holds ticket t, in the order the streams were accepted: a new group, or
// one a lost connection cut, adopted to be completed (skip: the frames it
// has; adopted says it was one). Both families' group readers open
// their groups here.
func (sub *Sub) CreateGroup(seq uint64, t OrderTicket) (g *model.Group, skip int, adopted bool, err error) {
	rt := sub.Remote
	t.Wait(sub.Ctx, &sub.MadeGroup)
	g, err = rt.Track.CreateGroup(seq)
	sub.MadeGroup.Store(true)
	t.Done()
	if errors.Is(err, model.ErrDuplicateGroup) {
		if g, skip, adopted = rt.adopt(seq); adopted {
			err = nil
		}
	}
	sub.Created(seq)
	return g, skip, adopted, err
}

// EndGroup ends group seq (g; nil when the stream ended before it was
// made) after its stream's read failed with err: io.EOF completes it; cut
// (the family says the connection, or the peer's session, went with it)
// or a lost connection leaves it open for a resumed subscription to
// complete; the subscription's end truncates it; anything else is a reset
// (reset says so) or a bad stream, cancelled with the family's badCode.
// err is in the family's terms already (a malformed message is
// ErrProtocol). Both families' group readers end their groups here.
func (sub *Sub) EndGroup(str RecvStream, g *model.Group, seq uint64, err error, cut, reset bool, badCode uint64) {
	rt, log := sub.Remote, sub.Remote.Host.Logger()
	switch {
	case err == io.EOF:
		if g != nil {
			g.Close(nil)
		}
	case cut || errors.Is(context.Cause(sub.Ctx), ErrConnLost):
		if g != nil {
			// Left open: a resumed subscription completes it.
			rt.interrupt(seq, g)
		}
	case sub.Ctx.Err() != nil:
		cause := context.Cause(sub.Ctx)
		if !errors.Is(cause, ErrTruncated) {
			cause = fmt.Errorf("%w: %w", ErrTruncated, cause)
		}
		log.Debug("moq: group stopped", "track", rt.Name, "group", seq, "err", cause)
		if g != nil {
			g.Close(fmt.Errorf("group %d of %q: %w", seq, rt.Name, cause))
		}
	default:
		if !reset {
			str.CancelRead(badCode)
			log.Warn("moq: bad group stream", "track", rt.Name, "group", seq, "err", err)
		} else {
			log.Debug("moq: group reset", "track", rt.Name, "group", seq, "err", err)
		}
		if g != nil {
			g.Close(fmt.Errorf("group %d of %q: %w", seq, rt.Name, err))
		}
	}
}

// DecodeErr is the error of a payload package hang could not decode: a
// protocol error (the peer sent what its catalog does not say).
func DecodeErr(err error) error {
	if errors.Is(err, hang.ErrMalformed) {
		return fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	return err
}

// StopReading ends the reads of str, which another goroutine may be
// blocked in: CancelRead with code, and a read deadline now. A
// webtransport-go stream that met the peer's "session gone" reset waits in
// Read for its session to close it, which CancelRead stops (it takes the
// stream off the session's list) and a deadline always ends.
func StopReading(str interface {
	CancelRead(uint64)
	SetReadDeadline(time.Time) error
}, code uint64) {
	str.CancelRead(code)
	str.SetReadDeadline(time.Now())
}

// ControlReadBuffer is the read buffer of an announce feed's stream: its
// messages are a few bytes to a few hundred. A longer message is read
// through it all the same.
const ControlReadBuffer = 512

// RequestReadBuffer is the read buffer of a subscription's stream (and
// of a moq-transport request's, or a PUBLISH_NAMESPACE's), which carries a
// response or two of a few bytes each: a recorder of 1,000 broadcasts
// holds 3,000 such streams open, so bufio's 4 KB default would cost 12 MB
// for nothing (512 B: 1.5 MB). A longer message is read through it all
// the same (wire.ReadMessage and ietf.ReadMessage copy the body out).
const RequestReadBuffer = 32

// GroupReadBuffer is the read buffer of a uni (group) stream. It holds
// headers and small frames (an AAC frame is a few hundred bytes); a payload
// at least as big is read by bufio straight into its slab, so a larger
// buffer would buy no fewer reads for video. A reader is held for as long
// as its stream is open: a paused broadcast's open groups, one per track,
// so bufio's 4 KB default would cost a recorder of 1,000 idle broadcasts
// 12 MB for nothing.
const GroupReadBuffer = 512
