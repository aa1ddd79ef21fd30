package demo_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/samples"
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
	aac := samples.MustLoadSample("aac")
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

// TestMarkersEndEveryVideoGroupAndBreakEveryTrackEverySecondVideoGroup:
// with Markers, each video group ends with an end marker where its last
// frame stops presenting, and a discontinuity marker group comes on every
// track before its first group after every second video group; the media
// frames are those of the samples, as without.
func TestMarkersEndEveryVideoGroupAndBreakEveryTrackEverySecondVideoGroup(t *testing.T) {
	for _, kind := range []catalog.ContainerKind{catalog.ContainerLegacy, catalog.ContainerCMAF} {
		t.Run(string(kind), func(t *testing.T) {
			cat, err := demo.CatalogIn(nil, kind)
			if err != nil {
				t.Fatal(err)
			}
			b := model.NewBroadcast("m")
			cons := map[string]*model.Consumer{}
			for _, r := range cat.Renditions() {
				cons[r.Name] = b.CreateTrack(r.Name).Subscribe(0)
			}
			if err := demo.Publish(context.Background(), b, demo.Options{Container: kind, Loops: 1, KeepGroups: 1 << 20, Markers: true}); err != nil {
				t.Fatal(err)
			}
			for _, r := range cat.Renditions() {
				var s *samples.Sample
				for _, n := range demo.DefaultRenditions {
					if x := samples.MustLoadSample(n); x.Codec == r.Common().Codec {
						s = x
					}
				}
				var frames, ends, discs int
				var lastPTS []int64 // of the group's frames
				for ev, ok := cons[r.Name].Next(); ok && ev.Kind != model.EventEnd; ev, ok = cons[r.Name].Next() {
					switch {
					case ev.Kind == model.EventDiscontinuity:
						discs++
					case ev.Frame.Marker && ev.Keyframe:
						// the discontinuity marker, before the
						// EventDiscontinuity it gives
					case ev.Frame.Marker:
						ends++
						// The frame before it stops presenting at the
						// next presentation time: one frame later (30/s).
						prev := lastPTS[len(lastPTS)-1]
						if d := ev.Frame.Timestamp - prev; d < 33_000 || d > 34_000 {
							t.Fatalf("%s: end marker %d µs after its frame, want one frame", r.Name, d)
						}
					default:
						frames++
						if ev.Keyframe {
							lastPTS = lastPTS[:0]
						}
						lastPTS = append(lastPTS, ev.Frame.Timestamp)
						if len(ev.Frame.Payload) == 0 {
							t.Fatalf("%s: an empty media frame", r.Name)
						}
					}
				}
				if frames != len(s.Frames) {
					t.Errorf("%s: %d frames, the sample has %d", r.Name, frames, len(s.Frames))
				}
				wantEnds := 0
				if s.Kind == "video" {
					for _, f := range s.Frames {
						if f.Keyframe {
							wantEnds++
						}
					}
				}
				if ends != wantEnds || discs != 2 {
					t.Errorf("%s: %d end markers, %d discontinuities; want %d and 2 (4 video groups)", r.Name, ends, discs, wantEnds)
				}
			}
		})
	}
}
