package archive_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/moq-export/moq-export/archive"
	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/proctest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
)

// failing is a store whose Put of chosen keys fails, once each.
type failing struct {
	archive.Store
	mu   sync.Mutex
	keys map[string]bool
}

var errDiskFull = errors.New("disk full (test)")

func (f *failing) Put(ctx context.Context, key string, data []byte) error {
	f.mu.Lock()
	fail := f.keys[key]
	delete(f.keys, key)
	f.mu.Unlock()
	if fail {
		// What a store that fails mid-write leaves: nothing under key.
		return fmt.Errorf("put %s: %w", key, errDiskFull)
	}
	return f.Store.Put(ctx, key, data)
}

// checkObjects parses every segment object of the archive in dir.
func checkObjects(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(p, "/segments/") {
			return err
		}
		if strings.HasPrefix(d.Name(), ".tmp-") {
			return nil // an unfinished write, never linked into place
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAStoreThatFailsMidWriteLeavesAGapNotACorruptSegment(t *testing.T) {
	t.Parallel()
	prefix, _ := archive.BroadcastPrefix("", "demo")
	lostMedia := prefix + "/h264/segments/0000000000000000001"
	lostTimeline := prefix + "/aac%2Etimeline%2Ez/segments/0000000000000000001"
	var st *failing
	r := archiveDemo(t, catalog.ContainerLegacy, []string{"h264", "aac"}, archive.WriteOptions{Grace: -1}, func(s archive.Store) archive.Store {
		st = &failing{Store: s, keys: map[string]bool{lostMedia: true, lostTimeline: true}}
		return st
	})
	if len(st.keys) != 0 {
		t.Fatalf("the writes meant to fail were not made: %v", st.keys)
	}
	gaps := map[string]archive.RecordEvent{}
	for _, e := range r.events {
		if e.Gap {
			if !errors.Is(e.Err, errDiskFull) {
				t.Errorf("gap %+v does not say why", e)
			}
			gaps[e.Track] = e
		}
	}
	if len(gaps) != 2 || gaps["h264"].Sequence != 1 || gaps["aac"].Sequence != 1 {
		t.Fatalf("gaps %+v, want record 1 of h264 and of aac", gaps)
	}
	// The next record took the lost one's sequence: the records stored
	// are numbered without a hole.
	for name := range gaps {
		seen := map[uint64]bool{}
		for _, e := range r.events {
			if e.Track == name && !e.Gap {
				seen[e.Sequence] = true
			}
		}
		for i := range uint64(len(seen)) {
			if !seen[i] {
				t.Errorf("%s: records stored %v, a hole at %d", name, seen, i)
			}
		}
	}
	checkObjects(t, r.dir)
	// Read back: every frame but those of the two lost records, intact.
	want := map[string][]got{}
	for name, fs := range r.direct {
		g := gaps[name]
		i := indexOf(fs, g.Start)
		if i < 0 || i+g.Frames > len(fs) {
			t.Fatalf("%s: the lost record's %d frames from %d µs are not in the direct reading", name, g.Frames, g.Start)
		}
		want[name] = append(append([]got(nil), fs[:i]...), fs[i+g.Frames:]...)
	}
	compare(t, "archive with gaps", want, readBack(t, r.dir, archive.ReadOptions{}))
}

func indexOf(fs []got, ts int64) int {
	for i, f := range fs {
		if f.ts == ts {
			return i
		}
	}
	return -1
}

func TestRetentionDeletesOnlyRecordsOutsideTheWindow(t *testing.T) {
	t.Parallel()
	const window = 1500 * time.Millisecond
	r := archiveDemo(t, catalog.ContainerLegacy, []string{"h264", "aac"}, archive.WriteOptions{Retention: window, Grace: -1}, nil)
	back := readBack(t, r.dir, archive.ReadOptions{})
	for name, fs := range r.direct {
		var recs []archive.RecordEvent
		for _, e := range r.events {
			if e.Track == name && !e.Gap {
				recs = append(recs, e)
			}
		}
		end := recs[len(recs)-1].End
		// The oldest record kept is the newest one whose removal would
		// leave less than the window.
		keep := 0
		for keep+1 < len(recs) && end-recs[keep+1].Start >= window.Microseconds() {
			keep++
		}
		if keep == 0 {
			t.Fatalf("%s: %d records, none out of the %v window: the test proves nothing", name, len(recs), window)
		}
		from := recs[keep].Start
		var want []got
		for _, f := range fs {
			if f.ts >= from {
				want = append(want, f)
			}
		}
		compare(t, "retained "+name, map[string][]got{name: want}, map[string][]got{name: back[name]})
		if first := back[name]; len(first) == 0 || end-first[0].ts < window.Microseconds() {
			t.Errorf("%s: what is kept does not span the %v window", name, window)
		}
	}
}

// The SIGKILL test runs a writer in a child process (this test binary
// again): it publishes the demo, archives it and prints the media time
// published; the parent kills it and reads what it left.
const writerEnv = "ARCHIVE_TEST_WRITER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(writerEnv); dir != "" {
		os.Exit(runWriter(dir))
	}
	os.Exit(m.Run())
}

