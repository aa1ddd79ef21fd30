package session

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/moq-export/moq-export/model"
)

// Bounds of one backfill (see model.Track.Backfill): at most this many
// groups, this much media before the oldest group held, this long.
const (
	BackfillMaxGroups = 256
	BackfillMaxSpan   = 5 * time.Second
	BackfillTimeout   = 5 * time.Second
	// BackfillMaxWindow caps the FETCH streams in flight at once.
	BackfillMaxWindow = 16
)

// Backfill is how a subscribed track of either family fills its past (the
// model.Track backfill handler): it FETCHes the groups before the oldest
// one track holds, newest first, and inserts each as a finished group,
// until one starts at or before target (µs). It stops at the first group
// fetch fails for (a reset: a relay keeps past groups for a while only; a
// peer that does not serve FETCH), at sequence 0, at the bounds above, and
// once current reports that the track resubscribed meanwhile (a new
// timeline); it does nothing when the track holds no frame yet (there is
// no oldest group to fetch before). Each of these ends is a Debug line of
// log that says why, never a silent return: a backfill asked too early
// (b8692bb: before the subscription's first group) read as one that ran. fetch runs one FETCH in the family's wire; several run
// at once. The first round fetches one group; its start tells how much
// media a group holds, which sizes the next rounds (one-frame audio groups
// need dozens, a video GOP usually one).
func Backfill(ctx context.Context, track *model.Track, target int64, fetch func(ctx context.Context, seq uint64) ([]model.Frame, error), current func() bool, log *slog.Logger) {
	seq, first, ok := track.OldestGroup()
	switch {
	case !ok:
		log.Debug("moq: no backfill: the track holds no frame yet", "target", target)
		return
	case first <= target:
		log.Debug("moq: no backfill needed: the oldest group held starts at or before the target", "group", seq, "first", first, "target", target)
		return
	case seq == 0:
		log.Debug("moq: no backfill: the oldest group held is group 0", "first", first, "target", target)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, BackfillTimeout)
	defer cancel()
	window, added, newest := 1, 0, first
	for seq > 0 && added < BackfillMaxGroups {
		n := int(min(uint64(window), seq, uint64(BackfillMaxGroups-added)))
		res := make([]Fetched, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				res[i].Frames, res[i].Err = fetch(ctx, seq-1-uint64(i))
			})
		}
		wg.Wait()
		for i, r := range res {
			s := seq - 1 - uint64(i)
			if r.Err != nil {
				log.Debug("moq: backfill stopped", "group", s, "err", r.Err)
				return
			}
			ts := r.Frames[0].Timestamp
			if first-ts > BackfillMaxSpan.Microseconds() {
				log.Debug("moq: backfill stopped at its media bound", "group", s)
				return
			}
			if !current() {
				log.Debug("moq: backfill stopped: the track resubscribed meanwhile (a new timeline)", "group", s, "groups", added)
				return
			}
			switch err := InsertGroup(track, s, r.Frames); {
			case errors.Is(err, model.ErrDuplicateGroup):
				// The subscription opened it meanwhile (its stream
				// came before its first frame, which OldestGroup
				// looks at): the older groups are still missing.
			case err != nil:
				log.Debug("moq: backfill stopped", "group", s, "err", err)
				return
			default:
				added++
			}
			if ts <= target {
				log.Debug("moq: backfilled", "groups", added)
				return
			}
			newest = ts
		}
		seq -= uint64(n)
		// Groups still needed at the pace seen so far.
		if per := (first - newest) / int64(max(added, 1)); per > 0 {
			window = int(min((newest-target+per-1)/per, BackfillMaxWindow))
		}
		window = max(window, 1)
	}
	log.Debug("moq: backfill stopped at its group bound", "groups", added)
}

// Fetched is one group a FETCH returned, or why it did not.
type Fetched struct {
	Frames []model.Frame
	Err    error
}

// InsertGroup adds group seq to t with frames, finished.
func InsertGroup(t *model.Track, seq uint64, frames []model.Frame) error {
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
