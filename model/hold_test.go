package model

import (
	"testing"
	"time"
)

func TestHoldNestsAndEndsWithTheTrack(t *testing.T) {
	tr := NewTrack("a")
	c := tr.Subscribe(time.Hour)
	r := NewReadySet()
	c.Watch(r)
	r.Take(nil)
	tr.Hold()
	tr.Hold()
	tr.Release()
	if !c.Held() {
		t.Fatal("not held after two holds and one release")
	}
	tr.Release()
	if c.Held() {
		t.Fatal("held after every hold was released")
	}
	if !c.Pending() {
		t.Fatal("a release did not wake the consumer")
	}
	tr.Hold()
	tr.Close(nil)
	if c.Held() {
		t.Fatal("an ended track is held")
	}
}

func TestLostGroupsAreSkippedWithADiscontinuityWithoutWaiting(t *testing.T) {
	tr := NewTrack("a")
	c := tr.Subscribe(time.Hour) // would wait an hour for a missing group
	writeGroup(t, tr, 0, true, 0, 10)
	writeGroup(t, tr, 1, false, 20)
	if got := frameTimes(events(c)); !equal(got, []int64{0, 10, 20}) {
		t.Fatalf("before: %v", got)
	}
	// Group 1 was cut and cannot be completed; 2..4 are gone.
	tr.Group(1).Close(nil)
	tr.MarkLost(2, 5)
	writeGroup(t, tr, 5, true, 50)
	if got := frameTimes(events(c)); !equal(got, []int64{-1, 50}) {
		t.Fatalf("after the gap: %v", got)
	}
	newest := tr.NewestGroup()
	if newest == nil || newest.Sequence() != 5 {
		t.Fatalf("NewestGroup() = %v", newest)
	}
	tr.Discontinuity()
	if tr.NewestGroup() != nil {
		t.Fatal("NewestGroup() after a Discontinuity")
	}
}

// TestATracksStateSaysWhereItsReaderWaits: the snapshot a recorder logs
// for a silent track tells groups that do not come from a reader that
// waits at one.
func TestATracksStateSaysWhereItsReaderWaits(t *testing.T) {
	tr := NewTrack("a")
	c := tr.Subscribe(time.Hour)
	if s := tr.State(); s.Groups != 0 || s.NewestTimestamp != NoTimestamp || len(s.Readers) != 1 || s.Readers[0].Started {
		t.Fatalf("empty track: %+v", s)
	}
	for _, seq := range []uint64{0, 2, 3} { // group 1 is missing
		g, _ := tr.CreateGroup(seq)
		g.WriteFrame(Frame{Timestamp: int64(seq) * 100})
		g.Close(nil)
	}
	for _, ok := c.Next(); ok; _, ok = c.Next() {
	}
	tr.Hold()
	s := tr.State()
	want := ReaderState{Started: true, Cursor: 1, Waiting: true}
	if s.Groups != 3 || s.Oldest != 0 || s.Newest != 3 || s.NewestTimestamp != 300 || !s.Held || s.Ended || s.Timelines != 0 ||
		len(s.Readers) != 1 || s.Readers[0] != want {
		t.Fatalf("a reader waiting at group 1: %+v", s)
	}
	tr.Discontinuity()
	tr.Close(nil)
	s = tr.State()
	if s.Timelines != 1 || !s.Ended || s.Groups != 0 || !s.Readers[0].Stale || s.Readers[0].Waiting {
		t.Fatalf("after a new timeline and the end: %+v", s)
	}
}
