package record

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/testutil/proctest"
	"github.com/moq-export/moq-export/model"
)

// TestRecordAllBoundsCatalogFetches: of 20 broadcasts announced at once,
// at most CatalogFetches ask for their catalog at the same time; every one
// is recorded once the catalogs come. Once every recording asked or waits
// for a place, the test answers the requests one at a time, oldest first,
// and counts the requests open at each moment (no timing: it waits for
// requests and answers).
func TestRecordAllBoundsCatalogFetches(t *testing.T) {
	const n, bound = 20, 3
	aac := &catalog.Catalog{}
	aac.Audio.Renditions = map[string]catalog.AudioConfig{"aac": {Common: catalog.Common{Codec: "mp4a.40.2"}, SampleRate: 48000, NumberOfChannels: 2}}
	data, err := aac.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var open, most atomic.Int64
	requests := make(chan *model.Track, n)
	var bcs []*model.Broadcast
	for i := range n {
		b := model.NewBroadcast(fmt.Sprintf("b%02d", i))
		b.HandleRequests(func(name string) (*model.Track, error) {
			tr := model.NewTrack(name)
			if name == catalog.TrackName {
				now := open.Add(1)
				for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
				}
				requests <- tr
			}
			return tr, nil
		})
		bcs = append(bcs, b)
	}
	dir := t.TempDir()
	out, err := Files(filepath.Join(dir, "{broadcast}.mkv"), FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var opened sync.WaitGroup
	opened.Add(n)
	r, err := New(Options{Output: out, CatalogFetches: bound, Logger: slog.New(slog.DiscardHandler), OnFile: func(e FileEvent) {
		if !e.Finished {
			opened.Done()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	r.slotHold = time.Hour // only answers free a place here
	ctx, cancel := context.WithCancel(context.Background())
	src := Local(bcs...)
	done := make(chan error, 1)
	go func() { done <- r.RecordAll(ctx, src) }()

	// Every recording has asked for its catalog or waits for a place.
	for r.slotWaiters.Load()+open.Load() < n {
		time.Sleep(time.Millisecond)
	}
	var pending []*model.Track
	received := 0
	for answered := 0; answered < n; {
		if len(pending) < bound && received < n {
			// A place is free: a waiting recording takes it.
			pending = append(pending, <-requests)
			received++
			continue
		}
		open.Add(-1)
		g, err := pending[0].AppendGroup()
		if err != nil {
			t.Fatal(err)
		}
		g.WriteFrame(model.Frame{Payload: data})
		g.Close(nil)
		pending = pending[1:]
		answered++
	}
	opened.Wait()
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if got := most.Load(); got != bound {
		t.Errorf("%d catalog requests were open at once, want the bound %d", got, bound)
	}
	if got := len(r.Files()); got != n {
		t.Errorf("%d files finished, want %d", got, n)
	}
}

// fdChildEnv runs TestOutOfFilesSaysSo's child part.
const fdChildEnv = "RECORD_TEST_FD_CHILD"

// TestOutOfFilesSaysSo runs a child process whose open-files limit (soft
// and hard) leaves room for a few files: creating outputs until one fails
// gives an error that names the limit and what to do, wrapping
// ErrOutOfFiles and EMFILE.
func TestOutOfFilesSaysSo(t *testing.T) {
	if os.Getenv(fdChildEnv) != "" {
		fdChild(t)
		return
	}
	cmd := proctest.Command(os.Args[0], "-test.run=^TestOutOfFilesSaysSo$", "-test.v")
	cmd.Env = append(os.Environ(), fdChildEnv+"="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestOutOfFilesSaysSo") {
		t.Fatalf("the child did not run the check:\n%s", out)
	}
}

func fdChild(t *testing.T) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	limit := uint64(len(entries) + 4)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		t.Fatal(err)
	}
	out, err := Files(filepath.Join(os.Getenv(fdChildEnv), "{broadcast}.ts"), FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var files []File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for i := range 50 {
		f, err := out.Create(fmt.Sprintf("b%d", i), 0, time.Now())
		if err == nil {
			files = append(files, f)
			continue
		}
		if !errors.Is(err, ErrOutOfFiles) || !errors.Is(err, syscall.EMFILE) {
			t.Fatalf("file %d: %v; want ErrOutOfFiles wrapping EMFILE", i, err)
		}
		for _, want := range []string{"out of file descriptors", fmt.Sprintf("may open %d", limit), "holds its file open"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q does not say %q", err, want)
			}
		}
		// The command adds what to do (internal/cli's describe test).
		if oe, ok := errors.AsType[*OutOfFilesError](err); !ok || oe.Limit != uint64(limit) || oe.System {
			t.Errorf("%v: want an OutOfFilesError naming the limit %d", err, limit)
		}
		if len(files) == 0 {
			t.Fatal("not one file fitted under the limit")
		}
		return
	}
	t.Fatalf("50 files opened under a limit of %d", limit)
}
