package archive_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/varint"

	"github.com/moq-export/moq-export/archive"
	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/model"
)

// A resumable source: track "v" of 1 s groups of 10 frames (100 ms
// apart), group g starting at g s, as hang legacy objects.
const resumeFrames = 10

var resumeCatalog = []byte(`{"video":{"renditions":{"v":{"codec":"avc1.64001f","codedWidth":64,"codedHeight":64}}}}`)

func resumeFrame(g, i int) got {
	ts := int64(g)*1_000_000 + int64(i)*100_000
	return got{ts: ts, key: i == 0, group: uint64(g), data: fmt.Appendf(nil, "group %d frame %d", g, i)}
}

// session is one run of a recorder: what its subscription delivers
// (from the catalog's group 0 on, as a relay gives a new subscriber),
// each group given as [group, frames]; the last group is left open when
// open is set, and the run is stopped (ctx cancelled) rather than ended.
func archiveRun(t *testing.T, st archive.Store, groups [][2]int, open bool) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := model.NewBroadcast("demo")
	cg, _ := b.CreateTrack(catalog.TrackName).CreateGroup(0)
	cg.WriteFrame(model.Frame{Payload: resumeCatalog})
	cg.Close(nil)
	tr := b.CreateTrack("v")
	tr.SetKeepGroups(1 << 10)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	prefix, _ := archive.BroadcastPrefix("", "demo")
	go func() { done <- archive.Write(wctx, st, prefix, b, archive.WriteOptions{Grace: -1}) }()
	for tr.Consumers() == 0 {
		select {
		case err := <-done:
			return err // the writer refused before subscribing
		case <-time.After(time.Millisecond):
		}
	}
	for k, gf := range groups {
		g, err := tr.CreateGroup(uint64(gf[0]))
		if err != nil {
			t.Fatal(err)
		}
		for i := range gf[1] {
			f := resumeFrame(gf[0], i)
			g.WriteFrame(model.Frame{Timestamp: f.ts, Payload: append(varint.Append(nil, uint64(f.ts)), f.data...)})
		}
		if !open || k < len(groups)-1 {
			g.Close(nil)
		}
	}
	if !open {
		b.Close(nil)
		return <-done
	}
	// Stopped with its last group open: what was received is archived.
	for !tr.Drained() {
		time.Sleep(time.Millisecond)
	}
	stop()
	return <-done
}

func TestARestartedWriterContinuesTheArchiveAfterAGap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := archive.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The first run is stopped in the middle of group 5 ...
	if err := archiveRun(t, st, [][2]int{{0, 10}, {1, 10}, {2, 10}, {3, 10}, {4, 10}, {5, 5}}, true); err != nil {
		t.Fatal(err)
	}
	// ... the restarted one is handed group 5 again from its start
	// (archived up to frame 5), then misses 6-8 (published while it was
	// down) and goes on from 9.
	if err := archiveRun(t, st, [][2]int{{5, 10}, {9, 10}, {10, 10}, {11, 10}, {12, 10}}, false); err != nil {
		t.Fatal(err)
	}
	var want []got
	for _, g := range []int{0, 1, 2, 3, 4, 5, 9, 10, 11, 12} {
		for i := range resumeFrames {
			want = append(want, resumeFrame(g, i))
		}
	}
	back := readBack(t, dir, archive.ReadOptions{})
	compare(t, "resumed archive", map[string][]got{"v": want}, back)
	for i, f := range back["v"] {
		if i < len(want) && f.group != want[i].group {
			t.Fatalf("frame %d read back in group %d, want %d", i, f.group, want[i].group)
		}
	}
	// One timeline: the records of both runs, numbered on, with the gap
	// where the writer was down.
	ctx := context.Background()
	rec, err := archive.Open(st, "").Recording(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	spans, err := rec.Spans(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 2 || spans[0].Start != 0 || spans[0].End < 5900*time.Millisecond || spans[0].End > 6*time.Second ||
		spans[1].Start != 9*time.Second || spans[1].End < 12900*time.Millisecond {
		t.Errorf("spans %v, want 0s-6s and 9s-13s", spans)
	}
	// A range inside the second run starts at its keyframe.
	cut := readBack(t, dir, archive.ReadOptions{From: 10_500_000, To: 11_000_000})
	if v := cut["v"]; len(v) != 10 || v[0].ts != 10_000_000 || !v[0].key || v[9].ts != 10_900_000 {
		t.Errorf("10.5-11 s read %d frames, want the 10 of 10.0-10.9 s, from the keyframe at 10 s to before 11 s", len(v))
	}
}

func TestARestartedWriterRefusesASourceThatRestartedItsGroups(t *testing.T) {
	t.Parallel()
	st, err := archive.Dir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := archiveRun(t, st, [][2]int{{0, 10}, {1, 10}, {2, 10}, {3, 10}, {4, 10}}, false); err != nil {
		t.Fatal(err)
	}
	// A new run of the source numbers its groups from 0 again: not the
	// same broadcast; archiving it under the prefix would mix two runs.
	err = archiveRun(t, st, [][2]int{{0, 10}, {1, 10}}, false)
	if !errors.Is(err, archive.ErrSourceRestarted) {
		t.Fatalf("archiving a restarted source into the prefix: %v, want ErrSourceRestarted", err)
	}
}
