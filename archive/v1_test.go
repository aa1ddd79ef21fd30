package archive_test

import (
	"context"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/varint"

	"github.com/moq-export/moq-export/archive"
	"github.com/moq-export/moq-export/archive/internal/layout"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testmedia"
)

// TestAVersionOneArchiveReadsBack: an archive as the published moq-archive
// crates write it (v1 .info, groups/<largest>.<smallest> objects without
// Frame Start) reads back frame for frame.
func TestAVersionOneArchiveReadsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := archive.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	put := func(key string, b []byte) {
		t.Helper()
		if err := st.Put(ctx, key, b); err != nil {
			t.Fatal(err)
		}
	}
	info := []byte(`{"version":1,"priority":0,"timescale":1000000}`)
	cat, _ := demo.Catalog([]string{"h264", "aac"})
	catJSON, _ := cat.Marshal()
	put(layout.InfoKey("demo", "catalog.json"), info)
	obj, _ := layout.AppendSegment(nil, layout.Segment{Version: 1, Groups: []layout.Group{{Sequence: 0, Frames: []layout.Frame{{Timestamp: 0, Payload: catJSON}}}}})
	put(layout.GroupsKey("demo", "catalog.json", 0, 0), obj)
	want := map[string][]got{}
	for _, name := range []string{"h264", "aac"} {
		s, err := testmedia.LoadSample(name)
		if err != nil {
			t.Fatal(err)
		}
		put(layout.InfoKey("demo", name), info)
		// A group per keyframe (for audio, per 10 frames), two groups per
		// object.
		var groups []layout.Group
		seq := uint64(0)
		flush := func() {
			if len(groups) == 0 {
				return
			}
			obj, err := layout.AppendSegment(nil, layout.Segment{Version: 1, Groups: groups})
			if err != nil {
				t.Fatal(err)
			}
			put(layout.GroupsKey("demo", name, groups[len(groups)-1].Sequence, groups[0].Sequence), obj)
			groups = nil
		}
		for i, f := range s.Frames {
			if f.Keyframe && (name == "h264" || i%10 == 0) || len(groups) == 0 {
				if len(groups) == 2 {
					flush()
				}
				groups = append(groups, layout.Group{Sequence: seq})
				seq++
			}
			g := &groups[len(groups)-1]
			payload := append(varint.Append(nil, uint64(f.Timestamp)), f.Payload...)
			g.Frames = append(g.Frames, layout.Frame{Timestamp: uint64(f.Timestamp), Payload: payload})
			want[name] = append(want[name], got{f.Timestamp, len(g.Frames) == 1, g.Sequence, f.Payload})
		}
		flush()
	}
	rec, err := archive.Open(st, "").Recording(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Version() != 1 {
		t.Fatalf("version %d, want 1", rec.Version())
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	b, err := rec.Broadcast(cctx, archive.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	compare(t, "v1 archive", want, collect(cctx, t, b))
}
