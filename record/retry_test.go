package record_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/record"
)

// fullDisk is an Output whose disk fills up once its files hold fillAt
// bytes: every write then fails with ENOSPC (a *record.WriteError, as a
// file's would) until free is called. Its free space, as Options.FreeSpace
// asks it, is low meanwhile.
type fullDisk struct {
	record.Output
	fillAt  int64
	written atomic.Int64
	filled  atomic.Bool // once
	full    atomic.Bool
	mu      sync.Mutex
	failed  map[string]bool // broadcasts whose write failed
	asked   int             // free space asked while full
	// lateFail delays the first failed write of broadcast lateBroadcast
	// by lateFail: its recording ends that much after the others'.
	lateBroadcast string
	lateFail      time.Duration
	lateOnce      sync.Once
}

func (d *fullDisk) Create(broadcast string, n int, start time.Time) (record.File, error) {
	f, err := d.Output.Create(broadcast, n, start)
	if err != nil {
		return nil, err
	}
	return &fillingFile{File: f, d: d, broadcast: broadcast}, nil
}

func (d *fullDisk) freeSpace(string) (int64, error) {
	if d.full.Load() {
		d.mu.Lock()
		d.asked++
		d.mu.Unlock()
		return 1 << 20, nil
	}
	return 100 << 30, nil
}

// state returns the broadcasts whose write failed and how often the free
// space was asked while full.
func (d *fullDisk) state() (failed []string, asked int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for b := range d.failed {
		failed = append(failed, b)
	}
	slices.Sort(failed)
	return failed, d.asked
}

type fillingFile struct {
	record.File
	d         *fullDisk
	broadcast string
}

