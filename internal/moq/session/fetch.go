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

// ErrFetchRefused (it wraps ErrNoFetch) means the peer said it serves no
// FETCH at all (moq-transport's NOT_SUPPORTED, or a server learnt to close
// the session on one): the groups may well be there, and a span
// subscription asks them instead (Family.SpanSubscribes). ErrNotServed
// (it wraps ErrNoFetch too) means the peer said it does not hold what was
// asked (moq-transport's NO_OBJECTS, INVALID_RANGE, DOES_NOT_EXIST): asking
// the same groups another way would bring nothing. A FETCH whose answer
// says neither (a reset, as moq-lite refuses either) wraps ErrNoFetch
// alone.
var (
	ErrFetchRefused = fmt.Errorf("%w: the peer serves no FETCH", ErrNoFetch)
	ErrNotServed    = fmt.Errorf("%w: the peer does not hold it", ErrNoFetch)
)

// mayBeRefused reports whether a FETCH that failed with err may have been
// refused as such (the peer serves no FETCH), not for want of the groups:
// what sends a resume to a span subscription.
func mayBeRefused(err error) bool {
	return errors.Is(err, ErrNoFetch) && !errors.Is(err, ErrNotServed)
}

// FetchRange is what one FETCH asks for: group Group, its frames From..To
// (inclusive; HasTo false: to the group's end). Only a family whose
// version can ask a frame range (moq-lite-06) is given one with From > 0
// or HasTo; the others are asked for whole groups. Groups above 1 asks
// that many whole groups from Group on (a family whose FETCH names a range
// of groups, moq-transport: Family.GroupRanges); 0 is one.
type FetchRange struct {
	Group, From, To uint64
	HasTo           bool
	Groups          uint64
}

// A FetchReply is a FETCH's answer as a family reads it off its wire,
// once the peer took the request: each family sends the request and waits
// for the answer in its own messages, and hands the core the objects.
type FetchReply interface {
	// Next returns the reply's next object and its group; skip says it
	// is not one of the groups asked (a moq-transport status object,
	// another group's). io.EOF at the reply's end. Another error says why the reply broke:
	// one wrapping ErrNoFetch when the peer withdrew it (a reset), a
	// protocol error otherwise.
	Next() (obj hang.Object, group uint64, skip bool, err error)
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
	var frames []model.Frame
	err := readReply(ctx, reply, what, func(_ uint64, obj hang.Object) (err error) {
		frames, err = Collect(dec, obj, frames)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(frames) == 0 {
		return nil, fmt.Errorf("%w: %s: no frame", ErrNoFetch, what)
	}
	return frames, nil
}

// FetchGroups reads reply, the answer to the FETCH named what of the n
// groups from first on, into one Fetched per group, in order, each group
// decoded by a decoder of its own (decoder makes one; FetchGroups closes
// it). The objects come in ascending group order: a group is whole once an
// object of a later group came or the reply ended. A group the reply did
// not carry is ErrNoFetch (a publisher that no longer holds it); when the
// reply broke (Fetch's errors), the group it broke in and those after it
// carry that error, and the groups before it their frames.
func FetchGroups(ctx context.Context, reply FetchReply, decoder func() hang.Decoder, first uint64, n int, what string) []Fetched {
	res := make([]Fetched, n)
	cur := -1
	var dec hang.Decoder
	defer func() {
		if cur >= 0 {
			dec.Close()
		}
	}()
	err := readReply(ctx, reply, what, func(group uint64, obj hang.Object) error {
		if group < first || group-first >= uint64(n) {
			return nil // the family passes only what was asked; nothing else counts
		}
		i := int(group - first)
		switch {
		case i < cur:
			return fmt.Errorf("%w: group %d after group %d in an ascending FETCH", ErrProtocol, group, first+uint64(cur))
		case i > cur:
			if cur >= 0 {
				dec.Close()
			}
			dec, cur = decoder(), i
		}
		var err error
		res[i].Frames, err = Collect(&dec, obj, res[i].Frames)
		return err
	})
	for i := range res {
		switch {
		case err != nil && i >= cur:
			res[i] = Fetched{Err: err}
		case len(res[i].Frames) == 0:
			res[i].Err = fmt.Errorf("%w: %s: no frame of group %d", ErrNoFetch, what, first+uint64(i))
		}
	}
	return res
}

// readReply reads reply to its end, handing each object of the groups
// asked to each; an error of each ends the reply as a bad stream.
func readReply(ctx context.Context, reply FetchReply, what string, each func(group uint64, obj hang.Object) error) error {
	stop := context.AfterFunc(ctx, reply.Interrupt)
	defer stop()
	for {
		obj, group, skip, err := reply.Next()
		if err == io.EOF {
			reply.End(nil, false)
			return nil
		}
		if err != nil {
			reply.End(err, false)
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return fmt.Errorf("%s: %w", what, err)
		}
		if skip {
			continue
		}
		if err := each(group, obj); err != nil {
			reply.End(err, true)
			return fmt.Errorf("%s: %w", what, err)
		}
	}
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
