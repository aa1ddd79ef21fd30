package archive_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/archive"
	"github.com/moq-export/moq-export/archive/internal/layout"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/archivetest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
)

// synthArchive archives dur of the H.264 and AAC samples as tracks "v"
// and "a" into a new directory, fast (no real time), and returns it with
// the number of records of "v".
func synthArchive(t *testing.T, dur time.Duration) (string, int) {
	t.Helper()
	dir := t.TempDir()
	c, err := demo.Catalog([]string{"h264", "aac"})
	if err != nil {
		t.Fatal(err)
	}
	c.Video.Renditions["v"], c.Audio.Renditions["a"] = c.Video.Renditions["h264"], c.Audio.Renditions["aac"]
	delete(c.Video.Renditions, "h264")
	delete(c.Audio.Renditions, "aac")
	cat, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	buildArchive(t, dir, cat, []synth{sampleSynth(t, "v", "h264"), sampleSynth(t, "a", "aac")}, dur)
	ents, err := os.ReadDir(filepath.Join(dir, "demo", "v", "segments"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, len(ents)
}

// readWatched reads the whole of the archive in dir and returns the
// frames and the keys read.
func readWatched(t *testing.T, dir string) (map[string][]got, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st := &watched{Store: archivetest.Dir(t, dir)}
	frames := collect(ctx, t, archivetest.Broadcast(t, ctx, st, "demo", archive.ReadOptions{}))
	st.mu.Lock()
	defer st.mu.Unlock()
	return frames, append([]string(nil), st.gets...)
}

// TestAWholeTrackIsReadWithoutATimelineObjectPerRecord: reading a track
// from its start takes each segment object once and its timeline only to
// find the first and last records (a few probes), not a timeline object
// per record: the segments that continue each other need no record to
// check them against.
func TestAWholeTrackIsReadWithoutATimelineObjectPerRecord(t *testing.T) {
	t.Parallel()
	dir, records := synthArchive(t, 3*time.Minute)
	if records < 40 {
		t.Fatalf("%d records of v: the test proves nothing", records)
	}
	_, gets := readWatched(t, dir)
	seen := map[string]int{}
	timeline := 0
	for _, k := range gets {
		seen[k]++
		if strings.HasPrefix(k, "demo/v%2Etimeline%2Ez/") {
			timeline++
		}
	}
	for i := range records {
		if k := layout.SegmentKey("demo", "v", uint64(i)); seen[k] != 1 {
			t.Errorf("%s read %d times, want once", k, seen[k])
		}
	}
	// Record 0, the doubling probes and the bisection for the last: about
	// 2 log2(records) objects.
	if limit := 2*bitLen(records) + 2; timeline > limit {
		t.Errorf("read %d timeline objects of v for %d records, want at most %d", timeline, records, limit)
	}
	t.Logf("%d records of v: %d timeline objects read", records, timeline)
}

func bitLen(n int) int {
	b := 0
	for ; n > 0; n >>= 1 {
		b++
	}
	return b
}

// TestASegmentThatDoesNotContinueItsPredecessorIsCheckedAgainstItsRecord:
// a segment read without its timeline record is taken only when it starts
// where the one before ended. A missing one, or one holding another
// record's frames (a valid object in the wrong place), is looked up in
// the timeline: a gap of that record's frames, the rest intact, never
// frames twice.
func TestASegmentThatDoesNotContinueItsPredecessorIsCheckedAgainstItsRecord(t *testing.T) {
	t.Parallel()
	dir, records := synthArchive(t, time.Minute)
	if records < 10 {
		t.Fatalf("%d records of v: the test proves nothing", records)
	}
	whole, _ := readWatched(t, dir)
	seg := func(i int) string {
		return filepath.Join(dir, filepath.FromSlash(layout.SegmentKey("demo", "v", uint64(i))))
	}
	framesOf := func(i int) []int64 {
		b, err := os.ReadFile(seg(i))
		if err != nil {
			t.Fatal(err)
		}
		s, err := layout.ParseSegment(b)
		if err != nil {
			t.Fatal(err)
		}
		var ts []int64
		for _, g := range s.Groups {
			for _, f := range g.Frames {
				ts = append(ts, int64(f.Timestamp))
			}
		}
		return ts
	}
	for _, c := range []struct {
		name  string
		spoil func(i int)
	}{
		{"missing", func(i int) {
			if err := os.Remove(seg(i)); err != nil {
				t.Fatal(err)
			}
		}},
		{"another record's", func(i int) {
			b, err := os.ReadFile(seg(i + 2))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(seg(i)); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(seg(i), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			const i = 4
			lost := map[int64]bool{}
			for _, ts := range framesOf(i) {
				lost[ts] = true
			}
			restore, err := os.ReadFile(seg(i))
			if err != nil {
				t.Fatal(err)
			}
			c.spoil(i)
			back, _ := readWatched(t, dir)
			os.Remove(seg(i))
			if err := os.WriteFile(seg(i), restore, 0o644); err != nil {
				t.Fatal(err)
			}
			var want []got
			for _, f := range whole["v"] {
				if !lost[f.ts] {
					want = append(want, f)
				}
			}
			if len(want) == len(whole["v"]) {
				t.Fatal("record 4 holds no frame of the reading: the test proves nothing")
			}
			// The records hold whole groups (a keyframe each 2 s): what
			// follows the gap starts a group.
			compare(t, c.name, map[string][]got{"v": want, "a": whole["a"]}, back)
		})
	}
}

// TestAnUnpacedReadKeepsItsReadersPartsAheadButNoMore: the reader
// writes a track part by part, ahead of its readers by FeedAhead parts,
// not by the one after theirs: a reader that took only the first frame
// finds the track written FeedAhead parts on (so that the export reading
// never waits for the next part to be woken and written), but not more
// than a part beyond (so a reader holds what it did before at most,
// well inside model.MaxLag).
func TestAnUnpacedReadKeepsItsReadersPartsAheadButNoMore(t *testing.T) {
	t.Parallel()
	dir, _ := synthArchive(t, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := archivetest.Broadcast(t, ctx, archivetest.Dir(t, dir), "demo", archive.ReadOptions{})
	defer b.Close(nil)
	tr, err := b.Track("v")
	if err != nil {
		t.Fatal(err)
	}
	c := tr.Subscribe(time.Minute)
	defer c.Close()
	b.Selected()
	for {
		if ev, ok := c.Next(); ok {
			if ev.Kind != model.EventFrame {
				t.Fatalf("first event %+v", ev)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("no first frame")
		case <-time.After(time.Millisecond):
		}
	}
	part := archive.FeedStep.Microseconds()
	ahead := archive.FeedAhead * part
	for tr.State().NewestTimestamp < ahead {
		select {
		case <-ctx.Done():
			t.Fatalf("the track holds frames up to %d µs while its reader is in the first part: the parts up to %d µs were never written", tr.State().NewestTimestamp, ahead)
		case <-time.After(time.Millisecond):
		}
	}
	// Let a writer that would not stop there go on.
	time.Sleep(50 * time.Millisecond)
	if n, most := tr.State().NewestTimestamp, ahead+part; n >= most {
		t.Errorf("the track holds frames up to %d µs while its reader is in the first part: more than %d parts of %d µs", n, archive.FeedAhead+1, part)
	}
	if d := archive.FeedAhead*archive.FeedStep + archive.FeedStep; d > model.MaxLag*3/4 {
		t.Errorf("a reader may hold %v unread, too near model.MaxLag (%v)", d, model.MaxLag)
	}
}

// TestAVideoAndAudioExportOfAnArchiveWritesEveryFrame: the reader writes
// the tracks part by part, ahead of the export, each part in slices
// track after track; the export of both (MKV, the recorder's delay
// options as the command's) takes every frame of the archive, none late.
func TestAVideoAndAudioExportOfAnArchiveWritesEveryFrame(t *testing.T) {
	t.Parallel()
	dir, _ := synthArchive(t, 30*time.Second)
	whole, _ := readWatched(t, dir)
	st, err := archive.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := record.NewArchiveSource(archive.Open(st, ""), record.ArchiveSourceOptions{})
	defer src.Close()
	out, err := record.Files(filepath.Join(t.TempDir(), "out.mkv"), record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := record.New(record.Options{Output: out, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Record(context.Background(), src, "demo"); err != nil {
		t.Fatal(err)
	}
	s := rec.Stats()
	if want := int64(len(whole["v"]) + len(whole["a"])); s.Frames != want || s.Late != 0 || s.Dropped != 0 {
		t.Errorf("wrote %d frames (late %d, dropped %d), want all %d of the archive", s.Frames, s.Late, s.Dropped, want)
	}
}

// inFlight is a Store that counts the segment objects of one track being
// read at once: each such read waits (up to a bound) for others to join
// it, so that reads issued together are seen together.
type inFlight struct {
	archive.Store
	prefix string
	mu     sync.Mutex
	cond   *sync.Cond
	now    int
	most   int
	waits  int
}

func (s *inFlight) Get(ctx context.Context, key string) ([]byte, error) {
	if !strings.HasPrefix(key, s.prefix) {
		return s.Store.Get(ctx, key)
	}
	s.mu.Lock()
	s.now++
	s.most = max(s.most, s.now)
	s.cond.Broadcast()
	if s.waits < 40 {
		// Wait a moment for the reads issued beside this one.
		s.waits++
		deadline := time.Now().Add(50 * time.Millisecond)
		t := time.AfterFunc(50*time.Millisecond, func() {
			s.mu.Lock()
			s.cond.Broadcast()
			s.mu.Unlock()
		})
		for s.now < 4 && time.Now().Before(deadline) {
			s.cond.Wait()
		}
		t.Stop()
	}
	s.mu.Unlock()
	b, err := s.Store.Get(ctx, key)
	s.mu.Lock()
	s.now--
	s.mu.Unlock()
	return b, err
}

// TestAWholeTrackIsReadSeveralSegmentsAhead: reading a track from its
// start to its end (no To) keeps several segment objects in flight while
// the records before them are unpacked, not one after the other.
func TestAWholeTrackIsReadSeveralSegmentsAhead(t *testing.T) {
	t.Parallel()
	dir, records := synthArchive(t, 2*time.Minute)
	if records < 20 {
		t.Fatalf("%d records of v: the test proves nothing", records)
	}
	st := &inFlight{Store: archivetest.Dir(t, dir), prefix: "demo/v/segments/"}
	st.cond = sync.NewCond(&st.mu)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := archivetest.Broadcast(t, ctx, st, "demo", archive.ReadOptions{})
	frames := collect(ctx, t, b)
	if len(frames["v"]) == 0 {
		t.Fatal("no frame of v read")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.most < 2 {
		t.Errorf("at most %d segment object of v read at once, want several", st.most)
	}
	t.Logf("%d records of v: at most %d segment objects read at once", records, st.most)
}

// fetchers counts the goroutines that read objects under prefix.
type fetchers struct {
	archive.Store
	prefix string
	mu     sync.Mutex
	ids    map[string]bool
	gets   int
}

func (s *fetchers) Get(ctx context.Context, key string) ([]byte, error) {
	if strings.HasPrefix(key, s.prefix) {
		var b [64]byte
		id, _, _ := strings.Cut(strings.TrimPrefix(string(b[:runtime.Stack(b[:], false)]), "goroutine "), " ")
		s.mu.Lock()
		s.ids[id] = true
		s.gets++
		s.mu.Unlock()
	}
	return s.Store.Get(ctx, key)
}

// TestAWholeTrackIsFetchedByAFewGoroutinesThatEndWithTheRead: the
// read-ahead of a whole track runs its fetches on a few goroutines that
// live as long as the read, not on a goroutine per record (each one
// started, its stack grown and a thread woken for it), and none of them
// is left once the read ended. Not parallel: it looks at every goroutine.
func TestAWholeTrackIsFetchedByAFewGoroutinesThatEndWithTheRead(t *testing.T) {
	dir, records := synthArchive(t, 3*time.Minute)
	if records < 40 {
		t.Fatalf("%d records of v: the test proves nothing", records)
	}
	st := &fetchers{Store: archivetest.Dir(t, dir), prefix: "demo/v/segments/", ids: map[string]bool{}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := archivetest.Broadcast(t, ctx, st, "demo", archive.ReadOptions{})
	if len(collect(ctx, t, b)["v"]) == 0 {
		t.Fatal("no frame of v read")
	}
	st.mu.Lock()
	gets, ids := st.gets, len(st.ids)
	st.mu.Unlock()
	// Four fetchers, the fetches started before they run and the
	// reader's own first fetch.
	if ids > 10 {
		t.Errorf("%d segment objects of v read by %d goroutines, want a few", gets, ids)
	}
	t.Logf("%d records of v: %d segment objects read by %d goroutines", records, gets, ids)
	for deadline := time.Now().Add(10 * time.Second); ; {
		buf := make([]byte, 1<<20)
		all := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(all, "frameIter).fetcher") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a fetcher is left 10 s after the read ended:\n%s", all)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAnArchiveReadWholeIsUnpacedAndAReplayIsNot: the broadcast of a read
// written as fast as it is taken says so (model.Broadcast.Unpaced), so
// that the export waits a moment for its next part instead of parking;
// a replay in real time does not.
func TestAnArchiveReadWholeIsUnpacedAndAReplayIsNot(t *testing.T) {
	t.Parallel()
	dir, _ := synthArchive(t, 10*time.Second)
	for _, tc := range []struct {
		name string
		pace bool
		want bool
	}{
		{name: "read whole", want: true},
		{name: "replayed in real time", pace: true, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b := archivetest.Broadcast(t, ctx, archivetest.Dir(t, dir), "demo", archive.ReadOptions{Pace: tc.pace})
			defer b.Close(nil)
			if got := b.Unpaced(); got != tc.want {
				t.Errorf("Unpaced() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAnUnpacedReaderLingersForItsReadersSignalOnlyWhileItIsNotThere: the
// reader waits a moment for its readers' signal before it sleeps on it:
// it goes on at once when the signal is there, and gives up after
// LingerWait when none comes.
func TestAnUnpacedReaderLingersForItsReadersSignalOnlyWhileItIsNotThere(t *testing.T) {
	for _, tc := range []struct {
		name   string
		signal bool
	}{
		{name: "the signal is there", signal: true},
		{name: "no signal comes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := make(chan struct{}, 1)
			if tc.signal {
				c <- struct{}{}
			}
			start := time.Now()
			if got := archive.LingerSignal(c); got != tc.signal {
				t.Fatalf("LingerSignal() = %v, want %v", got, tc.signal)
			}
			if d := time.Since(start); !tc.signal && d < archive.LingerWait {
				t.Errorf("gave up after %v, want at least %v", d, archive.LingerWait)
			}
			if tc.signal && len(c) != 0 {
				t.Error("the signal was not taken")
			}
		})
	}
}
