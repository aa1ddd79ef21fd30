package session

import (
	"context"
	"fmt"

	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/model"
)

// Backfill is the model.Track backfill handler of a subscribed track
// (set it with model.Track.HandleBackfill): the core's Backfill over
// FETCHes on the track's current subscription. It returns nil: a backfill
// that stops, or cannot start (between subscriptions: nothing to FETCH
// on), says why in a Debug line.
func (rt *Remote) Backfill(ctx context.Context, target int64) error {
	c, timescale, gen := rt.Current()
	if c == nil {
		rt.logger().Debug("moq: no backfill: the track has no subscription now", "target", target)
		return nil
	}
	if !c.Fetches() {
		// Said once per connection at Info (the session's negotiation).
		rt.Host.Logger().Debug("moq: no backfill: the protocol version has no FETCH", "track", rt.Name, "version", c.VersionName())
		return nil
	}
	Backfill(ctx, rt.Track, target,
		func(ctx context.Context, seq uint64) ([]model.Frame, error) { return rt.Fetch(ctx, c, timescale, seq) },
		func() bool {
			rt.mu.Lock()
			defer rt.mu.Unlock()
			return rt.subGen == gen && rt.conn == c
		},
		rt.logger())
	return nil
}

// Fetch runs one FETCH for group seq on c and returns its frames (at least
// one). A reset, or a group without frames, is ErrNoFetch.
func (rt *Remote) Fetch(ctx context.Context, c Family, timescale, seq uint64) ([]model.Frame, error) {
	return rt.fetchRange(ctx, c, timescale, FetchRange{Group: seq})
}

// FetchFrames runs one FETCH of group seq, frames from..to (inclusive;
// without hasTo, to the group's end; a range needs FrameRanges, lite-06).
func (rt *Remote) FetchFrames(ctx context.Context, c Family, timescale, seq, from, to uint64, hasTo bool) ([]model.Frame, error) {
	return rt.fetchRange(ctx, c, timescale, FetchRange{Group: seq, From: from, To: to, HasTo: hasTo})
}

// FetchGroups runs one FETCH of the n groups from seq on (n > 1 needs
// Family.GroupRanges) and returns each group's frames, or why not (see
// FetchGroups).
func (rt *Remote) FetchGroups(ctx context.Context, c Family, timescale, seq uint64, n int) []Fetched {
	what := fmt.Sprintf("FETCH %q/%q groups %d-%d", rt.Broadcast, rt.Name, seq, seq+uint64(n)-1)
	reply, err := c.OpenFetch(ctx, rt, timescale, FetchRange{Group: seq, Groups: uint64(n)}, what)
	res := make([]Fetched, n)
	if err != nil {
		for i := range res {
			res[i].Err = err
		}
		return res
	}
	res = FetchGroups(ctx, reply, rt.decoder, seq, n, what)
	for i := range res {
		res[i].Err = DecodeErr(res[i].Err)
	}
	return res
}

// fetchRange runs one FETCH of r on c: c's family sends it and waits for
// the answer in its own wire, Fetch reads the reply into frames through
// the track's decoder.
func (rt *Remote) fetchRange(ctx context.Context, c Family, timescale uint64, r FetchRange) ([]model.Frame, error) {
	what := fmt.Sprintf("FETCH %q/%q group %d", rt.Broadcast, rt.Name, r.Group)
	reply, err := c.OpenFetch(ctx, rt, timescale, r, what)
	if err != nil {
		return nil, err
	}
	dec := rt.decoder()
	defer dec.Close()
	frames, err := Fetch(ctx, reply, &dec, what)
	return frames, DecodeErr(err)
}

// decoder is a decoder of one of the track's groups.
func (rt *Remote) decoder() hang.Decoder {
	dec := rt.Pack.Decoder()
	dec.Verbatim = rt.Host.Config().Objects
	return dec
}
