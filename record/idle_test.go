package record_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
)

// recordingGoroutines counts the goroutines that run or wait in a
// recording: its start, or its export.
func recordingGoroutines() int {
	return mediatest.GoroutinesIn("record.(*Recorder).startRecording", "moq-export/export.(*Export)")
}

// TestIdleRecordingsHoldNoGoroutine: recordings whose broadcasts paused
// after their first group hold no goroutine at all (each export parks,
// export.Export.Go); when the broadcasts end, every file is finished with
// every frame published, and ffprobe reads them all.
func TestIdleRecordingsHoldNoGoroutine(t *testing.T) {
	const n = 5
	pub, endMedia := context.WithCancel(context.Background())
	defer endMedia()
	published := make([]atomic.Int64, n)
	var bcs []*model.Broadcast
	for i := range n {
		bc := model.NewBroadcast(fmt.Sprintf("b%d", i))
		go demo.Publish(pub, bc, demo.Options{Pause: true, Published: &published[i]})
		bcs = append(bcs, bc)
	}
	out, err := record.Files(filepath.Join(t.TempDir(), "{broadcast}.mkv"), record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opened, finished := make(chan struct{}, n), make(chan struct{}, n)
	r, err := record.New(record.Options{Output: out, Logger: slog.New(slog.DiscardHandler), OnFile: func(e record.FileEvent) {
		if e.Finished {
			finished <- struct{}{}
		} else {
			opened <- struct{}{}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	src := record.Local(bcs...)
	done := make(chan error, 1)
	go func() { done <- r.RecordAll(context.Background(), src) }()
	for range n {
		<-opened
	}
	// Once each has read its first group, nothing runs for them.
	for deadline := time.Now().Add(10 * time.Second); recordingGoroutines() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines still in idle recordings", recordingGoroutines())
		}
	}
	endMedia()
	for range n {
		<-finished
	}
	src.Close()
	if err := <-done; err != nil && !errors.Is(err, record.ErrSourceClosed) {
		t.Fatalf("RecordAll: %v", err)
	}
	files := r.Files()
	if len(files) != n {
		t.Fatalf("%d files, want %d", len(files), n)
	}
	for _, f := range files {
		var i int
		fmt.Sscanf(f.Broadcast, "b%d", &i)
		if f.Frames != published[i].Load() || f.Frames == 0 {
			t.Errorf("%s: %d frames written, %d published", f.Path, f.Frames, published[i].Load())
		}
		if p := mediatest.Probe(t, f.Path); int64(len(p.Packets)) != f.Frames {
			t.Errorf("%s: ffprobe reads %d packets, %d written", f.Path, len(p.Packets), f.Frames)
		}
	}
}

// againSource announces broadcast "b" once, and again once its first
// recording opened its file; each Broadcast call publishes a new demo
// loop under that name (a publisher that restarted).
type againSource struct {
	opened chan struct{} // the first recording opened its file
	mu     sync.Mutex
	calls  int
}

func (s *againSource) Broadcast(path string) *model.Broadcast {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	bc := model.NewBroadcast(path)
	go demo.Publish(context.Background(), bc, demo.Options{Loops: 1, Realtime: true})
	return bc
}

func (s *againSource) Resolve(*model.Broadcast, string) (*model.Broadcast, error) {
	return nil, model.ErrNotFound
}

func (s *againSource) Announced(context.Context) (record.Feed, error) {
	return &againFeed{s: s}, nil
}

type againFeed struct {
	s    *againSource
	sent int
}

func (f *againFeed) Next(ctx context.Context) (record.Announcement, error) {
	f.sent++
	switch f.sent {
	case 1:
		return record.Announcement{Path: "b", Active: true}, nil
	case 2:
		<-f.s.opened
		return record.Announcement{Path: "b", Active: true}, nil
	}
	<-ctx.Done()
	return record.Announcement{}, ctx.Err()
}

func (f *againFeed) Close() {}

// TestBroadcastAnnouncedAgainIsRecordedAgainAfterItsRecording: an
// announcement of a broadcast whose recording runs starts its next
// recording once the first ended, in a file of its own; both are whole.
func TestBroadcastAnnouncedAgainIsRecordedAgainAfterItsRecording(t *testing.T) {
	out, err := record.Files(filepath.Join(t.TempDir(), "{broadcast}.mkv"), record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src := &againSource{opened: make(chan struct{})}
	var once sync.Once
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var finished atomic.Int32
	r, err := record.New(record.Options{Output: out, Logger: slog.New(slog.DiscardHandler), OnFile: func(e record.FileEvent) {
		if !e.Finished {
			once.Do(func() { close(src.opened) })
		} else if finished.Add(1) == 2 {
			cancel()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.RecordAll(ctx, src); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("RecordAll: %v", err)
	}
	files := r.Files()
	if len(files) != 2 || files[0].Path == files[1].Path || src.calls != 2 {
		t.Fatalf("files %+v after %d recordings, want two of b", files, src.calls)
	}
	for _, f := range files {
		checkWhole(t, f)
	}
}
