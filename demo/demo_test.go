package demo_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testmedia"
	"github.com/moq-export/moq-export/model"
)

// TestLateRenditionsJoinByACatalogUpdate: the first catalog lists the
// renditions of the start; once LateAfter of media is published a second
// catalog group adds the late ones, whose frames start at LateAfter on the
// shared clock and then follow their sample.
func TestLateRenditionsJoinByACatalogUpdate(t *testing.T) {
	const after = 1500 * time.Millisecond
	b := model.NewBroadcast("demo")
	if err := demo.Publish(context.Background(), b, demo.Options{Renditions: []string{"h264"}, Late: []string{"aac"}, LateAfter: after, Loops: 1, KeepGroups: 100000}); err != nil {
		t.Fatal(err)
	}
	var snapshots [][]string
	cat, err := b.Track(catalog.TrackName)
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(0); cat.Group(seq) != nil; seq++ {
		frames, _, _ := cat.Group(seq).Frames(0)
		c, err := catalog.Parse(frames[0].Payload)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range c.Renditions() {
			names = append(names, r.Name)
		}
		slices.Sort(names)
		snapshots = append(snapshots, names)
	}
	if len(snapshots) != 2 || !slices.Equal(snapshots[0], []string{"h264"}) || !slices.Equal(snapshots[1], []string{"aac", "h264"}) {
		t.Fatalf("catalog snapshots %v, want [h264] then [aac h264]", snapshots)
	}
	audio, err := b.Track("aac")
	if err != nil {
		t.Fatal(err)
	}
	aac := testmedia.MustLoadSample("aac")
	var got []int64
	for seq := uint64(0); audio.Group(seq) != nil; seq++ {
		frames, _, _ := audio.Group(seq).Frames(0)
		for _, f := range frames {
			got = append(got, f.Timestamp)
		}
	}
	if len(got) != len(aac.Frames) {
		t.Fatalf("%d aac frames, want the sample's %d", len(got), len(aac.Frames))
	}
	for i, f := range aac.Frames {
		if want := f.Timestamp + after.Microseconds(); got[i] != want {
			t.Fatalf("aac frame %d at %d µs, want %d", i, got[i], want)
		}
	}
}
