package model

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// evKey is what a reader sees of an event.
func evKey(ev Event) string {
	return fmt.Sprintf("%d/%d/%v/%d/%v/%v/%v", ev.Kind, ev.Frame.Timestamp, ev.Frame.Marker, ev.Group, ev.Keyframe, ev.Restart, ev.Err)
}

// TestNextFramesReadsWhatNextReadsEventByEvent: a reader that takes runs
// of frames (NextFrames, a few at a time) sees the same events, in the
// same order, as one that calls Next, through markers (a discontinuity
// and an end), groups opening with a delta frame, a cut group, a restart
// of the producer and groups written while they are read; and a run never
// holds anything but frames of one group after its first event.
func TestNextFramesReadsWhatNextReadsEventByEvent(t *testing.T) {
	tr := NewTrack("v")
	one, runs := tr.Subscribe(time.Second), tr.Subscribe(time.Second)
	var want, got []string
	longest := 0
	drain := func() {
		for {
			ev, ok := one.Next()
			if !ok {
				break
			}
			want = append(want, evKey(ev))
		}
		for {
			evs := runs.NextFrames(make([]Event, 0, 3))
			if len(evs) == 0 {
				break
			}
			longest = max(longest, len(evs))
			for i, ev := range evs {
				if i > 0 && (ev.Kind != EventFrame || ev.Frame.Marker || ev.Group != evs[0].Group) {
					t.Fatalf("a run holds %s after %s", evKey(ev), evKey(evs[0]))
				}
				got = append(got, evKey(ev))
			}
		}
	}
	write := func(g *Group, fs ...Frame) {
		for _, f := range fs {
			if err := g.WriteFrame(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	p := []byte{1}
	g, _ := tr.CreateGroup(0)
	write(g, Frame{Timestamp: 0, Payload: p}, Frame{Timestamp: 33, Payload: p})
	drain()
	write(g, Frame{Timestamp: 66, Payload: p}, Frame{Timestamp: 99, Payload: p}, Frame{Timestamp: 120, Marker: true},
		Frame{Timestamp: 132, Payload: p}, Frame{Timestamp: 165, Payload: p}, Frame{Timestamp: 198, Payload: p})
	g.Close(nil)
	g, _ = tr.CreateGroup(1) // opens with a delta frame: dropped until a key
	write(g, Frame{Timestamp: 231, Payload: p, Sync: SyncDelta}, Frame{Timestamp: 264, Payload: p, Sync: SyncKey}, Frame{Timestamp: 297, Payload: p})
	g.Close(errors.New("cut"))
	g, _ = tr.CreateGroup(2) // a discontinuity marker opens it
	write(g, Frame{Timestamp: 300, Marker: true})
	g.Close(nil)
	g, _ = tr.CreateGroup(3)
	for i := range 10 {
		write(g, Frame{Timestamp: 1000 + int64(i)*33, Payload: p})
	}
	drain()
	g.Close(nil)
	tr.Discontinuity() // the producer restarts
	g, _ = tr.CreateGroup(0)
	write(g, Frame{Timestamp: 0, Payload: p}, Frame{Timestamp: 33, Payload: p}, Frame{Timestamp: 66, Payload: p}, Frame{Timestamp: 99, Payload: p})
	g.Close(nil)
	tr.Close(nil)
	drain()
	if len(want) < 20 {
		t.Fatalf("%d events: the test proves nothing", len(want))
	}
	if longest < 3 {
		t.Errorf("the longest run held %d events, want runs of 3", longest)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("runs read\n%v\nNext reads\n%v", got, want)
	}
}
