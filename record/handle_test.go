package record_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/record"
)

// TestARecordingIsAValueStoppedAndSplitAlone: two recordings started on
// one Recorder; one is split (two files) and stopped while the other goes
// on to its Duration. Each file decodes, and each recording's own stats
// and files add up to the Recorder's.
func TestARecordingIsAValueStoppedAndSplitAlone(t *testing.T) {
	t.Parallel()
	src := record.Local(liveDemo("a", 0), liveDemo("b", 0))
	dir := t.TempDir()
	out, err := record.Files(filepath.Join(dir, "{broadcast}-{n}.mkv"), record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		events []string
	)
	r, err := record.New(record.Options{Output: out, Duration: 4 * time.Second,
		OnRecording: func(rec *record.Recording) {
			mu.Lock()
			events = append(events, rec.Broadcast()+" "+string(rec.State()))
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a := r.Start(ctx, src, "a")
	b := r.Start(ctx, src, "b")
	if a.ID() == b.ID() || len(r.Recordings()) != 2 {
		t.Fatalf("ids %q %q, %d recordings listed", a.ID(), b.ID(), len(r.Recordings()))
	}
	waitFor(t, func() bool { return a.Stats().Frames > 30 })
	if err := a.Split(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(a.Files()) == 2 && a.Files()[1].Frames > 30 })
	a.Stop()
	<-a.Done()
	if a.Err() != nil || a.State() != record.StateEnded {
		t.Fatalf("stopped recording: state %s, err %v", a.State(), a.Err())
	}
	if b.State() == record.StateEnded || len(r.Recordings()) != 1 {
		t.Fatalf("stopping a ended b too: %s, %d running", b.State(), len(r.Recordings()))
	}
	<-b.Done()
	if b.Err() != nil {
		t.Fatal(b.Err())
	}
	if !errors.Is(a.Split(), record.ErrNotRecording) {
		t.Errorf("Split after the end: %v", a.Split())
	}
	var frames int64
	for _, rec := range []*record.Recording{a, b} {
		var fileFrames int64
		for _, f := range rec.Files() {
			mediatest.DecodeClean(t, f.Path)
			fileFrames += f.Frames
		}
		if st := rec.Stats(); st.Frames != fileFrames || st.Frames == 0 {
			t.Errorf("%s: stats say %d frames, its files %d", rec.Broadcast(), st.Frames, fileFrames)
		}
		frames += rec.Stats().Frames
	}
	if len(a.Files()) != 2 || len(b.Files()) != 1 {
		t.Errorf("a wrote %d files (want 2), b %d (want 1)", len(a.Files()), len(b.Files()))
	}
	if r.Stats().Frames != frames {
		t.Errorf("the Recorder counts %d frames, its recordings %d", r.Stats().Frames, frames)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 4 {
		t.Errorf("OnRecording calls %q, want a start and an end of each", events)
	}
}

// TestSplitAndChapterSayWhatTheOutputCannotDo: a file without {n} or
// {time} cannot be split, and a TS file holds no chapters.
func TestSplitAndChapterSayWhatTheOutputCannotDo(t *testing.T) {
	t.Parallel()
	out, err := record.Files(filepath.Join(t.TempDir(), "x.ts"), record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := record.New(record.Options{Output: out, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rec := r.Start(context.Background(), record.Local(liveDemo("a", 0)), "a")
	waitFor(t, func() bool { return rec.Stats().Frames > 0 })
	if err := rec.Split(); !errors.Is(err, record.ErrCannotSplit) {
		t.Errorf("Split of one named file: %v", err)
	}
	var ce *record.ChapterError
	if err := rec.Chapter("x"); !errors.As(err, &ce) || ce.Format != record.TS {
		t.Errorf("Chapter in TS: %v", err)
	}
	<-rec.Done()
}

// waitFor polls cond for up to 20 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
