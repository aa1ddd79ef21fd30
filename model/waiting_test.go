package model

import (
	"testing"
	"time"
)

// TestAReaderWaitsAtAGroupOnItsWayForItsLatency: Waiting says a reader is
// held up by a group that has not come (or is open, read up) while newer
// ones hold data, for waitSpan latencies of wall time (a live track gives
// the group up after about two); a reader with something to read, at the
// newest group, or past that is not waiting.
func TestAReaderWaitsAtAGroupOnItsWayForItsLatency(t *testing.T) {
	const latency = time.Second
	frame := func(g *Group, ts int64) {
		if err := g.WriteFrame(Frame{Timestamp: ts, Sync: SyncKey}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		// land adds groups after group 0 (at 0 us, read whole).
		land  func(tr *Track)
		reads int // frames read after land
		// want is Waiting at once, then after waitSpan latencies less a
		// millisecond, and after waitSpan latencies.
		want [3]bool
	}{
		{"a missing group with newer ones after it", func(tr *Track) {
			g, _ := tr.CreateGroup(2)
			frame(g, 40_000)
		}, 0, [3]bool{true, true, false}},
		{"an open group read up with a newer one after it", func(tr *Track) {
			g, _ := tr.CreateGroup(1)
			frame(g, 20_000)
			g2, _ := tr.CreateGroup(2)
			frame(g2, 1_040_000)
		}, 1, [3]bool{true, true, false}},
		{"an open group with a frame to read", func(tr *Track) {
			g, _ := tr.CreateGroup(1)
			frame(g, 20_000)
			g2, _ := tr.CreateGroup(2)
			frame(g2, 40_000)
		}, 0, [3]bool{false, false, false}},
		{"nothing newer", func(tr *Track) {}, 0, [3]bool{false, false, false}},
		{"the newer group is empty", func(tr *Track) {
			tr.CreateGroup(2)
		}, 0, [3]bool{false, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTrack("a")
			clock := withClock(tr)
			c := tr.Subscribe(latency)
			g0, _ := tr.CreateGroup(0)
			frame(g0, 0)
			g0.Close(nil)
			if ev, ok := c.Next(); !ok || ev.Kind != EventFrame {
				t.Fatalf("first event %+v %v", ev, ok)
			}
			c.Next() // moves past group 0
			tc.land(tr)
			for range tc.reads {
				if _, ok := c.Next(); !ok {
					t.Fatal("nothing to read")
				}
			}
			got := [3]bool{c.Waiting()}
			clock.add(waitSpan*latency - time.Millisecond)
			got[1] = c.Waiting()
			clock.add(time.Millisecond)
			got[2] = c.Waiting()
			if got != tc.want {
				t.Fatalf("waiting %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAReaderThatReadsOnIsNotWaitingAnyMore: once the missing group lands
// and is read, the reader waits afresh at the next one.
func TestAReaderThatReadsOnIsNotWaitingAnyMore(t *testing.T) {
	tr := NewTrack("a")
	clock := withClock(tr)
	c := tr.Subscribe(time.Second)
	for _, seq := range []uint64{0, 2} {
		g, _ := tr.CreateGroup(seq)
		g.WriteFrame(Frame{Timestamp: int64(seq) * 20_000, Sync: SyncKey})
		g.Close(nil)
	}
	c.Next()
	c.Next()
	if !c.Waiting() {
		t.Fatal("not waiting at the missing group 1")
	}
	clock.add(900 * time.Millisecond)
	g, _ := tr.CreateGroup(1)
	g.WriteFrame(Frame{Timestamp: 20_000, Sync: SyncKey})
	g.Close(nil)
	if c.Waiting() {
		t.Fatal("waiting with group 1 to read")
	}
	for _, want := range []int64{20_000, 40_000} {
		if ev, ok := c.Next(); !ok || ev.Frame.Timestamp != want {
			t.Fatalf("read %+v %v, want the frame at %d", ev, ok, want)
		}
	}
	g4, _ := tr.CreateGroup(4)
	g4.WriteFrame(Frame{Timestamp: 80_000, Sync: SyncKey})
	c.Next()
	clock.add(900 * time.Millisecond)
	if !c.Waiting() {
		t.Fatal("the wait at group 3 did not start afresh")
	}
}

// TestALiveTrackGivesUpAGroupWhileItStillSaysItWaits: on a live track the
// reader gives a missing group up once the newer data ran its latency past
// it and has for its latency of wall time; until then Waiting holds, so a
// merge that waited for the track never runs the others past it just
// before it delivers again (its next frames would come late).
func TestALiveTrackGivesUpAGroupWhileItStillSaysItWaits(t *testing.T) {
	const latency = 500 * time.Millisecond
	tr := NewTrack("a")
	clock := withClock(tr)
	c := tr.Subscribe(latency)
	add := func(seq uint64) {
		g, _ := tr.CreateGroup(seq)
		g.WriteFrame(Frame{Timestamp: int64(seq) * 20_000, Sync: SyncKey})
		g.Close(nil)
	}
	add(0)
	c.Next()
	c.Next()
	// Group 1 never comes; the track goes on live, a group every 20 ms.
	for seq := uint64(2); ; seq++ {
		if seq > 500 {
			t.Fatal("group 1 was never given up")
		}
		add(seq)
		waiting := c.Waiting()
		ev, ok := c.Next()
		if c.Skipped() > 0 {
			if !ok || ev.Group != 2 {
				t.Fatalf("after the skip: %+v %v", ev, ok)
			}
			if !waiting {
				t.Fatalf("gave group 1 up at group %d, after Waiting had ended", seq)
			}
			return
		}
		if !waiting {
			t.Fatalf("not waiting at group %d with group 1 missing", seq)
		}
		clock.add(20 * time.Millisecond)
	}
}
