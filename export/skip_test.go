package export_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/model"
)

// TestAGroupTheReaderSkipsIsAGapInTheStatsAndTheLog: a group the track's
// reader gives up on (it never came while newer ones did, or the track
// dropped it unread past model.MaxLag) is a hole in the file. It was
// counted nowhere but the engine's total: the per-track accounting showed
// no gap, the log said nothing and the recorder's summary read "late 0,
// dropped 0, lost 0" over a GOP of video missing (a 20 s blackhole under
// --record-all on a loaded machine). Each such skip is a gap now, with the
// media time it lost, and a warning.
func TestAGroupTheReaderSkipsIsAGapInTheStatsAndTheLog(t *testing.T) {
	for _, tc := range []struct {
		name string
		// land adds the track's groups after group 0 (at 0 s, read) through
		// add(seq, ts); the export reads when it returns.
		land func(add func(seq uint64, ts int64), audio *model.Track)
		lost time.Duration // 0: whatever MaxLag leaves
	}{
		{"a group that never came before the track ended", func(add func(uint64, int64), audio *model.Track) {
			add(1, 20_000)
			add(3, 60_000) // group 2 never comes
		}, 40 * time.Millisecond},
		{"a group dropped unread past MaxLag", func(add func(uint64, int64), audio *model.Track) {
			// 12 s of groups land while the reader reads nothing: the
			// oldest ones lag the newest by over MaxLag and go.
			for seq := uint64(1); seq <= 24; seq++ {
				add(seq, int64(seq)*500_000)
			}
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			rec := newRecorder()
			bc := model.NewBroadcast("d")
			cat, _ := demo.Catalog([]string{"aac"})
			data, _ := cat.Marshal()
			cg, _ := bc.CreateTrack(catalog.TrackName).AppendGroup()
			cg.WriteFrame(model.Frame{Payload: data})
			audio := bc.CreateTrack("aac")
			e := export.New(bc, rec, export.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			add := func(seq uint64, ts int64) {
				g, err := audio.CreateGroup(seq)
				if err != nil {
					t.Fatal(err)
				}
				g.WriteFrame(model.Frame{Timestamp: ts, Payload: []byte{1}})
				g.Close(nil)
			}
			add(0, 0)
			if err := e.Poll(); err != nil {
				t.Fatal(err)
			}
			tc.land(add, audio)
			bc.Close(nil)
			if err := e.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			st := e.TrackStats()
			if len(st) != 1 {
				t.Fatalf("%d tracks: %+v", len(st), st)
			}
			s := st[0]
			if e.Stats().Skipped != 1 || s.Gaps != 1 || s.Received != int64(len(rec.frames)) {
				t.Fatalf("skipped %d, %+v, %d frames written", e.Stats().Skipped, s, len(rec.frames))
			}
			// The gap counts the hole in what was written.
			var jump time.Duration
			for i := 1; i < len(rec.frames); i++ {
				jump = max(jump, time.Duration(rec.frames[i].Timestamp-rec.frames[i-1].Timestamp)*time.Microsecond)
			}
			if s.LostToGaps != jump || tc.lost > 0 && s.LostToGaps != tc.lost {
				t.Fatalf("the gap lost %v; the frames jump %v (want %v)", s.LostToGaps, jump, tc.lost)
			}
			if !strings.Contains(logs.String(), "groups skipped") {
				t.Fatalf("nothing logged:\n%s", logs.String())
			}
		})
	}
}
