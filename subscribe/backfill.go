package subscribe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/varint"
	"github.com/moq-export/moq-export/model"
)

// Bounds of one backfill (see model.Track.Backfill): at most this many
// groups, this much media before the oldest group held, this long.
const (
	backfillMaxGroups = 256
	backfillMaxSpan   = 5 * time.Second
	backfillTimeout   = 5 * time.Second
	// backfillMaxWindow caps the FETCH streams in flight at once.
	backfillMaxWindow = 16
)

// errNoFetch means the peer refused a FETCH or the group has no frame.
var errNoFetch = errors.New("moq: group not available")

// fetched is one group a FETCH returned.
type fetched struct {
	frames []model.Frame
	err    error
}

// backfill is the model.Track backfill handler of a subscribed track: it
// FETCHes the groups before the oldest one the track holds, newest first,
// and inserts each as a finished group, until one starts at or before
// target. It stops quietly at the first group the peer refuses (a reset: a
// relay keeps past groups for a while only; a peer that does not serve
// FETCH), at sequence 0, and at the bounds above; it returns nil then.
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
	seq, first, ok := rt.track.OldestGroup()
	if !ok || first <= target || seq == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, backfillTimeout)
	defer cancel()
	log := rt.rb.s.log.With("broadcast", rt.rb.path, "track", rt.name)
	// The first round fetches one group; its start tells how much media a
	// group holds, which sizes the next rounds (one-frame audio groups need
	// dozens, a video GOP usually one).
	window, added, newest := 1, 0, first
	for seq > 0 && added < backfillMaxGroups {
		n := int(min(uint64(window), seq, uint64(backfillMaxGroups-added)))
		res := make([]fetched, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				res[i].frames, res[i].err = rt.fetch(ctx, c, timescale, seq-1-uint64(i))
			})
		}
		wg.Wait()
		for i, r := range res {
			s := seq - 1 - uint64(i)
			if r.err != nil {
				log.Debug("moq: backfill stopped", "group", s, "err", r.err)
				return nil
			}
			ts := r.frames[0].Timestamp
			if first-ts > backfillMaxSpan.Microseconds() {
				log.Debug("moq: backfill stopped at its media bound", "group", s)
				return nil
			}
			rt.mu.Lock()
			current := rt.subGen == gen && rt.conn == c
			rt.mu.Unlock()
			if !current {
				return nil // resubscribed meanwhile: a new timeline
			}
			switch err := insertGroup(rt.track, s, r.frames); {
			case errors.Is(err, model.ErrDuplicateGroup):
				// The subscription opened it meanwhile (its stream
				// came before its first frame, which OldestGroup
				// looks at): the older groups are still missing.
			case err != nil:
				log.Debug("moq: backfill stopped", "group", s, "err", err)
				return nil
			default:
				added++
			}
			if ts <= target {
				log.Debug("moq: backfilled", "groups", added)
				return nil
			}
			newest = ts
		}
		seq -= uint64(n)
		// Groups still needed at the pace seen so far.
		if per := (first - newest) / int64(max(added, 1)); per > 0 {
			window = int(min((newest-target+per-1)/per, backfillMaxWindow))
		}
		window = max(window, 1)
	}
	log.Debug("moq: backfill stopped at its group bound", "groups", added)
	return nil
}

// insertGroup adds group seq to t with frames, finished.
func insertGroup(t *model.Track, seq uint64, frames []model.Frame) error {
	g, err := t.CreateGroup(seq)
	if err != nil {
		return err
	}
	for _, f := range frames {
		if err := g.WriteFrame(f); err != nil {
			return err
		}
	}
	g.Close(nil)
	return nil
}

// fetch runs one FETCH for group seq on c and returns its frames (at least
// one). A reset, or a group without frames, is errNoFetch.
func (rt *remoteTrack) fetch(ctx context.Context, c conn, timescale, seq uint64) ([]model.Frame, error) {
	return c.family().fetchGroup(ctx, rt, timescale, seq)
}

// fetchFrames runs one moq-lite FETCH of group seq, frames from..to
// (inclusive; to absent = the group's end; a range needs a FrameRange
// version, lite-06).
func (rt *remoteTrack) fetchFrames(ctx context.Context, c conn, timescale, seq, from uint64, to wire.Opt) ([]model.Frame, error) {
	str, err := c.OpenBidi(ctx)
	if err != nil {
		return nil, fmt.Errorf("open fetch stream: %w", err)
	}
	m := wire.Fetch{Broadcast: rt.rb.path, Track: rt.name, Priority: priorityOf(rt.name), Group: seq, FrameStart: from, FrameEnd: to}
	if _, err := str.Write(m.AppendFor(varint.Append(nil, wire.StreamFetch), connVersion(c))); err != nil {
		str.CancelRead(CodeCancel)
		return nil, fmt.Errorf("send FETCH: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { str.SetReadDeadline(time.Now()) })
	defer stop()
	fr := wire.NewFrameReader(bufio.NewReader(str), connVersion(c))
	var frames []model.Frame
	dec := rt.pack.Decoder()
	dec.Verbatim = rt.rb.s.opts.Objects
	defer dec.Close()
	for {
		payload, err := fr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			resetStream(str, CodeCancel)
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			if re, ok := errors.AsType[*ResetError](err); ok {
				return nil, fmt.Errorf("%w: FETCH %q/%q group %d: %w", errNoFetch, rt.rb.path, rt.name, seq, re)
			}
			return nil, fmt.Errorf("FETCH %q/%q group %d: %w", rt.rb.path, rt.name, seq, protocolErr(err))
		}
		if frames, err = session.Collect(&dec, hang.Object{Payload: payload, Timestamp: fr.Timestamp, Timescale: timescale, FrameTime: !fr.NoTimestamps}, frames); err != nil {
			resetStream(str, CodeDecode)
			return nil, fmt.Errorf("FETCH %q/%q group %d: %w", rt.rb.path, rt.name, seq, decodeErr(err))
		}
	}
	str.Close()
	str.CancelRead(CodeCancel)
	if len(frames) == 0 {
		return nil, fmt.Errorf("%w: group %d of %q is empty", errNoFetch, seq, rt.name)
	}
	return frames, nil
}
