package model

import (
	"context"
	"errors"
	"testing"
	"time"
)

// audioTrack returns a track holding groups first..last of one 20 ms frame
// each, as live audio arrives after joining at group first.
func audioTrack(t *testing.T, first, last uint64) *Track {
	tr := NewTrack("audio")
	for seq := first; seq <= last; seq++ {
		writeGroup(t, tr, seq, true, int64(seq)*20_000)
	}
	return tr
}

// olderGroups is a backfill handler that adds the groups before the oldest
// held, one 20 ms frame each, back to the one at or before target.
func olderGroups(t *testing.T, tr *Track) func(context.Context, int64) error {
	return func(ctx context.Context, target int64) error {
		seq, ts, ok := tr.OldestGroup()
		for ok && ts > target && seq > 0 {
			seq--
			ts = int64(seq) * 20_000
			writeGroup(t, tr, seq, true, ts)
		}
		return nil
	}
}

func TestBackfillAddsOlderGroupsThatAnUnstartedConsumerReadsFirst(t *testing.T) {
	tr := audioTrack(t, 50, 52)
	rs := NewReadySet()
	c := tr.Subscribe(time.Second)
	c.Watch(rs)
	rs.Take(nil)
	if ts, ok := tr.OldestTimestamp(); !ok || ts != 1_000_000 {
		t.Fatalf("OldestTimestamp before backfill = %d, %v", ts, ok)
	}
	tr.HandleBackfill(olderGroups(t, tr))
	// 25 groups back: more than the track keeps by default, all kept for
	// the consumer that has not started.
	if err := tr.Backfill(context.Background(), 505_000); err != nil {
		t.Fatal(err)
	}
	if ts, ok := tr.OldestTimestamp(); !ok || ts != 500_000 {
		t.Fatalf("OldestTimestamp after backfill = %d, %v; want 500000", ts, ok)
	}
	if rs.Empty() {
		t.Error("the added groups did not wake the consumer")
	}
	got := frameTimes(events(c))
	if len(got) != 28 || got[0] != 500_000 || got[27] != 1_040_000 {
		t.Fatalf("consumer read %d frames %v, want 28 from 500000 to 1040000", len(got), got)
	}
	for i := 1; i < len(got); i++ {
		if got[i] != got[i-1]+20_000 {
			t.Fatalf("frame %d at %d after %d: a group is missing or out of order", i, got[i], got[i-1])
		}
	}
}

func TestBackfillAfterTheConsumerStartedDoesNotRewindIt(t *testing.T) {
	tr := audioTrack(t, 50, 52)
	c := tr.Subscribe(time.Second)
	if got := frameTimes(events(c)); len(got) != 3 {
		t.Fatalf("read %v", got)
	}
	tr.HandleBackfill(olderGroups(t, tr))
	if err := tr.Backfill(context.Background(), 900_000); err != nil {
		t.Fatal(err)
	}
	writeGroup(t, tr, 53, true, 1_060_000)
	if got := frameTimes(events(c)); !equal(got, []int64{1_060_000}) {
		t.Fatalf("after backfill the started consumer read %v, want only the new group", got)
	}
}

