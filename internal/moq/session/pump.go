package session

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/model"
)

// ErrGroupClosed is what Pump.Feed returns (wrapped) when the group was
// closed before its stream ended: the reader stops reading it.
var ErrGroupClosed = errors.New("moq: group closed before its stream ended")

// Pump is the one group pump both families feed: the objects a family
// reads off one group stream (moq-lite frames, moq-transport subgroup
// objects, each read into a hang.Object by its own wire code) go through
// the track's hang decoder, and the frames they complete into the model
// group. Neither family decodes a payload or writes a frame itself.
type Pump struct {
	// Dec is the track's decoder for this group (hang.Track.Decoder);
	// the reader closes it when the group ends.
	Dec hang.Decoder
	// Group is the model group the frames go to, set once it exists
	// (a moq-transport reader creates it at the first object).
	Group *model.Group
	// Skip is how many frames the group already has (a group a lost
	// connection cut, being completed): the first Skip frames decoded are
	// not written twice.
	Skip int
	// Log takes the decoder's warnings and the objects skipped, named by
	// Track and Seq (attributes made only when something is logged: the
	// pump runs once per frame).
	Log   *slog.Logger
	Track string
	Seq   uint64
}

// Feed decodes obj and writes the frames it completes. It returns nil to
// go on: a bad fragment hang skips is logged and skipped, with the delta
// frames after it up to a keyframe. An error wrapping ErrGroupClosed: the
// group was closed before its stream ended. Any other error is the
// decoder's (errors.Is hang.ErrMalformed when the payload is not what the
// catalog says): the stream is bad, and the reader ends it.
//
// Feed runs once per frame on the group stream's goroutine, under the
// family's reader and above quic-go's reads and the model's writes: it
// keeps a small frame, what it logs or wraps is done in functions of
// its own (see litesub's ReadGroup for why the stack depth counts).
func (p *Pump) Feed(obj hang.Object) error {
	err := p.Dec.Decode(obj)
	if w := p.Dec.Warning(); w != "" {
		p.warn(w)
	}
	if err != nil {
		return p.decodeFailed(err)
	}
	for f, ok := p.Dec.Next(); ok; f, ok = p.Dec.Next() {
		if p.Skip > 0 {
			p.Skip--
			continue
		}
		if err := p.Group.WriteFrame(f); err != nil {
			return groupClosed(err)
		}
	}
	return nil
}

// warn logs the decoder's warning w.
//
//go:noinline
func (p *Pump) warn(w string) { p.Log.Warn("moq: "+w, "track", p.Track, "group", p.Seq) }

// decodeFailed is what Feed returns for the decoder's err: nil for a
// fragment hang skipped (logged), err otherwise.
//
//go:noinline
func (p *Pump) decodeFailed(err error) error {
	if errors.Is(err, hang.ErrSkipped) {
		p.Log.Warn("moq: bad object skipped", "track", p.Track, "group", p.Seq, "err", err)
		return nil
	}
	return err
}

// groupClosed is the error of a write to a closed group.
//
//go:noinline
func groupClosed(err error) error { return fmt.Errorf("%w: %w", ErrGroupClosed, err) }

// Collect decodes obj with dec and appends the frames it completes to
// frames: how both families' FETCH readers turn a past group's objects
// into frames. Any decoder error, a skipped fragment too, is returned: a
// fetched group is taken whole or not at all.
func Collect(dec *hang.Decoder, obj hang.Object, frames []model.Frame) ([]model.Frame, error) {
	if err := dec.Decode(obj); err != nil {
		return frames, err
	}
	for f, ok := dec.Next(); ok; f, ok = dec.Next() {
		frames = append(frames, f)
	}
	return frames, nil
}
