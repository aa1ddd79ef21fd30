package archive_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/varint"

	"github.com/moq-export/moq-export/archive"
	"github.com/moq-export/moq-export/archive/internal/layout"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/samples"
)

// v1Segment is the length of the aligned segments of the v1 fixtures,
// which loop the samples v1Loops times.
const (
	v1Segment = 2_000_000
	v1Loops   = 10
)

// v1Archive writes an archive as the published moq-archive crates do (v1
// .info, groups/<largest>.<smallest> objects without Frame Start, one
// object per track per aligned segment), of the demo's H.264 and AAC
// samples (a group per keyframe; for audio, per 10 frames). With timeline
// it also writes the broadcast timeline (timeline.z, one record per
// segment listing each track's group range). It returns the frames
// stored per track, and the number of media objects.
func v1Archive(t *testing.T, st archive.Store, timeline bool) (map[string][]got, int) {
	t.Helper()
	ctx := context.Background()
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
	// segments[n][track] = the groups of segment n.
	segments := map[int]map[string][]layout.Group{}
	for _, name := range []string{"h264", "aac"} {
		s, err := samples.LoadSample(name)
		if err != nil {
			t.Fatal(err)
		}
		put(layout.InfoKey("demo", name), info)
		var groups []layout.Group
		seq := uint64(0)
		for loop := range v1Loops {
			for i, f := range s.Frames {
				ts := int64(loop)*s.Duration() + f.Timestamp
				if f.Keyframe && (name == "h264" || i%10 == 0) || len(groups) == 0 {
					groups = append(groups, layout.Group{Sequence: seq})
					seq++
				}
				g := &groups[len(groups)-1]
				payload := append(varint.Append(nil, uint64(ts)), f.Payload...)
				g.Frames = append(g.Frames, layout.Frame{Timestamp: uint64(ts), Payload: payload})
				want[name] = append(want[name], got{ts, len(g.Frames) == 1, g.Sequence, f.Payload})
			}
		}
		for _, g := range groups {
			n := int(g.Frames[0].Timestamp / v1Segment)
			if segments[n] == nil {
				segments[n] = map[string][]layout.Group{}
			}
			segments[n][name] = append(segments[n][name], g)
		}
	}
	objects := 0
	for _, n := range slices.Sorted(maps.Keys(segments)) {
		rec := layout.RecordV1{Segment: uint64(n), PTS: uint64(n) * v1Segment / 1000, Duration: v1Segment / 1000, Tracks: map[string][]layout.RangeV1{}}
		for name, groups := range segments[n] {
			obj, err := layout.AppendSegment(nil, layout.Segment{Version: 1, Groups: groups})
			if err != nil {
				t.Fatal(err)
			}
			first, last := groups[0].Sequence, groups[len(groups)-1].Sequence
			put(layout.GroupsKey("demo", name, last, first), obj)
			objects++
			rec.Tracks[name] = []layout.RangeV1{{Start: first, End: last}}
		}
		if !timeline {
			continue
		}
		rj, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		frames, err := layout.EncodeGroup(layout.MarshalCheckpoint(0, uint64(n), rj))
		if err != nil {
			t.Fatal(err)
		}
		tl, err := layout.AppendSegment(nil, layout.Segment{Version: 1, Groups: []layout.Group{{Sequence: uint64(n),
			Frames: []layout.Frame{{Timestamp: rec.PTS, Payload: frames[0]}}}}})
		if err != nil {
			t.Fatal(err)
		}
		put(layout.SegmentKey("demo", layout.TimelineV1, uint64(n)), tl)
	}
	return want, objects
}

// TestAVersionOneArchiveReadsBack: a v1 archive, with its broadcast
// timeline or without (its media objects then listed), reads back frame
// for frame.
func TestAVersionOneArchiveReadsBack(t *testing.T) {
	for _, timeline := range []bool{false, true} {
		t.Run(fmt.Sprintf("timeline=%v", timeline), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st, err := archive.Dir(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			want, _ := v1Archive(t, st, timeline)
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
		})
	}
}

// TestCuttingAVersionOneArchiveReadsItsTimelineNotAListing: a range of a
// v1 archive is found through its broadcast timeline (a bisection, a GET
// each) and read object by object from there: no media object is
// listed, and only the range's are read. Without a timeline, each
// track's objects are listed (keys only) and bisected: still a fraction
// of them read.
func TestCuttingAVersionOneArchiveReadsItsTimelineNotAListing(t *testing.T) {
	for _, timeline := range []bool{true, false} {
		t.Run(fmt.Sprintf("timeline=%v", timeline), func(t *testing.T) {
			t.Parallel()
			cutV1(t, timeline)
		})
	}
}

func cutV1(t *testing.T, timeline bool) {
	ctx := context.Background()
	dir, err := archive.Dir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	all, objects := v1Archive(t, dir, timeline)
	const from, to = 8_500_000, 9_000_000
	st := &watched{Store: dir}
	a := archive.Open(st, "")
	rec, err := a.Recording(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	b, err := rec.Broadcast(cctx, archive.ReadOptions{From: from, To: to})
	if err != nil {
		t.Fatal(err)
	}
	back := collect(cctx, t, b)
	// Video from the keyframe at or before From, audio from that
	// keyframe's time; nothing at or after To.
	key := int64(-1)
	for _, f := range all["h264"] {
		if f.key && f.ts <= from {
			key = f.ts
		}
	}
	want := map[string][]got{}
	for name, fs := range all {
		seen := false
		for _, f := range fs {
			if name == "h264" && f.ts == key {
				seen = true
			}
			if f.ts >= to || name == "h264" && !seen || name != "h264" && f.ts < key {
				continue
			}
			// The first frame read of a track starts a group.
			f.key = f.key || len(want[name]) == 0
			want[name] = append(want[name], f)
		}
	}
	if len(want["h264"]) == 0 || len(want["aac"]) == 0 {
		t.Fatalf("the range holds no frames: the test proves nothing (key %d)", key)
	}
	compare(t, "v1 range", want, back)
	st.mu.Lock()
	defer st.mu.Unlock()
	media := 0
	for _, k := range st.gets {
		if strings.Contains(k, "/groups/") && !strings.Contains(k, "/catalog") {
			media++
		}
	}
	for _, p := range st.lists {
		// The catalog track's objects (one per catalog update) are
		// listed; the media objects are found from the timeline.
		if timeline && !strings.HasPrefix(p, "demo/catalog") {
			t.Errorf("the cut listed %s", p)
		}
	}
	// The range (0.5 s from a keyframe 1 s before it) lies in one or two
	// 2 s segments: an object per track each, and the seek's look back.
	if timeline && media > 6 || !timeline && media > objects/2 {
		t.Errorf("the cut read %d media objects (%v), of %d in the archive: not proportional to the range", media, st.gets, objects)
	}
	t.Logf("%d objects read (%d media, of %d), listings %v", len(st.gets), media, objects, st.lists)
}

// watched is a Store that records the keys read and the prefixes listed.
type watched struct {
	archive.Store
	mu          sync.Mutex
	gets, lists []string
}

func (w *watched) Get(ctx context.Context, key string) ([]byte, error) {
	w.mu.Lock()
	w.gets = append(w.gets, key)
	w.mu.Unlock()
	return w.Store.Get(ctx, key)
}

func (w *watched) List(ctx context.Context, prefix string) ([]string, error) {
	w.mu.Lock()
	w.lists = append(w.lists, prefix)
	w.mu.Unlock()
	return w.Store.List(ctx, prefix)
}
