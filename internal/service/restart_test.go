package service_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/service"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/record"
)

// fillOnce is an Output whose first file fails its writes with ENOSPC
// (a full disk, as a *record.WriteError) once it holds fillAt bytes; the
// files after it write normally (the disk has room again).
type fillOnce struct {
	record.Output
	fillAt  int64
	created atomic.Int32
}

func (o *fillOnce) Create(broadcast string, n int, start time.Time) (record.File, error) {
	f, err := o.Output.Create(broadcast, n, start)
	if err != nil || o.created.Add(1) > 1 {
		return f, err
	}
	return &fillingFile{File: f, left: o.fillAt}, nil
}

type fillingFile struct {
	record.File
	left int64
}

func (f *fillingFile) Write(p []byte) (int, error) {
	if f.left -= int64(len(p)); f.left < 0 {
		return 0, &record.WriteError{Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}

// TestMetricsCountTheRecordingsAFullDiskEndedAndRecordAllRestarted: a
// --record-all recording whose disk fills up is started again by the
// Recorder into a new file; /metrics counts the restart
// (moq_export_recordings_restarted_total, 0 before it), as Stats.Restarted
// does, and the new file decodes.
func TestMetricsCountTheRecordingsAFullDiskEndedAndRecordAllRestarted(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s, base := serve(t, service.Options{Root: root})
	out := &fillOnce{Output: mustFiles(t, filepath.Join(root, "{broadcast}.mkv")), fillAt: 64 << 10}
	src := record.Local(liveDemo(t, "a"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	free := func(string) (int64, error) { return 100 << 30, nil }
	r, done := recordAll(t, s, record.Options{Output: out, FreeSpace: free}, src, ctx)
	if got := metric(scrape(t, base), "moq_export_recordings_restarted_total"); got != 0 {
		t.Fatalf("moq_export_recordings_restarted_total %v before any restart, want 0", got)
	}
	waitFor(t, "the restarted recording's file", func() bool { return out.created.Load() >= 2 && r.Stats().Restarted == 1 })
	if got := metric(scrape(t, base), "moq_export_recordings_restarted_total"); got != 1 {
		t.Errorf("moq_export_recordings_restarted_total %v after one restart, want 1", got)
	}
	// The restart records: its file has media, then ends cleanly.
	waitFor(t, "media in the restarted recording", func() bool {
		recs := r.Recordings()
		return len(recs) == 1 && recs[0].Stats().Frames > 50
	})
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	files := r.Files()
	if len(files) != 2 || filepath.Base(files[1].Path) != "a-1.mkv" {
		t.Fatalf("files %+v, want a.mkv (ended by the full disk) and a-1.mkv (the restart)", files)
	}
	mediatest.DecodeClean(t, files[1].Path)
	if got := metric(scrape(t, base), "moq_export_recordings_restarted_total"); got != 1 {
		t.Errorf("moq_export_recordings_restarted_total %v at the end, want 1", got)
	}
}
