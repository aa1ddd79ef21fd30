package session

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/moq-export/moq-export/model"
)

// backfillTrack is a track holding groups from..to-1, each one second of
// media (group n starts at n s), as a live subscription leaves it.
func backfillTrack(t *testing.T, from, to uint64) *model.Track {
	t.Helper()
	tr := model.NewTrack("audio")
	for seq := from; seq < to; seq++ {
		if err := InsertGroup(tr, seq, []model.Frame{{Timestamp: int64(seq) * 1_000_000, Payload: []byte{1}}}); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

func TestABackfillFetchesThePastNewestFirstUntilItReachesItsTargetOrStops(t *testing.T) {
	refused := errors.New("reset: not found")
	for _, tc := range []struct {
		name      string
		target    int64  // µs
		refuse    uint64 // a group the peer refuses (0: none)
		resub     bool   // the track resubscribes after the first fetch
		wantAdded []uint64
	}{
		{name: "back to the group that starts at the target", target: 7_000_000, wantAdded: []uint64{7, 8, 9}},
		{name: "no further than its media bound", target: 0, wantAdded: []uint64{5, 6, 7, 8, 9}},
		{name: "stopping quietly at a group the peer refuses", target: 0, refuse: 8, wantAdded: []uint64{9}},
		{name: "nothing once the track resubscribed", target: 0, resub: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := backfillTrack(t, 10, 12)
			var mu sync.Mutex
			var asked []uint64
			fetch := func(_ context.Context, seq uint64) ([]model.Frame, error) {
				mu.Lock()
				asked = append(asked, seq)
				mu.Unlock()
				if seq == tc.refuse {
					return nil, refused
				}
				return []model.Frame{{Timestamp: int64(seq) * 1_000_000, Payload: []byte{2}}}, nil
			}
			Backfill(context.Background(), tr, tc.target, fetch, func() bool { return !tc.resub }, slog.New(slog.DiscardHandler))
			var added []uint64
			for seq := uint64(0); seq < 10; seq++ {
				if g, err := tr.CreateGroup(seq); errors.Is(err, model.ErrDuplicateGroup) {
					added = append(added, seq)
				} else if err == nil {
					g.Close(nil)
				}
			}
			if !slices.Equal(added, tc.wantAdded) {
				t.Fatalf("groups added %v (asked %v), want %v", added, asked, tc.wantAdded)
			}
		})
	}
}
