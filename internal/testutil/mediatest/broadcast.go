package mediatest

import (
	"testing"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/samples"
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

// AACFrame is the duration of an AAC frame at 48 kHz, in µs: the spacing
// of AudioGroups' groups.
const AACFrame = 21_333

// AudioGroups returns a broadcast named name of catalog cat, which lists
// one AAC track named aac (demo.Catalog([]string{"aac"}): mediatest cannot
// import demo, whose tests import it); audio, that track (keeping up to
// 10,000 groups); and group, which writes group seq of audio: one AAC
// frame at seq·AACFrame µs, closed. A test writes live groups past a gap
// while audio is held (Track.Hold) to stand for a reconnect that fills
// the gap.
func AudioGroups(t testing.TB, name string, cat *catalog.Catalog) (bc *model.Broadcast, audio *model.Track, group func(seq uint64)) {
	t.Helper()
	bc = model.NewBroadcast(name)
	data, err := cat.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	cg, err := bc.CreateTrack(catalog.TrackName).AppendGroup()
	if err != nil {
		t.Fatal(err)
	}
	cg.WriteFrame(model.Frame{Payload: data})
	audio = bc.CreateTrack("aac")
	audio.SetKeepGroups(10_000)
	payload := samples.MustLoadSample("aac").Frames[0].Payload
	group = func(seq uint64) {
		t.Helper()
		g, err := audio.CreateGroup(seq)
		if err != nil {
			t.Fatal(err)
		}
		g.WriteFrame(model.Frame{Timestamp: int64(seq) * AACFrame, Payload: payload})
		g.Close(nil)
	}
	return bc, audio, group
}