func (f *fillingFile) Write(p []byte) (int, error) {
	if f.d.written.Add(int64(len(p))) >= f.d.fillAt && f.d.filled.CompareAndSwap(false, true) {
		f.d.full.Store(true)
	}
	if f.d.full.Load() {
		if f.broadcast == f.d.lateBroadcast {
			f.d.lateOnce.Do(func() { time.Sleep(f.d.lateFail) })
		}
		f.d.mu.Lock()
		f.d.failed[f.broadcast] = true
		f.d.mu.Unlock()
		return 0, &record.WriteError{Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}

func (f *fillingFile) Seek(offset int64, whence int) (int64, error) {
	if f.d.full.Load() {
		return 0, &record.WriteError{Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.(io.Seeker).Seek(offset, whence)
}

// TestRecordAllRestartsTheRecordingsAFullDiskEndedOnceItHasRoom: two
// broadcasts are recorded when the disk fills up. Each recording stops at
// its failed write (its file decodes); RecordAll waits until the disk has
// room again (no new file while it is full: it asks the free space, and
// says it waits), then starts each again into a new file, which records
// the rest of the broadcast. The restarts are logged and counted, and
// RecordAll, every failure recovered, returns no error.
//
// The disk gets room again once the recorder said, for each broadcast,
// that it waits for free space: what it reports, not a count of free
// space queries. The count (two) came from one broadcast alone when the
// other's write failed more than a retry's wait (100 ms) later, as it
// did under load (the second case makes that happen every time): the
// disk had room before the second recording's restart looked, and it
// never said it waited.
func TestRecordAllRestartsTheRecordingsAFullDiskEndedOnceItHasRoom(t *testing.T) {
	// Not parallel: SetWriteRetry changes what every RecordAll reads.
	defer record.SetWriteRetry(100*time.Millisecond, time.Second, 16<<20)()
	for _, tc := range []struct {
		name string
		// lateFail: b's first failed write returns that much later.
		lateFail time.Duration
	}{
		{name: "both recordings meet the full disk at once"},
		{name: "the second recording meets it 400 ms after the first", lateFail: 400 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recordTwoOntoADiskThatFills(t, tc.lateFail)
		})
	}
}

func recordTwoOntoADiskThatFills(t *testing.T, lateFail time.Duration) {
	dir := t.TempDir()
	files, err := record.Files(filepath.Join(dir, "{broadcast}.mkv"), record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	disk := &fullDisk{Output: files, fillAt: 96 << 10, failed: map[string]bool{}, lateBroadcast: "b", lateFail: lateFail}
	logs := &logSink{}
	src := record.Local(liveDemo("a", 1), liveDemo("b", 1))
	var finished atomic.Int32
	rec, err := record.New(record.Options{Output: disk, FreeSpace: disk.freeSpace, KeepTimestamps: true,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
		OnFile: func(e record.FileEvent) {
			if e.Finished && finished.Add(1) == 4 {
				src.Close()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rec.RecordAll(context.Background(), src) }()
	// The disk has room again once both recordings failed and the
	// recorder said, for each, that it waits for free space.
	deadline := time.Now().Add(30 * time.Second)
	for {
		failed, asked := disk.state()
		if waiting := waitingForRoom(logs.String()); len(failed) == 2 && waiting["a"] && waiting["b"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("failed %v, free space asked %d times while full\n%s", failed, asked, logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := rec.Stats().Restarted; n != 0 {
		t.Fatalf("%d restarts while the disk was full", n)
	}
	disk.full.Store(false)
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, record.ErrSourceClosed) {
			t.Fatalf("RecordAll: %v\n%s", err, logs)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("RecordAll did not end\n%s", logs)
	}
	if n := rec.Stats().Restarted; n != 2 {
		t.Errorf("Stats.Restarted %d, want 2", n)
	}
	byBroadcast := map[string][]record.FileInfo{}
	for _, f := range rec.Files() {
		byBroadcast[f.Broadcast] = append(byBroadcast[f.Broadcast], f)
	}
	for _, b := range []string{"a", "b"} {
		fs := byBroadcast[b]
		if len(fs) != 2 {
			t.Fatalf("%s: files %+v, want the one the full disk ended and its restart", b, fs)
		}
		if want := []string{b + ".mkv", b + "-1.mkv"}; filepath.Base(fs[0].Path) != want[0] || filepath.Base(fs[1].Path) != want[1] {
			t.Errorf("%s: files %s and %s, want %v", b, fs[0].Path, fs[1].Path, want)
		}
		var last float64
		for i, f := range fs {
			mediatest.DecodeClean(t, f.Path)
			p := mediatest.Probe(t, f.Path)
			if int64(len(p.Packets)) != f.Frames || f.Frames == 0 {
				t.Errorf("%s: %d packets, %d frames written", f.Path, len(p.Packets), f.Frames)
			}
			first, end := packetSpan(t, p)
			t.Logf("%s: %d frames, %.3f-%.3f s", filepath.Base(f.Path), f.Frames, first, end)
			if i == 1 && end < last+1 {
				t.Errorf("%s ends at %.3f s, not past the end of the file the full disk ended (%.3f s)", f.Path, end, last)
			}
			last = end
		}
	}
	log := logs.String()
	for _, want := range []string{"a full disk ended the recording", "waiting for free space", "restarting a recording a full disk ended"} {
		if strings.Count(log, want) < 2 {
			t.Errorf("the log says %q %d times, want once per broadcast:\n%s", want, strings.Count(log, want), log)
		}
	}
}

// waitingForRoom returns the broadcasts for which log says the recorder
// waits for free space to restart them.
func waitingForRoom(log string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, "waiting for free space") {
			continue
		}
		if _, b, ok := strings.Cut(line, " broadcast="); ok {
			b, _, _ = strings.Cut(b, " ")
			out[b] = true
		}
	}
	return out
}

// packetSpan returns the first and the last packet time of p, in seconds.
func packetSpan(t *testing.T, p mediatest.ProbeResult) (first, last float64) {
	t.Helper()
	first = -1
	for _, pk := range p.Packets {
		v, err := strconv.ParseFloat(pk.PTSTime, 64)
		if err != nil {
			t.Fatalf("packet time %q: %v", pk.PTSTime, err)
		}
		if first < 0 || v < first {
			first = v
		}
		last = max(last, v)
	}
	return first, last
}

// TestRecordAllRestartsARecordingMinFreeBytesCutOnceTheDiskHasRoom: with
// MinFreeBytes (the command's --min-free, 1 GiB by default) a filling disk
// cuts the recording before a write fails; RecordAll starts it again in a
// new file once the free space is back above the floor, and not before.
func TestRecordAllRestartsARecordingMinFreeBytesCutOnceTheDiskHasRoom(t *testing.T) {
	defer record.SetFreeCheckEvery(16 << 10)()
	defer record.SetWriteRetry(100*time.Millisecond, time.Second, 16<<20)()
	dir := t.TempDir()
	out, err := record.Files(filepath.Join(dir, "{broadcast}.mkv"), record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var filled, low atomic.Bool
	free := func(string) (int64, error) {
		if low.Load() {
			return 100 << 20, nil
		}
		return 100 << 30, nil
	}
	logs := &logSink{}
	src := record.Local(liveDemo("a", 2))
	var finished atomic.Int32
	rec, err := record.New(record.Options{Output: out, MinFreeBytes: 1 << 30, FreeSpace: free,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
		OnFile: func(e record.FileEvent) {
			if !e.Finished && filled.CompareAndSwap(false, true) {
				low.Store(true) // the disk fills up once the first file is open
			}
			if e.Finished && finished.Add(1) == 2 {
				src.Close()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rec.RecordAll(context.Background(), src) }()
	// Room again once the restart found the disk still below the floor.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "waiting for free space") {
		if time.Now().After(deadline) {
			t.Fatalf("no wait for free space:\n%s", logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := rec.Stats().Restarted; n != 0 {
		t.Fatalf("%d restarts below the floor", n)
	}
	low.Store(false)
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, record.ErrSourceClosed) {
			t.Fatalf("RecordAll: %v\n%s", err, logs)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("RecordAll did not end\n%s", logs)
	}
	files := rec.Files()
	if len(files) != 2 || filepath.Base(files[0].Path) != "a.mkv" || filepath.Base(files[1].Path) != "a-1.mkv" {
		t.Fatalf("files %+v, want a.mkv (cut) and a-1.mkv\n%s", files, logs)
	}
	for _, f := range files {
		mediatest.DecodeClean(t, f.Path)
		if p := mediatest.Probe(t, f.Path); int64(len(p.Packets)) != f.Frames || f.Frames == 0 {
			t.Errorf("%s: %d packets, %d frames written", f.Path, len(p.Packets), f.Frames)
		}
	}
	if n := rec.Stats().Restarted; n != 1 {
		t.Errorf("Stats.Restarted %d, want 1", n)
	}
	if log := logs.String(); !strings.Contains(log, "recording cut") || !strings.Contains(log, "restarting a recording a full disk ended") {
		t.Errorf("log:\n%s", log)
	}
}