func runWriter(dir string) int {
	ctx := context.Background()
	bc := model.NewBroadcast("demo")
	hold := make(chan struct{})
	go demo.Publish(ctx, bc, demo.Options{Renditions: []string{"h264", "aac"}, Realtime: true, Hold: hold})
	srv, url, pin, err := subscribe.ServeLoopback(bc, subscribe.ServerOptions{})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	defer srv.Close()
	sess, err := subscribe.Dial(ctx, url, subscribe.Options{TLSFingerprint: pin, Objects: true})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	st, _ := archive.Dir(dir)
	prefix, _ := archive.BroadcastPrefix("", "demo")
	src := sess.Broadcast("demo")
	go archive.Write(ctx, st, prefix, src, archive.WriteOptions{})
	for _, n := range []string{"h264", "aac"} {
		for bc.CreateTrack(n).Consumers() < 1 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	close(hold)
	// What the writer has received: the newest frame of each track of
	// the session it archives.
	for {
		time.Sleep(50 * time.Millisecond)
		received := int64(-1)
		for _, n := range []string{"h264", "aac"} {
			t, err := src.Track(n)
			if err != nil {
				continue
			}
			newest := int64(-1)
			if g := t.NewestGroup(); g != nil {
				if fs, _, _ := g.Frames(0); len(fs) > 0 {
					newest = fs[len(fs)-1].Timestamp
				}
			}
			if received < 0 || newest < received {
				received = newest
			}
		}
		if _, err := fmt.Println("received", received); err != nil {
			return 1 // the parent is gone
		}
	}
}

func TestAKilledWriterLeavesAllButItsLastSecondsReadable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := proctest.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), writerEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill() // a test that failed before its kill
		cmd.Wait()
	})
	// received is the media time both tracks reached at the writer.
	var received int64
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "received" {
			received, _ = strconv.ParseInt(f[1], 10, 64)
		}
		if received >= 6_500_000 {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if received < 6_500_000 {
		t.Fatalf("the writer stopped at %d µs before it was killed: %v", received, sc.Err())
	}
	back := readBack(t, dir, archive.ReadOptions{})
	for name, fs := range back {
		if len(fs) == 0 {
			t.Fatalf("%s: nothing readable after the kill", name)
		}
		// Records are cut at least 2 s long at group (1 s) ends: what
		// the kill loses is the open record, at most that.
		lost := received - fs[len(fs)-1].ts
		t.Logf("%s: %d frames readable, the last %.2f s before the kill lost", name, len(fs), float64(lost)/1e6)
		if lost > 3_300_000 {
			t.Errorf("%s: the last %.2f s before the kill are lost, want at most one open record (2 s + a group)", name, float64(lost)/1e6)
		}
		if fs[0].ts > 100_000 {
			t.Errorf("%s starts at %d µs: the start was lost", name, fs[0].ts)
		}
	}
}

// follow reads broadcast demo of the archive in dir with Follow as a
// writer adds to it, from its first catalog on, until stop is closed.
func follow(t *testing.T, dir string, stop <-chan struct{}, followedFrames *atomic.Int64) map[string][]got {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-stop
		cancel()
	}()
	st, err := archive.Dir(dir)
	if err != nil {
		t.Error(err)
		return nil
	}
	var rec *archive.Recording
	for rec == nil {
		if rec, err = archive.Open(st, "").Recording(ctx, "demo"); err != nil {
			rec = nil
			if ctx.Err() != nil {
				t.Error("no catalog was archived")
				return nil
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	b, err := rec.Broadcast(ctx, archive.ReadOptions{Follow: 100 * time.Millisecond})
	if err != nil {
		t.Error(err)
		return nil
	}
	w, err := catalog.Watch(b, catalog.WatchOptions{})
	if err != nil {
		t.Error(err)
		return nil
	}
	cat, err := w.Next(ctx)
	w.Close()
	if err != nil {
		t.Error(err)
		return nil
	}
	out := map[string][]got{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, r := range cat.Renditions() {
		tr, err := b.Track(r.Name)
		if err != nil {
			t.Error(err)
			return nil
		}
		c := tr.Subscribe(time.Minute)
		ready := model.NewReadySet()
		c.Watch(ready)
		wg.Go(func() {
			defer c.Close()
			var taken []*model.Consumer
			for {
				taken = ready.Take(taken[:0])
				ev, ok := c.Next()
				if !ok {
					<-ready.Wakeup()
					continue
				}
				switch ev.Kind {
				case model.EventFrame:
					mu.Lock()
					out[r.Name] = append(out[r.Name], got{ev.Frame.Timestamp, ev.Keyframe, ev.Group, ev.Frame.Payload})
					mu.Unlock()
					followedFrames.Add(1)
				case model.EventEnd:
					return
				}
			}
		})
	}
	wg.Wait()
	return out
}

func TestAFollowerReadsWhatAConcurrentWriterAdds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stop := make(chan struct{})
	followed := make(chan map[string][]got, 1)
	var followedFrames atomic.Int64
	go func() { followed <- follow(t, dir, stop, &followedFrames) }()
	r := archiveDemoIn(t, dir, catalog.ContainerLegacy, []string{"h264", "aac"})
	// The last records are committed when the broadcast ends; the
	// follower looks every 100 ms: it is stopped once it has read as many
	// frames as were published (or after 20 s).
	want := 0
	for _, fs := range r.direct {
		want += len(fs)
	}
	for deadline := time.Now().Add(20 * time.Second); followedFrames.Load() < int64(want) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	compare(t, "followed", r.direct, <-followed)
}
