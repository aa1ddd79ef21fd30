package mediatest

import (
	"testing"

	"github.com/moq-export/moq-export/model"
)

// CopyTracks copies the named tracks of src, group by group, into new
// tracks of dst (keeping up to 10,000 groups each) and ends them; edit
// gives each frame's payload (i is its index in its group), so a test can
// publish a broadcast whose payloads differ from the demo's where it
// needs them to (malformed, withheld, corrupted).
func CopyTracks(t testing.TB, src, dst *model.Broadcast, names []string, edit func(name string, i int, f model.Frame) []byte) {
	t.Helper()
	for _, name := range names {
		st, err := src.Track(name)
		if err != nil {
			t.Fatal(err)
		}
		dt := dst.CreateTrack(name)
		dt.SetKeepGroups(10000)
		last, _ := st.LatestGroup()
		for seq := uint64(0); seq <= last; seq++ {
			g := st.Group(seq)
			if g == nil {
				continue
			}
			frames, _, _ := g.Frames(0)
			dg, err := dt.CreateGroup(seq)
			if err != nil {
				t.Fatal(err)
			}
			for i, f := range frames {
				if err := dg.WriteFrame(model.Frame{Timestamp: f.Timestamp, Payload: edit(name, i, f)}); err != nil {
					t.Fatal(err)
				}
			}
			dg.Close(nil)
		}
		dt.Close(nil)
	}
}
