package session

import (
	"fmt"
	"testing"

	"github.com/moq-export/moq-export/model"
)

// TestAFillAsksForTheRunsOfGroupsTheTrackLacks: after a fill cut by a
// connection loss the track holds groups 0-4 and 11 (a live group of the
// cut subscription); the next fill asks for 5-10 and 12 on, split into
// FETCHes of at most the span.
func TestAFillAsksForTheRunsOfGroupsTheTrackLacks(t *testing.T) {
	tr := model.NewTrack("a")
	for _, seq := range []uint64{0, 1, 2, 3, 4, 11} {
		if err := InsertGroup(tr, seq, []model.Frame{{Timestamp: int64(seq)}}); err != nil {
			t.Fatal(err)
		}
	}
	rt := &Remote{Track: tr}
	for _, tc := range []struct {
		name          string
		from, to, max uint64
		want          string
	}{
		{name: "the gap before and after the held group", from: 5, to: 15, want: "[{5 11} {12 15}]"},
		{name: "at most max groups", from: 5, to: 15, max: 8, want: "[{5 11} {12 14}]"},
		{name: "nothing missing", from: 0, to: 5, want: "[]"},
		{name: "all past the newest group", from: 12, to: 5000, want: "[{12 5000}]"},
		{name: "from inside the held groups", from: 3, to: 12, want: "[{5 11}]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmt.Sprint(rt.missing(tc.from, tc.to, tc.max)); got != tc.want {
				t.Fatalf("missing(%d, %d, %d) = %s, want %s", tc.from, tc.to, tc.max, got, tc.want)
			}
		})
	}
	if got := fmt.Sprint(splitRuns([]seqRun{{5, 11}, {12, 15}}, 4)); got != "[{5 9} {9 11} {12 15}]" {
		t.Fatalf("split into runs of 4: %s", got)
	}
	if got := fmt.Sprint(splitRuns([]seqRun{{5, 8}}, 1)); got != "[{5 6} {6 7} {7 8}]" {
		t.Fatalf("split into single groups: %s", got)
	}
}
