package record_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
)

// logSink collects log lines for assertions.
type logSink struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// liveDemo publishes the demo renditions in real time, each sample played
// loops times, then ends the broadcast.
func liveDemo(name string, loops int, renditions ...string) *model.Broadcast {
	bc := model.NewBroadcast(name)
	go demo.Publish(context.Background(), bc, demo.Options{Realtime: true, Loops: loops, Renditions: renditions})
	return bc
}

// recordAllUntil runs RecordAll over src with opts until want files are
// finished (opts.OnFile, when set, sees every event first), then ends the
// source; it returns the Recorder.
func recordAllUntil(t *testing.T, src *record.LocalSource, opts record.Options, want int) *record.Recorder {
	t.Helper()
	var finished atomic.Int32
	onFile := opts.OnFile
	opts.OnFile = func(e record.FileEvent) {
		if onFile != nil {
			onFile(e)
		}
		if e.Finished && finished.Add(1) == int32(want) {
			src.Close()
		}
	}
	rec, err := record.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.RecordAll(context.Background(), src); err != nil && !errors.Is(err, record.ErrSourceClosed) {
		t.Fatalf("RecordAll: %v", err)
	}
	return rec
}

// TestMaxRecordingsRefusesTheBroadcastBeyondIt: with room for one
// recording, of two broadcasts announced together one is recorded whole
// and playable, the other refused and logged.
func TestMaxRecordingsRefusesTheBroadcastBeyondIt(t *testing.T) {
	dir := t.TempDir()
	out, err := record.Files(filepath.Join(dir, "{broadcast}.mkv"), record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	logs := &logSink{}
	src := record.Local(liveDemo("a", 1), liveDemo("b", 1))
	files := recordAllUntil(t, src, record.Options{Output: out, MaxRecordings: 1, Logger: slog.New(slog.NewTextHandler(logs, nil))}, 1).Files()
	if len(files) != 1 {
		t.Fatalf("files %+v, want one", files)
	}
	other := map[string]string{"a": "b", "b": "a"}[files[0].Broadcast]
	if !strings.Contains(logs.String(), "refused a broadcast") || !strings.Contains(logs.String(), "broadcast="+other) ||
		!strings.Contains(logs.String(), "at most 1") {
		t.Fatalf("no refusal of %s logged:\n%s", other, logs)
	}
	checkWhole(t, files[0])
}

// TestAdmitDefersTheBroadcastsAnnouncedWhileItSaysNo: Admit says no to
// the first broadcast asked about (an overload monitor that just saw the
// recorder fall behind) and yes afterwards. That broadcast is refused with
// a LimitError of LimitOverload wrapping Admit's reason, logged and given
// to OnRefused once, and no file is opened for it then; asked again a
// second later it is recorded (a local source still holds its start),
// and the other one is recorded as usual.
func TestAdmitDefersTheBroadcastsAnnouncedWhileItSaysNo(t *testing.T) {
	dir := t.TempDir()
	out, err := record.Files(filepath.Join(dir, "{broadcast}.mkv"), record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	busy := errors.New("the recorder is overloaded")
	var asked atomic.Int32
	var mu sync.Mutex
	var refused []string
	var refusal error
	logs := &logSink{}
	src := record.Local(liveDemo("a", 1), liveDemo("b", 1))
	files := recordAllUntil(t, src, record.Options{Output: out, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Admit: func() error {
			if asked.Add(1) == 1 {
				return busy
			}
			return nil
		},
		OnRefused: func(b string, err error) {
			mu.Lock()
			refused, refusal = append(refused, b), err
			mu.Unlock()
		}}, 2).Files()
	mu.Lock()
	defer mu.Unlock()
	if len(refused) != 1 || len(files) != 2 {
		t.Fatalf("refused %v, files %+v: want one refusal, then both recorded", refused, files)
	}
	le, ok := errors.AsType[*record.LimitError](refusal)
	if !ok || le.Limit != record.LimitOverload || !errors.Is(refusal, busy) || !errors.Is(refusal, record.ErrLimit) {
		t.Fatalf("refused with %v (%#v), want a LimitOverload wrapping Admit's error", refusal, le)
	}
	if !strings.Contains(logs.String(), "refused a broadcast for now") || !strings.Contains(logs.String(), "broadcast="+refused[0]) ||
		!strings.Contains(logs.String(), "overloaded") {
		t.Fatalf("no refusal of %s logged:\n%s", refused[0], logs)
	}
	for _, f := range files {
		mediatest.DecodeClean(t, f.Path)
		if f.Media < 1 {
			t.Errorf("%s recorded %.2f s", f.Broadcast, f.Media)
		}
	}
	if n := asked.Load(); n < 3 {
		t.Errorf("Admit asked %d times, want the second broadcast and the retry of the first", n)
	}
}

// checkWhole decodes f and checks that it holds every frame of one demo
// loop (2-4 s of h264 and aac).
func checkWhole(t *testing.T, f record.FileInfo) {
	t.Helper()
	mediatest.DecodeClean(t, f.Path)
	p := mediatest.Probe(t, f.Path)
	if int64(len(p.Packets)) != f.Frames || f.Media < 1.9 {
		t.Errorf("%s: %d packets, %d frames written, %.2f s; want one whole loop", f.Path, len(p.Packets), f.Frames, f.Media)
	}
}

// TestMaxFileBytesCutsTheRecordingThatReachesIt: a recording whose file
// would pass MaxFileBytes is finished before it does (playable, just under
// that size, cut logged), while a smaller one alongside it is recorded whole.
func TestMaxFileBytesCutsTheRecordingThatReachesIt(t *testing.T) {
	dir := t.TempDir()
	out, err := record.Files(filepath.Join(dir, "{broadcast}.mkv"), record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const limit = 96 << 10 // one loop of h264+aac is about 160 KB, of aac alone 35 KB
	logs := &logSink{}
	src := record.Local(liveDemo("big", 1), liveDemo("small", 1, "aac"))
	files := recordAllUntil(t, src, record.Options{Output: out, MaxFileBytes: limit, Logger: slog.New(slog.NewTextHandler(logs, nil))}, 2).Files()
	if len(files) != 2 {
		t.Fatalf("files %+v", files)
	}
	for _, f := range files {
		mediatest.DecodeClean(t, f.Path)
		switch f.Broadcast {
		case "big":
			// The limit is kept before a frame is written: the file
			// never passes it, and ends within a few frames of it.
			if f.Size > limit || f.Size < limit-16<<10 {
				t.Errorf("big: %d bytes, want just under %d", f.Size, limit)
			}
			// Cut: fewer frames than one loop of both samples.
			all := len(samples.MustLoadSample("h264").Frames) + len(samples.MustLoadSample("aac").Frames)
			if p := mediatest.Probe(t, f.Path); int64(len(p.Packets)) != f.Frames || f.Frames >= int64(all)*3/4 {
				t.Errorf("big: %d packets, %d frames written of %d", len(p.Packets), f.Frames, all)
			}
		case "small":
			if f.Size >= limit || f.Media < 1.9 {
				t.Errorf("small: %d bytes, %.2f s; want it whole", f.Size, f.Media)
			}
		}
	}
	if !strings.Contains(logs.String(), "recording cut") || !strings.Contains(logs.String(), "broadcast=big") ||
		!strings.Contains(logs.String(), "reached 96 KiB") || strings.Contains(logs.String(), "broadcast=small reason") {
		t.Fatalf("log:\n%s", logs)
	}
}

// TestMinFreeBytesFinishesRunningRecordingsAndRefusesNewOnes: when the
// output disk falls below MinFreeBytes, the running recording is finished
// (playable) and a new one is refused with the reason.
func TestMinFreeBytesFinishesRunningRecordingsAndRefusesNewOnes(t *testing.T) {
	defer record.SetFreeCheckEvery(16 << 10)()
	dir := t.TempDir()
	out, err := record.Files(filepath.Join(dir, "{broadcast}.mkv"), record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The disk fills up once the first file is open.
	var full atomic.Bool
	free := func(path string) (int64, error) {
		if !strings.HasPrefix(path, dir) && path != dir {
			t.Errorf("free space asked of %s, outside %s", path, dir)
		}
		if full.Load() {
			return 100 << 20, nil
		}
		return 100 << 30, nil
	}
	logs := &logSink{}
	opts := record.Options{Output: out, MinFreeBytes: 1 << 30, FreeSpace: free, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	opts.OnFile = func(e record.FileEvent) {
		if !e.Finished {
			full.Store(true)
		}
	}
	rec := recordAllUntil(t, record.Local(liveDemo("a", 2)), opts, 1)
	files := rec.Files()
	if len(files) != 1 {
		t.Fatalf("files %+v", files)
	}
	mediatest.DecodeClean(t, files[0].Path)
	if p := mediatest.Probe(t, files[0].Path); int64(len(p.Packets)) != files[0].Frames || files[0].Media > 3 {
		t.Errorf("%d packets, %d frames, %.2f s: want a cut well before the 2 loops", len(p.Packets), files[0].Frames, files[0].Media)
	}
	if !strings.Contains(logs.String(), "recording cut") || !strings.Contains(logs.String(), "below 1 GiB") {
		t.Fatalf("log:\n%s", logs)
	}
	// A new recording is refused, in RecordAll and in Record.
	src2 := record.Local(liveDemo("b", 1))
	src2.Close()
	if err := rec.RecordAll(context.Background(), src2); err != nil && !errors.Is(err, record.ErrSourceClosed) {
		t.Fatalf("RecordAll: %v", err)
	}
	if !strings.Contains(logs.String(), "refused a broadcast") || !strings.Contains(logs.String(), "broadcast=b") {
		t.Fatalf("log:\n%s", logs)
	}
	if err := rec.Record(context.Background(), record.Local(liveDemo("c", 1)), "c"); !errors.Is(err, record.ErrLimit) {
		t.Fatalf("Record below the floor: %v", err)
	}
	if got := rec.Files(); len(got) != 1 {
		t.Fatalf("files after the refusals: %+v", got)
	}
}
