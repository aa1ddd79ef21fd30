package model

import (
	"errors"
	"testing"
)

// readUntil reads c until it took the frame at ts.
func readUntil(t *testing.T, c *Consumer, ts int64) {
	t.Helper()
	for {
		ev, ok := c.Next()
		if !ok {
			t.Fatalf("no frame at %d", ts)
		}
		if ev.Kind == EventFrame && ev.Frame.Timestamp == ts {
			return
		}
	}
}

func TestReadToWaitsForEveryConsumerToTakeAFrameThatLateOrReadAll(t *testing.T) {
	tr := NewTrack("v")
	if !tr.ReadTo(5) {
		t.Error("an empty track without consumers: ReadTo false")
	}
	a, b := tr.Subscribe(0), tr.Subscribe(0)
	writeGroup(t, tr, 0, true, 0, 1, 2, 3, 4)
	writeGroup(t, tr, 1, false, 5, 6, 7)
	if tr.ReadTo(5) {
		t.Error("ReadTo(5) before any read")
	}
	readUntil(t, a, 6)
	if tr.ReadTo(5) {
		t.Error("ReadTo(5) with one consumer at the start")
	}
	readUntil(t, b, 4)
	if tr.ReadTo(5) {
		t.Error("ReadTo(5) with a consumer at 4")
	}
	readUntil(t, b, 5)
	if !tr.ReadTo(5) {
		t.Error("ReadTo(5) false once both took 5")
	}
	if tr.ReadTo(7) || tr.Drained() {
		t.Error("ReadTo(7) or Drained with 7 unread")
	}
	events(a)
	events(b)
	if !tr.ReadTo(100) || !tr.Drained() {
		t.Error("ReadTo(100) or Drained false once both read all there is")
	}
}

func TestAReadToThatWaitsCallsTheDrainedHandlerOnceItsMarkIsTaken(t *testing.T) {
	tr := NewTrack("v")
	calls := 0
	tr.HandleDrained(func() { calls++ })
	c := tr.Subscribe(0)
	writeGroup(t, tr, 0, false, 0, 1, 2, 3, 4, 5, 6)
	if tr.ReadTo(4) {
		t.Fatal("ReadTo(4) before any read")
	}
	readUntil(t, c, 3)
	if calls != 0 {
		t.Errorf("handler called %d times before the mark was taken", calls)
	}
	readUntil(t, c, 4)
	if calls != 1 {
		t.Errorf("handler called %d times when the mark was taken, want 1", calls)
	}
	readUntil(t, c, 5)
	if calls != 1 {
		t.Errorf("handler called %d times after the mark, want it once", calls)
	}
	if _, ok := c.Next(); !ok {
		t.Fatal("frame 6 missing")
	}
	if _, ok := c.Next(); ok || calls != 2 {
		t.Errorf("reading all there is called the handler %d times in all, want 2 (it is the drained handler too)", calls)
	}
}

func TestWriteFramesWritesAsWriteFrameDoesFrameByFrame(t *testing.T) {
	one, many := NewTrack("one"), NewTrack("many")
	co, cm := one.Subscribe(0), many.Subscribe(0)
	ready := NewReadySet()
	cm.Watch(ready)
	ready.Take(nil)
	frames := []Frame{{Timestamp: 10, Payload: []byte{1}}, {Timestamp: 40, Payload: []byte{2}, Sync: SyncDelta}, {Timestamp: 20, Payload: []byte{3}, Sync: SyncDelta}}
	g, _ := one.CreateGroup(3)
	for _, f := range frames {
		if err := g.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	gm, _ := many.CreateGroup(3)
	if err := gm.WriteFrames(nil); err != nil {
		t.Fatal(err)
	}
	if err := gm.WriteFrames(frames); err != nil {
		t.Fatal(err)
	}
	if got := ready.Take(nil); len(got) != 1 || got[0] != cm {
		t.Errorf("ready after WriteFrames: %v, want its consumer", got)
	}
	eo, em := events(co), events(cm)
	if !equal(frameTimes(eo), frameTimes(em)) || len(em) != len(frames) {
		t.Errorf("WriteFrames gave %v, WriteFrame %v", frameTimes(em), frameTimes(eo))
	}
	for i := range eo {
		if eo[i].Keyframe != em[i].Keyframe || string(eo[i].Frame.Payload) != string(em[i].Frame.Payload) {
			t.Errorf("frame %d: %+v, want %+v", i, em[i], eo[i])
		}
	}
	gm.Close(nil)
	if err := gm.WriteFrames(frames); !errors.Is(err, ErrClosed) {
		t.Errorf("WriteFrames to a closed group: %v, want ErrClosed", err)
	}
}
