package session

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/model"
)

// ErrNoFetch means the peer refused a FETCH (a reset, a refusal message,
// no answer in time) or the fetched group holds no frame: a backfill or a
// gap fill stops there quietly.
var ErrNoFetch = errors.New("moq: group not available")

// FetchRange is what one FETCH asks for: group Group, its frames From..To
// (inclusive; HasTo false: to the group's end). Only a family whose
// version can ask a frame range (moq-lite-06) is given one with From > 0
// or HasTo; the others are asked for whole groups.
type FetchRange struct {
	Group, From, To uint64
	HasTo           bool
}

// A FetchReply is a FETCH's answer as a family reads it off its wire,
// once the peer took the request: each family sends the request and waits
// for the answer in its own messages, and hands the core the objects.
type FetchReply interface {
	// Next returns the reply's next object; skip says it is not one of
	// the group asked (a moq-transport status object, another group's).
	// io.EOF at the reply's end. Another error says why the reply broke:
	// one wrapping ErrNoFetch when the peer withdrew it (a reset), a
	// protocol error otherwise.
	Next() (obj hang.Object, skip bool, err error)
	// Interrupt wakes a Next blocked in a read (the FETCH's context
	// ended); it may run on another goroutine.
	Interrupt()
	// End releases the reply: err nil after io.EOF, the read error or,
	// with bad, the decoder's error (the family cancels with its decode
	// code) otherwise.
	End(err error, bad bool)
}

// Fetch reads reply, the answer to the FETCH named what ("FETCH
// "b"/"video" group 3", for errors), into the frames of the group, decoded
// by dec: how both families' FETCHes end, written once. At least one frame,
// or an error: ErrNoFetch (wrapped) for a reply the peer withdrew or one
// without frames, the context's cause once ctx ended, the decoder's error
// (hang.ErrMalformed) for a payload that is not what the catalog says, or
// the family's protocol error.
func Fetch(ctx context.Context, reply FetchReply, dec *hang.Decoder, what string) ([]model.Frame, error) {
	stop := context.AfterFunc(ctx, reply.Interrupt)
	defer stop()
	var frames []model.Frame
	for {
		obj, skip, err := reply.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			reply.End(err, false)
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if skip {
			continue
		}
		if frames, err = Collect(dec, obj, frames); err != nil {
			reply.End(err, true)
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	reply.End(nil, false)
	if len(frames) == 0 {
		return nil, fmt.Errorf("%w: %s: no frame", ErrNoFetch, what)
	}
	return frames, nil
}

// FetchReadErr is how a FETCH reply's read error reaches Fetch: a reset
// of the reply (reset) is the peer withdrawing it (ErrNoFetch); anything
// else as the family marked it (bytes its codec rejects: ErrProtocol).
func FetchReadErr(err error, reset bool) error {
	if err == io.EOF {
		return err
	}
	if reset {
		return fmt.Errorf("%w: %w", ErrNoFetch, err)
	}
	return err
}
