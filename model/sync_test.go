package model

import "testing"

// writeSync writes one group of frames with the given sync values, at
// timestamps 10*seq+i.
func writeSync(t *testing.T, tr *Track, seq uint64, syncs ...Sync) {
	t.Helper()
	g, err := tr.CreateGroup(seq)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range syncs {
		if err := g.WriteFrame(Frame{Timestamp: int64(10*seq) + int64(i), Sync: s}); err != nil {
			t.Fatal(err)
		}
	}
	g.Close(nil)
}

func TestSyncDecidesKeyframesOverTheGroupRule(t *testing.T) {
	tests := []struct {
		name   string
		groups [][]Sync
		times  []int64 // delivered
		keys   []bool
	}{
		{"GroupRuleByDefault", [][]Sync{{SyncGroup, SyncGroup}, {SyncGroup}}, []int64{0, 1, 10}, []bool{true, false, true}},
		{"DeltaFramesBeforeTheFirstKeyAreDropped", [][]Sync{{SyncDelta}, {SyncDelta}, {SyncKey}, {SyncDelta}}, []int64{20, 30}, []bool{true, false}},
		{"DeltaOpeningAGroupIsNoKeyframe", [][]Sync{{SyncKey, SyncDelta}, {SyncDelta, SyncDelta}}, []int64{0, 1, 10, 11}, []bool{true, false, false, false}},
		{"KeyInsideAGroup", [][]Sync{{SyncKey, SyncDelta, SyncKey}}, []int64{0, 1, 2}, []bool{true, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTrack("v")
			tr.SetKeepGroups(16)
			c := tr.Subscribe(0)
			for i, g := range tt.groups {
				writeSync(t, tr, uint64(i), g...)
			}
			evs := events(c)
			if got := frameTimes(evs); !equal(got, tt.times) {
				t.Fatalf("delivered %v, want %v", got, tt.times)
			}
			for i, ev := range evs {
				if ev.Keyframe != tt.keys[i] {
					t.Errorf("frame %d keyframe %v", i, ev.Keyframe)
				}
			}
			if want := uint64(countFrames(tt.groups) - len(tt.times)); c.Dropped() != want {
				t.Errorf("Dropped %d, want %d", c.Dropped(), want)
			}
		})
	}
}

func countFrames(gs [][]Sync) int {
	n := 0
	for _, g := range gs {
		n += len(g)
	}
	return n
}

// TestSkippingAStalledGroupWaitsForAKeyframe: a reader that gives up on a
// stalled group must not go on with a delta frame that depended on it.
func TestSkippingAStalledGroupWaitsForAKeyframe(t *testing.T) {
	tr := NewTrack("v")
	tr.SetKeepGroups(16)
	c := tr.Subscribe(0)
	writeSync(t, tr, 0, SyncKey)
	g1, _ := tr.CreateGroup(1) // stalls, never written
	_ = g1
	writeSync(t, tr, 2, SyncDelta)
	writeSync(t, tr, 3, SyncKey)
	if got := frameTimes(events(c)); !equal(got, []int64{0, 30}) {
		t.Fatalf("delivered %v", got)
	}
}

// TestAGroupPerFrameWithBFramesIsNoRewind: a publisher that sends each
// frame as its own group (MediaMTX) sends B-frames in groups that start
// before what was delivered. A group opening with a delta frame is not a
// new timeline: every frame is delivered, with no discontinuity. A group
// opening with a keyframe before the delivered ones still is.
func TestAGroupPerFrameWithBFramesIsNoRewind(t *testing.T) {
	tr := NewTrack("v")
	tr.SetKeepGroups(16)
	c := tr.Subscribe(0)
	// Decode order I0 P3 B1 B2 P6 B4 B5, one frame per group; then a key
	// at 2: the publisher restarted on a fresh clock.
	frames := []Frame{{Timestamp: 0, Sync: SyncKey}, {Timestamp: 3, Sync: SyncDelta}, {Timestamp: 1, Sync: SyncDelta}, {Timestamp: 2, Sync: SyncDelta},
		{Timestamp: 6, Sync: SyncDelta}, {Timestamp: 4, Sync: SyncDelta}, {Timestamp: 5, Sync: SyncDelta}, {Timestamp: 2, Sync: SyncKey}}
	for i, f := range frames {
		g, err := tr.CreateGroup(uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		if err := g.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
		g.Close(nil)
	}
	if got, want := frameTimes(events(c)), []int64{0, 3, 1, 2, 6, 4, 5, -1, 2}; !equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
}