func TestBackfillWithoutAHandlerDoesNothing(t *testing.T) {
	tr := audioTrack(t, 50, 50)
	if err := tr.Backfill(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if seq, ts, ok := tr.OldestGroup(); !ok || seq != 50 || ts != 1_000_000 {
		t.Fatalf("OldestGroup = %d %d %v", seq, ts, ok)
	}
	want := errors.New("source gone")
	tr.HandleBackfill(func(context.Context, int64) error { return want })
	if err := tr.Backfill(context.Background(), 0); !errors.Is(err, want) {
		t.Fatalf("Backfill = %v, want the handler's error", err)
	}
}

func TestOldestTimestampSkipsEmptyGroups(t *testing.T) {
	tr := NewTrack("v")
	if _, ok := tr.OldestTimestamp(); ok {
		t.Fatal("an empty track reported a timestamp")
	}
	writeGroup(t, tr, 3, false)
	writeGroup(t, tr, 4, false, 400, 366)
	if ts, ok := tr.OldestTimestamp(); !ok || ts != 400 {
		t.Fatalf("OldestTimestamp = %d, %v; want the first frame of group 4", ts, ok)
	}
}

// TestBackfillBelowDroppedGroupsIsReadWithoutAGap: the track dropped its
// oldest groups before anyone subscribed; the groups a backfill adds back,
// newest first, are read in order, none taken for dropped.
func TestBackfillBelowDroppedGroupsIsReadWithoutAGap(t *testing.T) {
	tr := audioTrack(t, 0, 59) // keeps the newest 8: 52 to 59
	if seq, _, _ := tr.OldestGroup(); seq != 52 {
		t.Fatalf("oldest group %d, want 52", seq)
	}
	c := tr.Subscribe(time.Second)
	tr.HandleBackfill(olderGroups(t, tr))
	if err := tr.Backfill(context.Background(), 800_000); err != nil {
		t.Fatal(err)
	}
	got := frameTimes(events(c))
	if len(got) != 20 || got[0] != 800_000 {
		t.Fatalf("consumer read %v, want 20 frames from 800000", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i] != got[i-1]+20_000 {
			t.Fatalf("frame %d at %d after %d: a gap", i, got[i], got[i-1])
		}
	}
	if c.Skipped() != 0 {
		t.Fatalf("%d groups skipped", c.Skipped())
	}
}

// TestBackfillAfterARestartIsReadBeforeTheGroupTheConsumerWaitsAt: a
// consumer read the old timeline; the producer restarts (Discontinuity,
// its new subscription starts at group 50); the consumer reports the
// restart and stops there, as a reader aligning audio with the video's
// keyframe does; a backfill then adds groups 40-49 and the consumer reads
// them first, then group 50 on, without a second discontinuity. Once it
// read a frame of the new timeline, a later backfill no longer rewinds it.
func TestBackfillAfterARestartIsReadBeforeTheGroupTheConsumerWaitsAt(t *testing.T) {
	tr := audioTrack(t, 7, 9)
	c := tr.Subscribe(time.Second)
	if got := frameTimes(events(c)); len(got) != 3 {
		t.Fatalf("old timeline: read %v", got)
	}
	tr.Discontinuity()
	tr.SetStart(50)
	writeGroup(t, tr, 50, true, 1_000_000)
	writeGroup(t, tr, 51, true, 1_020_000)
	ev, ok := c.Next()
	if !ok || ev.Kind != EventDiscontinuity || !ev.Restart || ev.Group != 50 {
		t.Fatalf("first event of the new timeline: %+v %v, want a Restart discontinuity at group 50", ev, ok)
	}
	tr.HandleBackfill(olderGroups(t, tr))
	if err := tr.Backfill(context.Background(), 800_000); err != nil {
		t.Fatal(err)
	}
	got := frameTimes(events(c))
	want := []int64{}
	for ts := int64(800_000); ts <= 1_020_000; ts += 20_000 {
		want = append(want, ts)
	}
	if !equal(got, want) {
		t.Fatalf("after the backfill the consumer read %v, want %v", got, want)
	}
	// Started now: a second backfill does not take it back.
	if err := tr.Backfill(context.Background(), 600_000); err != nil {
		t.Fatal(err)
	}
	writeGroup(t, tr, 52, true, 1_040_000)
	if got := frameTimes(events(c)); !equal(got, []int64{1_040_000}) {
		t.Fatalf("after a frame of the new timeline was read, a backfill rewound the consumer: %v", got)
	}
}

// TestOnlyANewTimelineIsReportedAsARestart: a group holding one marker
// (hang's discontinuity marker) is a discontinuity without Restart.
func TestOnlyANewTimelineIsReportedAsARestart(t *testing.T) {
	tr := NewTrack("a")
	c := tr.Subscribe(time.Second)
	writeGroup(t, tr, 0, true, 0)
	g := writeGroup(t, tr, 1, false)
	writeMarker(t, g, 20_000)
	g.Close(nil)
	writeGroup(t, tr, 2, true, 40_000)
	var discs []Event
	for _, ev := range events(c) {
		if ev.Kind == EventDiscontinuity {
			discs = append(discs, ev)
		}
	}
	if len(discs) != 1 || discs[0].Restart {
		t.Fatalf("discontinuities %+v, want one without Restart", discs)
	}
}
