package model

import (
	"errors"
	"testing"
	"time"
)

// closed reports whether c is closed now.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// TestAWaitForATracksFirstFrameEndsAtThatFrameOrTheTracksEnd: FirstFrame
// is closed exactly when OldestTimestamp starts to report a frame (a
// marker alone is none), or when the track ends without one; until then it
// stays open, and every call gives the same channel.
func TestAWaitForATracksFirstFrameEndsAtThatFrameOrTheTracksEnd(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []func(t *testing.T, tr *Track) // each followed by the check
		open  []bool                          // FirstFrame still open after each step
	}{
		{
			name: "a media frame after an empty group and a marker group",
			steps: []func(*testing.T, *Track){
				func(t *testing.T, tr *Track) { mustGroup(t, tr, 0) },
				func(t *testing.T, tr *Track) { writeTo(t, tr, 0, Frame{Marker: true}); tr.Group(0).Close(nil) },
				func(t *testing.T, tr *Track) { mustGroup(t, tr, 1) },
				func(t *testing.T, tr *Track) { writeTo(t, tr, 1, Frame{Timestamp: 40, Payload: []byte{1}}) },
			},
			open: []bool{true, true, true, false},
		},
		{
			name: "the track ends without a frame",
			steps: []func(*testing.T, *Track){
				func(t *testing.T, tr *Track) { mustGroup(t, tr, 3) },
				func(t *testing.T, tr *Track) { tr.Close(errors.New("gone")) },
			},
			open: []bool{true, false},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTrack("v")
			first := tr.FirstFrame()
			for i, step := range tc.steps {
				step(t, tr)
				if closed(first) == tc.open[i] {
					_, holds := tr.OldestTimestamp()
					t.Fatalf("after step %d: FirstFrame closed=%v (OldestTimestamp ok=%v), want open=%v", i, closed(first), holds, tc.open[i])
				}
				if tr.FirstFrame() != first {
					t.Fatalf("after step %d: another channel", i)
				}
			}
		})
	}
	t.Run("asked after the frame came", func(t *testing.T) {
		tr := NewTrack("v")
		mustGroup(t, tr, 0)
		writeTo(t, tr, 0, Frame{Timestamp: 1, Payload: []byte{1}})
		if !closed(tr.FirstFrame()) {
			t.Fatal("FirstFrame open on a track that holds a frame")
		}
	})
	t.Run("a waiter in another goroutine wakes", func(t *testing.T) {
		tr := NewTrack("v")
		woke := make(chan bool)
		go func() {
			select {
			case <-tr.FirstFrame():
				_, ok := tr.OldestTimestamp()
				woke <- ok
			case <-time.After(10 * time.Second):
				woke <- false
			}
		}()
		mustGroup(t, tr, 7)
		writeTo(t, tr, 7, Frame{Timestamp: 1, Payload: []byte{1}})
		if !<-woke {
			t.Fatal("the waiter did not wake to a track holding its frame")
		}
	})
}

// TestAWaitForATrackOfABroadcastNeitherCreatesNorRequestsIt: a wait for a
// track the broadcast does not hold yet (a publisher waiting for its
// catalog) must not make it (Track would, or would subscribe to it); it
// ends with the frame of the track once it is created or its request
// returns it, or with the broadcast.
func TestAWaitForATrackOfABroadcastNeitherCreatesNorRequestsIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		// fill makes the track and gives it a frame, or ends b.
		fill func(t *testing.T, b *Broadcast)
	}{
		{name: "created by its producer", fill: func(t *testing.T, b *Broadcast) {
			tr := b.CreateTrack("catalog.json")
			mustGroup(t, tr, 0)
			writeTo(t, tr, 0, Frame{Timestamp: 0, Payload: []byte("{}")})
		}},
		{name: "returned by a request, already waited for", fill: func(t *testing.T, b *Broadcast) {
			tr := NewTrack("catalog.json")
			own := tr.FirstFrame()
			b.HandleRequests(func(string) (*Track, error) { return tr, nil })
			if _, err := b.Track("catalog.json"); err != nil {
				t.Fatal(err)
			}
			mustGroup(t, tr, 0)
			writeTo(t, tr, 0, Frame{Timestamp: 0, Payload: []byte("{}")})
			if !closed(own) {
				t.Fatal("the track's own FirstFrame is open")
			}
		}},
		{name: "the broadcast ends", fill: func(t *testing.T, b *Broadcast) { b.Close(nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBroadcast("room")
			first := b.FirstFrame("catalog.json")
			if names := b.TrackNames(); len(names) != 0 || b.FirstFrame("catalog.json") != first {
				t.Fatalf("the wait made tracks %v or another channel", names)
			}
			if closed(first) {
				t.Fatal("FirstFrame closed before the track came")
			}
			tc.fill(t, b)
			if !closed(first) {
				t.Fatal("FirstFrame still open")
			}
		})
	}
}

func mustGroup(t *testing.T, tr *Track, seq uint64) {
	t.Helper()
	if _, err := tr.CreateGroup(seq); err != nil {
		t.Fatal(err)
	}
}

func writeTo(t *testing.T, tr *Track, seq uint64, f Frame) {
	t.Helper()
	if err := tr.Group(seq).WriteFrame(f); err != nil {
		t.Fatal(err)
	}
}
