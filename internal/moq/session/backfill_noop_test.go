package session

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/model"
)

// TestABackfillThatDoesNothingSaysWhy: a backfill that cannot start or
// stops early returns nil, as every backfill does; each such end must be
// a Debug line that says why. Before, these ends were silent, and a
// backfill asked before the subscription's first group (b8692bb) read in
// the log as one that had nothing to fetch.
func TestABackfillThatDoesNothingSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		track  func(t *testing.T) *model.Track // nil: a Remote between subscriptions
		target int64
		resub  bool
		want   string
	}{
		{name: "between subscriptions", want: `msg="moq: no backfill: the track has no subscription now" broadcast=b track=aac target=0`},
		{name: "before the track holds a frame", track: func(*testing.T) *model.Track { return model.NewTrack("aac") },
			want: `msg="moq: no backfill: the track holds no frame yet" target=0`},
		{name: "when the oldest group held is group 0", track: func(t *testing.T) *model.Track {
			tr := model.NewTrack("aac")
			if err := InsertGroup(tr, 0, []model.Frame{{Timestamp: 5_000_000, Payload: []byte{1}}}); err != nil {
				t.Fatal(err)
			}
			return tr
		}, target: 1_000_000, want: `msg="moq: no backfill: the oldest group held is group 0" first=5000000 target=1000000`},
		{name: "when the oldest group held reaches the target", track: func(t *testing.T) *model.Track { return backfillTrack(t, 10, 12) },
			target: 10_000_000, want: `msg="moq: no backfill needed: the oldest group held starts at or before the target" group=10 first=10000000 target=10000000`},
		{name: "once the track resubscribed", track: func(t *testing.T) *model.Track { return backfillTrack(t, 10, 12) }, resub: true,
			want: `msg="moq: backfill stopped: the track resubscribed meanwhile (a new timeline)" group=9 groups=0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			if tc.track == nil {
				host := &resumeHost{ctx: ctx}
				rt := &Remote{Host: host, Broadcast: "b", Name: "aac", Track: model.NewTrack("aac")}
				if err := rt.Backfill(ctx, tc.target); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(host.String(), tc.want) {
					t.Fatalf("the log says:\n%s\nwant a line with %s", host.String(), tc.want)
				}
				return
			}
			var log bytes.Buffer
			fetch := func(_ context.Context, seq uint64) ([]model.Frame, error) {
				return []model.Frame{{Timestamp: int64(seq) * 1_000_000, Payload: []byte{2}}}, nil
			}
			Backfill(ctx, tc.track(t), tc.target, fetch, func() bool { return !tc.resub },
				slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})))
			if !strings.Contains(log.String(), tc.want) {
				t.Fatalf("the log says:\n%s\nwant a line with %s", log.String(), tc.want)
			}
		})
	}
}
