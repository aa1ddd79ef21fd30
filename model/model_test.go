package model

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
	"unsafe"
	"weak"
)

func writeGroup(t *testing.T, tr *Track, seq uint64, close bool, ts ...int64) *Group {
	t.Helper()
	g, err := tr.CreateGroup(seq)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ts {
		if err := g.WriteFrame(Frame{Timestamp: x, Payload: []byte{byte(seq), byte(x)}}); err != nil {
			t.Fatal(err)
		}
	}
	if close {
		g.Close(nil)
	}
	return g
}

// events drains what the consumer can give now.
func events(c *Consumer) []Event {
	var out []Event
	for {
		ev, ok := c.Next()
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

// frameTimes returns the timestamps of frame events, and -1 for a
// discontinuity, -2 for the end.
func frameTimes(evs []Event) []int64 {
	out := make([]int64, len(evs))
	for i, ev := range evs {
		switch ev.Kind {
		case EventFrame:
			out[i] = ev.Frame.Timestamp
		case EventDiscontinuity:
			out[i] = -1
		case EventEnd:
			out[i] = -2
		}
	}
	return out
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestConsumerReadsGroupsInSequenceAndMarksKeyframes(t *testing.T) {
	tr := NewTrack("v")
	c := tr.Subscribe(time.Second)
	writeGroup(t, tr, 0, true, 0, 33, 66)
	writeGroup(t, tr, 2, true, 200) // arrives before group 1
	writeGroup(t, tr, 1, true, 100, 133)
	tr.Close(nil)
	evs := events(c)
	if got := frameTimes(evs); !equal(got, []int64{0, 33, 66, 100, 133, 200, -2}) {
		t.Fatalf("got %v", got)
	}
	for _, i := range []int{0, 3, 5} {
		if !evs[i].Keyframe {
			t.Errorf("event %d is the first of its group but not a keyframe", i)
		}
	}
	if evs[1].Keyframe || evs[4].Keyframe {
		t.Error("a frame inside a group is marked keyframe")
	}
	if evs[6].Err != nil {
		t.Errorf("clean end has error %v", evs[6].Err)
	}
}

// fakeClock is a wall clock that moves only when a test moves it.
type fakeClock struct{ t time.Time }

func (f *fakeClock) now() time.Time      { return f.t }
func (f *fakeClock) add(d time.Duration) { f.t = f.t.Add(d) }

// withClock makes tr's consumers time their stalls with a fake clock.
func withClock(tr *Track) *fakeClock {
	f := &fakeClock{t: time.Unix(1e9, 0)}
	tr.clock = f.now
	return f
}

func TestConsumerSkipsStalledGroupOnceNewerIsLatencyAhead(t *testing.T) {
	tr := NewTrack("v")
	clock := withClock(tr)
	c := tr.Subscribe(500 * time.Microsecond) // latency in µs of media: 500
	writeGroup(t, tr, 0, false, 0, 100)       // stalls: never closed
	if got := frameTimes(events(c)); !equal(got, []int64{0, 100}) {
		t.Fatalf("got %v", got)
	}
	// The next group's first frames may land before the last ones of
	// group 0 (each group has its own stream): within the latency past
	// group 0's newest frame, the reader waits.
	writeGroup(t, tr, 1, false, 300, 500)
	if got := events(c); len(got) != 0 {
		t.Fatalf("skipped before the newer group was latency ahead: %v", frameTimes(got))
	}
	g1 := tr.groups[1]
	g1.WriteFrame(Frame{Timestamp: 600})
	// Latency ahead, but group 0 has not waited the latency of wall time
	// yet: its tail may be a goroutine away.
	if got := events(c); len(got) != 0 {
		t.Fatalf("skipped as soon as the newer group was latency ahead: %v", frameTimes(got))
	}
	clock.add(500 * time.Microsecond)
	if got := frameTimes(events(c)); !equal(got, []int64{300, 500, 600}) {
		t.Fatalf("got %v, want the newer group after the skip", got)
	}
	if c.Skipped() != 1 {
		t.Fatalf("skipped %d, want 1", c.Skipped())
	}
}

func TestConsumerWaitsForMissingGroupWithinLatency(t *testing.T) {
	tr := NewTrack("a")
	clock := withClock(tr)
	c := tr.Subscribe(100 * time.Microsecond)
	writeGroup(t, tr, 0, true, 0)
	events(c)
	writeGroup(t, tr, 2, true, 40) // group 1 is still in flight
	if got := events(c); len(got) != 0 {
		t.Fatalf("jumped over a group that may still arrive: %v", frameTimes(got))
	}
	writeGroup(t, tr, 1, true, 20)
	if got := frameTimes(events(c)); !equal(got, []int64{20, 40}) {
		t.Fatalf("got %v", got)
	}
	// Now a gap that never fills: group 4 is 100 ahead, so group 3 is
	// given up once it has been missing for the latency.
	writeGroup(t, tr, 4, true, 140)
	if got := events(c); len(got) != 0 {
		t.Fatalf("gave up at once on a group that may still arrive: %v", frameTimes(got))
	}
	clock.add(100 * time.Microsecond)
	if got := frameTimes(events(c)); !equal(got, []int64{140}) {
		t.Fatalf("got %v", got)
	}
}

// TestGroupsASilenceHeldBackAreAllReadWhateverOrderTheyLandIn: after a
// silence shorter than the idle timeout (a blackhole QUIC survives), the
// groups the publisher made meanwhile land at once, more than the latency
// of media, each on its own stream read by its own goroutine: a newer
// group can be created, or an older one's frame or end written, moments
// after the groups around it. None of them stalled, so none is skipped
// (the recorder lost single audio frames and up to 0.9 s of audio after
// a 1.5 s blackhole, in every run). A group that stays missing for the
// latency of wall time is still given up.
func TestGroupsASilenceHeldBackAreAllReadWhateverOrderTheyLandIn(t *testing.T) {
	const latency = 500 * time.Millisecond
	const frame = 21333 // µs: one AAC frame a group
	const n = 70        // the groups of a 1.5 s silence
	for _, tc := range []struct {
		name string
		// land makes groups 1..n, calling read as a reader would.
		land func(t *testing.T, tr *Track, clock *fakeClock, read func())
	}{
		{"the newest group lands before the older ones", func(t *testing.T, tr *Track, clock *fakeClock, read func()) {
			writeGroup(t, tr, n, true, n*frame)
			read()
			for seq := uint64(1); seq < n; seq++ {
				clock.add(time.Millisecond)
				writeGroup(t, tr, seq, true, int64(seq)*frame)
				read()
			}
		}},
		{"an older group is created before its frame is written", func(t *testing.T, tr *Track, clock *fakeClock, read func()) {
			g1, err := tr.CreateGroup(1)
			if err != nil {
				t.Fatal(err)
			}
			read()
			for seq := uint64(2); seq <= n; seq++ {
				writeGroup(t, tr, seq, true, int64(seq)*frame)
				read()
			}
			clock.add(5 * time.Millisecond)
			g1.WriteFrame(Frame{Timestamp: frame})
			g1.Close(nil)
		}},
		{"an older group's frame is in but not its end, and the next ones are missing", func(t *testing.T, tr *Track, clock *fakeClock, read func()) {
			g1 := writeGroup(t, tr, 1, false, frame)
			read()
			for seq := uint64(4); seq <= n; seq++ {
				writeGroup(t, tr, seq, true, int64(seq)*frame)
				read()
			}
			clock.add(5 * time.Millisecond)
			writeGroup(t, tr, 2, true, 2*frame)
			read()
			writeGroup(t, tr, 3, true, 3*frame)
			read()
			g1.Close(nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTrack("a")
			clock := withClock(tr)
			c := tr.Subscribe(latency)
			var got []int64
			read := func() { got = append(got, frameTimes(events(c))...) }
			writeGroup(t, tr, 0, true, 0)
			read()
			tc.land(t, tr, clock, read)
			read()
			var want []int64
			for seq := range int64(n + 1) {
				want = append(want, seq*frame)
			}
			if !equal(got, want) || c.Skipped() != 0 {
				t.Fatalf("read %d frames of %d (skipped %d groups): %v", len(got), len(want), c.Skipped(), got)
			}
			// A group that stays missing (n+1) while newer data runs latency
			// past it is given up once it has waited the latency.
			writeGroup(t, tr, n+30, true, (n+30)*frame)
			if more := events(c); len(more) != 0 {
				t.Fatalf("gave up on a missing group at once: %v", frameTimes(more))
			}
			clock.add(latency - time.Millisecond)
			if more := events(c); len(more) != 0 || c.Skipped() != 0 {
				t.Fatalf("gave up on a missing group before it waited the latency: %v", frameTimes(more))
			}
			clock.add(time.Millisecond)
			if more := frameTimes(events(c)); !equal(more, []int64{(n + 30) * frame}) || c.Skipped() != 1 {
				t.Fatalf("after the latency: read %v, skipped %d; want the newer group, 1 skip", more, c.Skipped())
			}
		})
	}
}

func TestAbortedGroupMovesToNextGroup(t *testing.T) {
	tr := NewTrack("v")
	c := tr.Subscribe(time.Hour)
	g := writeGroup(t, tr, 0, false, 0, 33)
	g.Close(errors.New("reset by peer"))
	writeGroup(t, tr, 1, true, 1000)
	if got := frameTimes(events(c)); !equal(got, []int64{0, 33, 1000}) {
		t.Fatalf("got %v", got)
	}
	if err := g.WriteFrame(Frame{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}
}

func TestAnEmptyGroupMeansNothing(t *testing.T) {
	tr := NewTrack("a")
	c := tr.Subscribe(time.Hour)
	writeGroup(t, tr, 0, true, 0)
	writeGroup(t, tr, 1, true)
	writeGroup(t, tr, 2, true, 9000)
	if got := frameTimes(events(c)); !equal(got, []int64{0, 9000}) {
		t.Fatalf("got %v", got)
	}
}

// writeMarker writes hang's empty-payload marker at ts into g.
func writeMarker(t *testing.T, g *Group, ts int64) {
	t.Helper()
	if err := g.WriteFrame(Frame{Timestamp: ts, Marker: true}); err != nil {
		t.Fatal(err)
	}
}

func TestAGroupOpenedByAMarkerIsADiscontinuityAndTheMarkerIsDelivered(t *testing.T) {
	tr := NewTrack("v")
	c := tr.Subscribe(time.Hour)
	writeGroup(t, tr, 0, true, 0, 33)
	g, _ := tr.CreateGroup(1)
	writeMarker(t, g, 66)
	g.Close(nil)
	writeGroup(t, tr, 2, true, 9000, 9033)
	evs := events(c)
	if got := frameTimes(evs); !equal(got, []int64{0, 33, 66, -1, 9000, 9033}) {
		t.Fatalf("got %v", got)
	}
	if !evs[2].Frame.Marker || !evs[2].Keyframe || !evs[4].Keyframe || evs[4].Frame.Marker {
		t.Fatalf("marker %+v, next %+v", evs[2], evs[4])
	}
}

func TestAMarkerAfterFramesIsDeliveredAsTheirEndAndMovesNoBound(t *testing.T) {
	tr := NewTrack("v")
	c := tr.Subscribe(time.Hour)
	g := writeGroup(t, tr, 0, false, 0, 33)
	writeMarker(t, g, 66)
	g.Close(nil)
	writeGroup(t, tr, 1, true, 66, 99) // contiguous: no rewind, no discontinuity
	evs := events(c)
	if got := frameTimes(evs); !equal(got, []int64{0, 33, 66, 66, 99}) {
		t.Fatalf("got %v", got)
	}
	if !evs[2].Frame.Marker || evs[2].Keyframe || evs[3].Frame.Marker || !evs[3].Keyframe {
		t.Fatalf("events %+v", evs)
	}
	if g.maxTS != 33 {
		t.Fatalf("group bound %d, want 33: the marker is no media time", g.maxTS)
	}
}

func TestAMarkerEndingADroppedFrameIsDroppedWithIt(t *testing.T) {
	tr := NewTrack("v")
	c := tr.Subscribe(time.Hour)
	g, _ := tr.CreateGroup(0)
	g.WriteFrame(Frame{Timestamp: 0, Payload: []byte{1}, Sync: SyncDelta}) // no keyframe leads to it
	writeMarker(t, g, 33)
	g.Close(nil)
	if got := frameTimes(events(c)); len(got) != 0 {
		t.Fatalf("got %v, want nothing", got)
	}
}

func TestRewindIsADiscontinuity(t *testing.T) {
	tr := NewTrack("a")
	c := tr.Subscribe(time.Hour)
	writeGroup(t, tr, 0, true, 5000, 5020)
	writeGroup(t, tr, 1, true, 10) // the publisher withdrew and restarted
	if got := frameTimes(events(c)); !equal(got, []int64{5000, 5020, -1, 10}) {
		t.Fatalf("got %v", got)
	}
}

func TestProducerDiscontinuityRestartsSequence(t *testing.T) {
	tr := NewTrack("a")
	c := tr.Subscribe(time.Hour)
	writeGroup(t, tr, 7, true, 100)
	events(c)
	tr.Discontinuity() // reconnect: the new session's groups start anywhere
	writeGroup(t, tr, 0, true, 50)
	if got := frameTimes(events(c)); !equal(got, []int64{-1, 50}) {
		t.Fatalf("got %v", got)
	}
}

func TestTrackErrorIsReportedAfterBufferedFrames(t *testing.T) {
	tr := NewTrack("v")
	c := tr.Subscribe(time.Hour)
	writeGroup(t, tr, 0, false, 0, 33)
	boom := errors.New("relay went away")
	tr.Close(boom)
	evs := events(c)
	if got := frameTimes(evs); !equal(got, []int64{0, 33, -2}) || !errors.Is(evs[2].Err, boom) {
		t.Fatalf("got %v err %v", got, evs[len(evs)-1].Err)
	}
	if _, err := tr.CreateGroup(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("CreateGroup after close: %v", err)
	}
	if _, ok := c.Next(); ok {
		t.Fatal("event after the end")
	}
}

func TestDuplicateGroupIsRefused(t *testing.T) {
	tr := NewTrack("v")
	writeGroup(t, tr, 3, true, 0)
	if _, err := tr.CreateGroup(3); !errors.Is(err, ErrDuplicateGroup) {
		t.Fatalf("got %v", err)
	}
}

func TestTrackKeepsOnlyNewestGroups(t *testing.T) {
	tr := NewTrack("a")
	tr.SetKeepGroups(2)
	for seq := range uint64(5) {
		writeGroup(t, tr, seq, true, int64(seq))
	}
	c := tr.Subscribe(time.Hour)
	if got := frameTimes(events(c)); !equal(got, []int64{3, 4}) {
		t.Fatalf("got %v", got)
	}
}

func TestReadySetListsEachChangedConsumerOnce(t *testing.T) {
	r := NewReadySet()
	a, b, idle := NewTrack("a"), NewTrack("b"), NewTrack("idle")
	ca, cb, ci := a.Subscribe(0), b.Subscribe(0), idle.Subscribe(0)
	for _, c := range []*Consumer{ca, cb, ci} {
		c.Watch(r)
	}
	if got := r.Take(nil); len(got) != 3 {
		t.Fatalf("Watch should mark every consumer once, got %d", len(got))
	}
	select {
	case <-r.Wakeup():
	default:
		t.Fatal("no wakeup after marking")
	}
	if !r.Empty() {
		t.Fatal("not empty after Take")
	}
	writeGroup(t, a, 0, true, 1, 2, 3)
	writeGroup(t, a, 1, true, 4)
	writeGroup(t, b, 0, false, 1)
	got := r.Take(nil)
	if len(got) != 2 || got[0] != ca || got[1] != cb {
		t.Fatalf("ready %v, want a then b once each", got)
	}
	// A change while the reader works puts the consumer back.
	writeGroup(t, a, 2, true, 5)
	if got := r.Take(nil); len(got) != 1 || got[0] != ca {
		t.Fatalf("ready %v after a new group", got)
	}
	if !r.Empty() {
		t.Fatal("idle consumer marked")
	}
	ci.Close()
	writeGroup(t, idle, 0, true, 1)
	if !r.Empty() {
		t.Fatal("closed consumer marked")
	}
}

func TestBroadcastTracksAndRequests(t *testing.T) {
	b := NewBroadcast("room/cam")
	if b.Name() != "room/cam" {
		t.Fatal(b.Name())
	}
	v := b.CreateTrack("video")
	if got, _ := b.Track("video"); got != v {
		t.Fatal("Track did not return the produced track")
	}
	requested := ""
	b.HandleRequests(func(name string) (*Track, error) {
		requested = name
		if name == "missing" {
			return nil, ErrNotFound
		}
		return NewTrack(name), nil
	})
	if _, err := b.Track("audio"); err != nil || requested != "audio" {
		t.Fatalf("request handler not used: %v %q", err, requested)
	}
	if _, err := b.Track("missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("got %v", err)
	}
	if got := b.TrackNames(); len(got) != 2 || got[0] != "audio" || got[1] != "video" {
		t.Fatalf("tracks %v", got)
	}
	b.Close(nil)
	<-b.Done()
	c := v.Subscribe(0)
	if ev, ok := c.Next(); !ok || ev.Kind != EventEnd {
		t.Fatal("track of a closed broadcast did not end")
	}
}

func TestTrackKeepsGroupsUntilItsConsumersReadThem(t *testing.T) {
	tr := NewTrack("a")
	c := tr.Subscribe(time.Hour)
	writeGroup(t, tr, 0, true, 0)
	events(c)
	// The reader stalls while 40 groups (800 ms) arrive: more than
	// DefaultKeepGroups, well within MaxLag.
	var want []int64
	for seq := uint64(1); seq <= 40; seq++ {
		writeGroup(t, tr, seq, true, int64(seq)*20_000)
		want = append(want, int64(seq)*20_000)
	}
	if got := frameTimes(events(c)); !equal(got, want) {
		t.Fatalf("a slow reader lost groups: got %d frames, want %d", len(got), len(want))
	}
	// Once read, they go: only the newest DefaultKeepGroups stay.
	writeGroup(t, tr, 41, true, 41*20_000)
	if n := len(tr.groups); n != DefaultKeepGroups {
		t.Fatalf("%d groups kept after the reader caught up, want %d", n, DefaultKeepGroups)
	}
}

func TestStalledReaderLosesOnlyGroupsBeyondMaxLag(t *testing.T) {
	tr := NewTrack("a")
	c := tr.Subscribe(time.Hour)
	writeGroup(t, tr, 0, true, 0)
	events(c)
	step := int64(500_000)
	last := uint64(2 * MaxLag.Microseconds() / step)
	for seq := uint64(1); seq <= last; seq++ {
		writeGroup(t, tr, seq, true, int64(seq)*step)
	}
	got := frameTimes(events(c))
	if len(got) == 0 || got[len(got)-1] != int64(last)*step {
		t.Fatalf("reader did not reach the newest group: %v", got)
	}
	// Pruning runs when a group starts, so the bound is MaxLag behind the
	// newest frame of the group before the last one.
	if oldest := got[0]; int64(last-1)*step-oldest > MaxLag.Microseconds() {
		t.Fatalf("kept a group %d us behind the newest, beyond MaxLag", int64(last)*step-oldest)
	}
	if c.Skipped() == 0 {
		t.Fatal("the dropped groups were not counted as skipped")
	}
}

// TestAGapFilledWhileHeldIsKeptUntilItsReaderTakesIt: after a reconnect
// the producer holds the track and fills the gap in order, 30 s of 1 s
// groups, while the reader waits (the export waits for every held track).
// Measured from their own frames, the oldest groups of the fill lagged the
// newest by more than MaxLag as the later ones went in and were dropped
// before the reader could take them (4 s of video lost after every long
// blackhole). They lag from the Release now; a reader that then stalls
// past MaxLag still loses them, so the memory bound stays.
func TestAGapFilledWhileHeldIsKeptUntilItsReaderTakesIt(t *testing.T) {
	const step = int64(time.Second / time.Microsecond)
	fill := uint64(3 * MaxLag.Microseconds() / step)
	setup := func() (*Track, *Consumer) {
		tr := NewTrack("a")
		c := tr.Subscribe(time.Hour)
		writeGroup(t, tr, 0, true, 0)
		events(c)
		tr.Hold()
		for seq := uint64(1); seq <= fill; seq++ {
			writeGroup(t, tr, seq, true, int64(seq)*step)
		}
		tr.Release()
		return tr, c
	}

	tr, c := setup()
	writeGroup(t, tr, fill+1, true, int64(fill+1)*step) // the live edge
	var want []int64
	for seq := int64(1); seq <= int64(fill)+1; seq++ {
		want = append(want, seq*step)
	}
	if got := frameTimes(events(c)); !equal(got, want) || c.Skipped() != 0 {
		t.Fatalf("after the fill the reader got %v (skipped %d), want %v", got, c.Skipped(), want)
	}

	tr, c = setup()
	last := fill + uint64(MaxLag.Microseconds()/step) + 2
	for seq := fill + 1; seq <= last; seq++ {
		writeGroup(t, tr, seq, true, int64(seq)*step)
	}
	got := frameTimes(events(c))
	if c.Skipped() == 0 || len(got) == 0 || got[0] == step {
		t.Fatalf("a reader stalled past MaxLag after the release kept the whole fill: %v", got)
	}
}

func TestConsumerStartsAtTheAnnouncedFirstGroupEvenWhenALaterOneArrivesFirst(t *testing.T) {
	tr := NewTrack("a")
	c := tr.Subscribe(100 * time.Microsecond)
	tr.SetStart(5)
	writeGroup(t, tr, 6, true, 20) // group 6's stream won the race
	if got := events(c); len(got) != 0 {
		t.Fatalf("started before the first group arrived: %v", frameTimes(got))
	}
	writeGroup(t, tr, 5, true, 0)
	if got := frameTimes(events(c)); !equal(got, []int64{0, 20}) {
		t.Fatalf("got %v, want the first group then the second", got)
	}
}

func TestConsumerGivesUpOnAnAnnouncedFirstGroupThatNeverComes(t *testing.T) {
	tr := NewTrack("a")
	clock := withClock(tr)
	c := tr.Subscribe(100 * time.Microsecond)
	tr.SetStart(5)
	writeGroup(t, tr, 6, true, 20)
	writeGroup(t, tr, 7, true, 60)
	if got := events(c); len(got) != 0 {
		t.Fatalf("gave up before the newer groups spanned the latency: %v", frameTimes(got))
	}
	writeGroup(t, tr, 8, true, 120)
	if got := events(c); len(got) != 0 {
		t.Fatalf("gave up before the first group was missing for the latency: %v", frameTimes(got))
	}
	clock.add(100 * time.Microsecond)
	if got := frameTimes(events(c)); !equal(got, []int64{20, 60, 120}) {
		t.Fatalf("got %v", got)
	}
	// A backfilled older group is read first by a consumer that has not
	// started.
	tr2 := NewTrack("b")
	tr2.SetStart(5)
	writeGroup(t, tr2, 5, true, 100)
	writeGroup(t, tr2, 4, true, 80)
	if got := frameTimes(events(tr2.Subscribe(time.Hour))); !equal(got, []int64{80, 100}) {
		t.Fatalf("backfill: got %v", got)
	}
}

// TestAReaderStartsAtAnOlderGroupWhoseFrameIsStillOnItsWay: a
// subscription creates its groups in the order their streams were opened,
// but each stream is read by a goroutine of its own, so the frame of group
// 1 can be written before group 0's (under load: 1-2 of 40 runs of
// subscribe's TestAGroupWhoseStreamIsReadLate... started at group 1 or 2).
// A reader that has not started waits at the older open group as at a
// missing one, and gives it up the same way; an empty finished group is
// still passed over.
func TestAReaderStartsAtAnOlderGroupWhoseFrameIsStillOnItsWay(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, tr *Track, clock *fakeClock, c *Consumer)
	}{
		{"the older group's frame comes and is read first", func(t *testing.T, tr *Track, clock *fakeClock, c *Consumer) {
			g0 := writeGroup(t, tr, 0, false)
			writeGroup(t, tr, 1, true, 20)
			writeGroup(t, tr, 2, true, 40)
			if got := events(c); len(got) != 0 {
				t.Fatalf("started past the open group 0: %v", frameTimes(got))
			}
			g0.WriteFrame(Frame{Timestamp: 0})
			g0.Close(nil)
			if got := frameTimes(events(c)); !equal(got, []int64{0, 20, 40}) || c.Skipped() != 0 {
				t.Fatalf("got %v, skipped %d; want every group from 0", got, c.Skipped())
			}
		}},
		{"an older group that stays empty is given up as a missing one", func(t *testing.T, tr *Track, clock *fakeClock, c *Consumer) {
			writeGroup(t, tr, 0, false) // never gets a frame
			writeGroup(t, tr, 1, true, 20)
			writeGroup(t, tr, 2, true, 60)
			if got := events(c); len(got) != 0 {
				t.Fatalf("gave up before the newer groups spanned the latency: %v", frameTimes(got))
			}
			writeGroup(t, tr, 3, true, 120)
			if got := events(c); len(got) != 0 {
				t.Fatalf("gave up before the group waited the latency: %v", frameTimes(got))
			}
			clock.add(100 * time.Microsecond)
			if got := frameTimes(events(c)); !equal(got, []int64{20, 60, 120}) || c.Skipped() != 1 {
				t.Fatalf("got %v, skipped %d; want groups 1-3 after one skip", got, c.Skipped())
			}
		}},
		{"an empty finished group is passed over", func(t *testing.T, tr *Track, clock *fakeClock, c *Consumer) {
			writeGroup(t, tr, 0, true)
			writeGroup(t, tr, 1, true, 20)
			if got := frameTimes(events(c)); !equal(got, []int64{20}) || c.Skipped() != 0 {
				t.Fatalf("got %v, skipped %d", got, c.Skipped())
			}
		}},
		{"an announced first group that is open and empty is given up in time", func(t *testing.T, tr *Track, clock *fakeClock, c *Consumer) {
			// Measured from the next group, as for a missing one: before,
			// the empty group's missing edge made the reader wait at it
			// for as long as it stayed open.
			tr.SetStart(5)
			writeGroup(t, tr, 5, false)
			writeGroup(t, tr, 6, true, 20)
			writeGroup(t, tr, 7, true, 120)
			if got := events(c); len(got) != 0 {
				t.Fatalf("gave up before the group waited the latency: %v", frameTimes(got))
			}
			clock.add(100 * time.Microsecond)
			if got := frameTimes(events(c)); !equal(got, []int64{20, 120}) || c.Skipped() != 1 {
				t.Fatalf("got %v, skipped %d; want groups 6-7 after one skip", got, c.Skipped())
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := NewTrack("a")
			clock := withClock(tr)
			c.run(t, tr, clock, tr.Subscribe(100*time.Microsecond))
		})
	}
}

// TestNextGroupLandingBeforeTheLastFramesOfThisOneSkipsNothing: each group
// has its own stream, so a GOP's first frame can land before the previous
// GOP's last ones. The previous group is not given up for it: it has not
// stalled, however long the GOP.
func TestNextGroupLandingBeforeTheLastFramesOfThisOneSkipsNothing(t *testing.T) {
	tr := NewTrack("v")
	c := tr.Subscribe(500 * time.Microsecond)
	writeGroup(t, tr, 0, false, 0, 300, 600, 900) // a 1000 µs GOP, its tail still in flight
	writeGroup(t, tr, 1, false, 1000)
	if got := frameTimes(events(c)); !equal(got, []int64{0, 300, 600, 900}) {
		t.Fatalf("got %v", got)
	}
	g0 := tr.groups[0]
	g0.WriteFrame(Frame{Timestamp: 950})
	g0.Close(nil)
	if got := frameTimes(events(c)); !equal(got, []int64{950, 1000}) || c.Skipped() != 0 {
		t.Fatalf("got %v, skipped %d; want the tail of group 0, then group 1", got, c.Skipped())
	}
}

// TestGroupReservesTheFramesTheLastGroupHad: a group's frame list starts
// with room for as many frames as the last complete group held, so that
// filling it allocates once (a truncated group is not a measure).
func TestGroupReservesTheFramesTheLastGroupHad(t *testing.T) {
	tr := NewTrack("v")
	for _, tc := range []struct {
		frames  int
		err     error
		wantCap int // of the frame list after its first frame
	}{
		{frames: 30, wantCap: 1}, // in the group itself
		{frames: 30, wantCap: 30},
		{frames: 5, err: errors.New("reset"), wantCap: 30},
		{frames: 10, wantCap: 30},
		{frames: 2000, wantCap: 10},
		{frames: 1, wantCap: maxFrameHint},
		{frames: 3, wantCap: 1},
	} {
		g, err := tr.AppendGroup()
		if err != nil {
			t.Fatal(err)
		}
		for i := range tc.frames {
			if err := g.WriteFrame(Frame{Timestamp: int64(i)}); err != nil {
				t.Fatal(err)
			}
			if i == 0 && cap(g.frames) != tc.wantCap {
				t.Errorf("group %d: room for %d frames, want %d", g.Sequence(), cap(g.frames), tc.wantCap)
			}
			if i == 0 && tc.wantCap == 1 && &g.frames[0] != &g.first[0] {
				t.Errorf("group %d: its one frame is not held in the group", g.Sequence())
			}
		}
		g.Close(tc.err)
		if len(g.frames) != tc.frames {
			t.Fatalf("group %d holds %d frames, want %d", g.Sequence(), len(g.frames), tc.frames)
		}
		for i, f := range g.frames {
			if f.Timestamp != int64(i) {
				t.Fatalf("group %d frame %d has timestamp %d", g.Sequence(), i, f.Timestamp)
			}
		}
	}
}

// TestBroadcastCloseCallsItsHandlerOnceAfterTheTracksEnded: the close
// handler runs once, with Close's error, when the tracks already report
// their end; a second Close calls nothing.
func TestBroadcastCloseCallsItsHandlerOnceAfterTheTracksEnded(t *testing.T) {
	for _, want := range []error{nil, errors.New("gone")} {
		b := NewBroadcast("x")
		v := b.CreateTrack("v")
		calls := 0
		b.HandleClose(func(err error) {
			calls++
			if err != want {
				t.Errorf("handler got %v, want %v", err, want)
			}
			if ev, ok := v.Subscribe(0).Next(); !ok || ev.Kind != EventEnd {
				t.Errorf("track not ended when the handler runs: %+v %v", ev, ok)
			}
		})
		b.Close(want)
		b.Close(errors.New("again"))
		if calls != 1 {
			t.Fatalf("handler called %d times, want 1", calls)
		}
	}
}

// TestReleaseReadLetsGoOfWhatEveryConsumerRead: with SetReleaseRead a
// frame's payload goes once every consumer read it (the slowest decides),
// the frame keeps its place and timestamp, readers get their payloads
// whole, and a consumer joining later starts at the next keyframe instead
// of reading a released frame. Without it nothing is let go.
func TestReleaseReadLetsGoOfWhatEveryConsumerRead(t *testing.T) {
	payload := func(i int) []byte { return []byte{byte(i), byte(i), byte(i)} }
	cases := []struct {
		name      string
		release   bool
		reads     []int // frames each consumer reads of the open group
		wantKept  int   // frames of the group that still hold their payload
		lateFirst int64 // timestamp of the first frame a late consumer gets
	}{
		{"off", false, []int{3}, 4, 0},
		{"one reader", true, []int{3}, 1, 4000},
		{"slowest reader decides", true, []int{3, 1}, 3, 4000},
		{"all read", true, []int{4, 4}, 0, 4000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTrack("v")
			tr.SetReleaseRead(tc.release)
			var cons []*Consumer
			for range tc.reads {
				cons = append(cons, tr.Subscribe(0))
			}
			g, _ := tr.AppendGroup()
			for i := range 4 {
				if err := g.WriteFrame(Frame{Timestamp: int64(i) * 1000, Payload: payload(i)}); err != nil {
					t.Fatal(err)
				}
			}
			for ci, n := range tc.reads {
				for i := range n {
					ev, ok := cons[ci].Next()
					if !ok || ev.Kind != EventFrame || ev.Frame.Timestamp != int64(i)*1000 || !bytes.Equal(ev.Frame.Payload, payload(i)) {
						t.Fatalf("consumer %d frame %d: %+v %v", ci, i, ev, ok)
					}
				}
			}
			frames, _, _ := g.Frames(0)
			kept := 0
			for i, f := range frames {
				if f.Timestamp != int64(i)*1000 {
					t.Fatalf("frame %d lost its timestamp: %d", i, f.Timestamp)
				}
				if f.Payload != nil {
					kept++
				}
			}
			if len(frames) != 4 || kept != tc.wantKept {
				t.Fatalf("%d frames, %d with their payload; want 4, %d", len(frames), kept, tc.wantKept)
			}
			// The next group; a consumer joining now reads no released frame.
			g.Close(nil)
			g2, _ := tr.AppendGroup()
			g2.WriteFrame(Frame{Timestamp: 4000, Payload: payload(4)})
			late := tr.Subscribe(0)
			ev, ok := late.Next()
			if !ok || ev.Kind != EventFrame || ev.Frame.Timestamp != tc.lateFirst || ev.Frame.Payload == nil {
				t.Fatalf("late consumer's first event %+v %v, want the frame at %d", ev, ok, tc.lateFirst)
			}
		})
	}
}

func TestConsumersCountsTheTracksReaders(t *testing.T) {
	tr := NewTrack("video")
	if n := tr.Consumers(); n != 0 {
		t.Fatalf("%d consumers before any", n)
	}
	a, b := tr.Subscribe(0), tr.Subscribe(0)
	if n := tr.Consumers(); n != 2 {
		t.Fatalf("%d consumers, want 2", n)
	}
	a.Close()
	if n := tr.Consumers(); n != 1 {
		t.Fatalf("%d consumers after one closed, want 1", n)
	}
	b.Close()
	if n := tr.Consumers(); n != 0 {
		t.Fatalf("%d consumers after both closed", n)
	}
}

// TestReadySetPark: a parked reader is resumed, once, by the next wakeup
// of either kind, and a wakeup that came before Park is not lost (Park
// takes it and reports false).
func TestReadySetPark(t *testing.T) {
	for _, tc := range []struct {
		name        string
		before      func(r *ReadySet, tr *Track) // before Park
		parks       bool
		wake        func(r *ReadySet, tr *Track) // while parked
		wantResumed int
	}{
		{name: "Wake resumes", parks: true, wake: func(r *ReadySet, _ *Track) { r.Wake() }, wantResumed: 1},
		{name: "a frame resumes", parks: true, wake: func(r *ReadySet, tr *Track) { writeGroup(t, tr, 0, true, 1) }, wantResumed: 1},
		{name: "two wakes resume once", parks: true, wake: func(r *ReadySet, _ *Track) { r.Wake(); r.Wake() }, wantResumed: 1},
		{name: "nothing, not resumed", parks: true, wake: func(*ReadySet, *Track) {}, wantResumed: 0},
		{name: "pending Wake", before: func(r *ReadySet, _ *Track) { r.Wake() }, parks: false},
		{name: "pending frame", before: func(r *ReadySet, tr *Track) { writeGroup(t, tr, 0, true, 1) }, parks: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReadySet()
			tr := NewTrack("v")
			c := tr.Subscribe(0)
			c.Watch(r)
			r.Take(nil)
			<-r.Wakeup() // the Watch
			if tc.before != nil {
				tc.before(r, tr)
			}
			resumed := 0
			if got := r.Park(func() { resumed++ }); got != tc.parks {
				t.Fatalf("Park = %v, want %v", got, tc.parks)
			}
			if !tc.parks {
				select {
				case <-r.Wakeup():
					t.Fatal("Park left the wakeup it took")
				default:
				}
				return
			}
			tc.wake(r, tr)
			if resumed != tc.wantResumed {
				t.Fatalf("resumed %d times, want %d", resumed, tc.wantResumed)
			}
			if tc.wantResumed == 1 {
				// Resumed, the reader is not parked any more: the next
				// wakeup goes to the channel again.
				r.Wake()
				select {
				case <-r.Wakeup():
				default:
					t.Fatal("a wakeup after the resume was lost")
				}
				if resumed != 1 {
					t.Fatalf("resumed %d times after a later Wake", resumed)
				}
			}
		})
	}
}

// TestReadySetParkLosesNoWakeup: a reader that parks whenever it has read
// everything, resumed in a new goroutine each time, reads the last group
// of every track that producers on other goroutines write (run with
// -race): no wakeup is lost between its last look and its Park.
func TestReadySetParkLosesNoWakeup(t *testing.T) {
	const producers, groups = 4, 300
	r := NewReadySet()
	tracks := make([]*Track, producers)
	for i := range tracks {
		tracks[i] = NewTrack(fmt.Sprint(i))
		tracks[i].Subscribe(time.Hour).Watch(r)
	}
	last := 0 // tracks whose last frame was read
	done := make(chan struct{})
	var scratch []*Consumer
	var reader func()
	reader = func() {
		for {
			scratch = r.Take(scratch[:0])
			for _, c := range scratch {
				for ev, ok := c.Next(); ok; ev, ok = c.Next() {
					if ev.Kind == EventFrame && ev.Frame.Timestamp == groups-1 {
						last++
					}
				}
			}
			if last == producers {
				close(done)
				return
			}
			if r.Park(func() { go reader() }) {
				return
			}
		}
	}
	go reader()
	errs := make(chan error, producers)
	for _, tr := range tracks {
		go func() {
			for seq := range uint64(groups) {
				g, err := tr.CreateGroup(seq)
				if err == nil {
					err = g.WriteFrame(Frame{Timestamp: int64(seq), Payload: []byte{1}})
					g.Close(nil)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range producers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	<-done
}

// TestClosedConsumersAreNotKept: consumers that closed are not reachable
// from their track any more, whatever the order of subscribing and
// closing (a recording's first catalog watcher, closed, must not stay
// alive with its ready set for as long as the catalog track lives).
func TestClosedConsumersAreNotKept(t *testing.T) {
	tr := NewTrack("catalog.json")
	a, b := tr.Subscribe(0), tr.Subscribe(0)
	a.Watch(NewReadySet())
	b.Watch(NewReadySet())
	wa, wb := weak.Make(a), weak.Make(b)
	a.Close()
	b.Close()
	a, b = nil, nil
	c := tr.Subscribe(0) // takes the first slot again
	runtime.GC()
	if wa.Value() != nil || wb.Value() != nil {
		t.Fatalf("closed consumers still reachable: first %v, second %v", wa.Value() != nil, wb.Value() != nil)
	}
	runtime.KeepAlive(c)
}

// TestReadGroupsGoWithoutANewerOne: groups created before their consumer
// read them are dropped (beyond KeepGroups) once it has read them, not
// only when the next group comes: a paused broadcast sends none, and its
// recording would keep them all.
func TestReadGroupsGoWithoutANewerOne(t *testing.T) {
	for _, tc := range []struct {
		name      string
		keep      int
		groups    int
		consumers int // all read everything
		lagging   bool
		want      int // groups the track holds after the reads
	}{
		{name: "one consumer", keep: 1, groups: 8, consumers: 1, want: 1},
		{name: "two consumers", keep: 1, groups: 8, consumers: 2, want: 1},
		{name: "keep 3", keep: 3, groups: 8, consumers: 1, want: 3},
		{name: "a consumer that has not read", keep: 1, groups: 8, consumers: 1, lagging: true, want: 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTrack("audio")
			tr.SetKeepGroups(tc.keep)
			var cs []*Consumer
			for range tc.consumers {
				cs = append(cs, tr.Subscribe(time.Hour))
			}
			if tc.lagging {
				// Started at group 0, then left behind.
				lag := tr.Subscribe(time.Hour)
				writeGroup(t, tr, 0, true, 0)
				if ev, ok := lag.Next(); !ok || ev.Kind != EventFrame {
					t.Fatalf("lagging consumer's first read: %+v %v", ev, ok)
				}
				for seq := 1; seq < tc.groups; seq++ {
					writeGroup(t, tr, uint64(seq), true, int64(seq))
				}
			} else {
				for seq := range tc.groups {
					writeGroup(t, tr, uint64(seq), true, int64(seq))
				}
			}
			for _, c := range cs {
				n := 0
				for ev, ok := c.Next(); ok; ev, ok = c.Next() {
					if ev.Kind == EventFrame {
						n++
					}
				}
				if n != tc.groups {
					t.Fatalf("a consumer read %d frames, want %d", n, tc.groups)
				}
			}
			tr.mu.Lock()
			held := len(tr.groups)
			tr.mu.Unlock()
			if held != tc.want {
				t.Fatalf("track holds %d groups, want %d", held, tc.want)
			}
		})
	}
}

// An audio track allocates a Group per frame (hang sends a group a frame):
// a Group past 144 bytes takes the 160-byte size class, 16 more bytes per
// frame recorded (BenchmarkEndToEnd in-process/audio: 145 B/op at
// c99b305, 161 when media and bornTS were added beside an unpacked bool).
func TestAGroupFitsTheAllocatorsSizeClassOf144Bytes(t *testing.T) {
	if n := unsafe.Sizeof(Group{}); n > 144 {
		t.Fatalf("a Group takes %d bytes, want at most 144 (pack its fields: bool and int32 beside each other)", n)
	}
}

// TestABroadcastIsUnpacedOnceItsProducerSaysSo: a broadcast is paced (a
// live one) until its producer says it writes as fast as it is read.
func TestABroadcastIsUnpacedOnceItsProducerSaysSo(t *testing.T) {
	b := NewBroadcast("b")
	if b.Unpaced() {
		t.Fatal("a new broadcast is unpaced")
	}
	b.SetUnpaced()
	if !b.Unpaced() {
		t.Fatal("SetUnpaced did not make it unpaced")
	}
}

// TestATrackAskedOfAnEndedBroadcastIsRefusedNotLeftOpen: a broadcast with a
// producer (an archive's reader, a relay session) that ended, or ends while
// the producer makes the track, refuses it; before, the track was held
// open for ever and its reader waited until its own deadline (an archive
// read back with 0 of 189 AAC frames and a 60 s hang under load, suite26).
func TestATrackAskedOfAnEndedBroadcastIsRefusedNotLeftOpen(t *testing.T) {
	for _, tc := range []struct {
		name      string
		endBefore bool // the broadcast ends before the track is asked for
	}{
		{"asked after the broadcast ended", true},
		{"the broadcast ends while its producer makes the track", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBroadcast("demo")
			var made *Track
			b.HandleRequests(func(name string) (*Track, error) {
				made = NewTrack(name)
				if !tc.endBefore {
					b.Close(nil)
				}
				return made, nil
			})
			if tc.endBefore {
				b.Close(nil)
			}
			tr, err := b.Track("aac")
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("Track: a track %v, err %v; want ErrNotFound", tr != nil, err)
			}
			if made != nil {
				if ev, ok := made.Subscribe(0).Next(); !ok || ev.Kind != EventEnd {
					t.Error("the track the producer made for the ended broadcast did not end")
				}
			}
			if got := b.TrackNames(); len(got) != 0 {
				t.Errorf("the ended broadcast holds %v", got)
			}
		})
	}
}
