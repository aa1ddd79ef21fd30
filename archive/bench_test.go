package archive_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/varint"

	"github.com/moq-export/moq-export/archive"
	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
)

// synth is a track an in-process publisher of objects loops: hang
// legacy objects (varint timestamp + codec payload), a group per keyframe.
type synth struct {
	name   string
	frames []samples.SampleFrame // one loop, in decode order
	period int64                 // µs per loop
}

func sampleSynth(t testing.TB, name, sample string) synth {
	s, err := samples.LoadSample(sample)
	if err != nil {
		t.Fatal(err)
	}
	return synth{name: name, frames: s.Frames, period: s.Duration()}
}

// publishObjects fills b with dur of the tracks' media, as objects, and
// the catalog cat, as fast as the archive writer reads it; then ends b.
func publishObjects(t testing.TB, b *model.Broadcast, cat []byte, tracks []synth, dur time.Duration) {
	ct := b.CreateTrack(catalog.TrackName)
	g, _ := ct.AppendGroup()
	g.WriteFrame(model.Frame{Payload: cat})
	g.Close(nil)
	type state struct {
		t       *model.Track
		g       *model.Group
		i       int
		loop    int64
		drained chan struct{}
	}
	st := make([]*state, len(tracks))
	for i, tr := range tracks {
		s := &state{t: b.CreateTrack(tr.name), drained: make(chan struct{}, 1)}
		s.t.SetKeepGroups(1 << 20)
		s.t.HandleDrained(func() {
			select {
			case s.drained <- struct{}{}:
			default:
			}
		})
		st[i] = s
	}
	for _, s := range st {
		for s.t.Consumers() == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	end := dur.Microseconds()
	for now := int64(0); now < end; {
		now += 2_000_000 // well inside model.MaxLag of what the writer read
		for k, s := range st {
			tr := tracks[k]
			for {
				f := tr.frames[s.i]
				ts := s.loop*tr.period + f.Timestamp
				if ts >= now || ts >= end {
					break
				}
				if f.Keyframe || s.g == nil {
					if s.g != nil {
						s.g.Close(nil)
					}
					s.g, _ = s.t.AppendGroup()
				}
				payload := append(varint.Append(make([]byte, 0, 8+len(f.Payload)), uint64(ts)), f.Payload...)
				s.g.WriteFrame(model.Frame{Timestamp: ts, Payload: payload})
				if s.i++; s.i == len(tr.frames) {
					s.i, s.loop = 0, s.loop+1
				}
			}
		}
		for _, s := range st {
			for !s.t.Drained() {
				select {
				case <-s.drained:
				case <-time.After(10 * time.Millisecond):
				}
			}
		}
	}
	for _, s := range st {
		if s.g != nil {
			s.g.Close(nil)
		}
	}
	b.Close(nil)
}

// memStore is a Store in memory, for archives too large to sync to disk
// object by object in a benchmark's setup.
type memStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *memStore) Put(_ context.Context, k string, b []byte) error {
	s.mu.Lock()
	s.m[k] = b
	s.mu.Unlock()
	return nil
}

func (s *memStore) Get(_ context.Context, k string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[k]
	if !ok {
		return nil, fmt.Errorf("%s: %w", k, os.ErrNotExist)
	}
	return b, nil
}

func (s *memStore) List(_ context.Context, prefix string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for k := range s.m {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

func (s *memStore) Delete(_ context.Context, k string) error {
	s.mu.Lock()
	delete(s.m, k)
	s.mu.Unlock()
	return nil
}

// dump writes the store's objects as files of a Dir archive (no syncs).
func (s *memStore) dump(t testing.TB, dir string) {
	for k, b := range s.m {
		p := filepath.Join(dir, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// buildArchive archives dur of tracks (catalog cat) into dir.
func buildArchive(t testing.TB, dir string, cat []byte, tracks []synth, dur time.Duration) {
	st := &memStore{m: map[string][]byte{}}
	b := model.NewBroadcast("demo")
	prefix, _ := archive.BroadcastPrefix("", "demo")
	done := make(chan error, 1)
	go func() { done <- archive.Write(context.Background(), st, prefix, b, archive.WriteOptions{}) }()
	publishObjects(t, b, cat, tracks, dur)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st.dump(t, dir)
}

// hourCatalog is the demo's H.264 as three renditions, and its AAC.
func hourCatalog(t testing.TB) []byte {
	c, err := demo.Catalog([]string{"h264", "aac"})
	if err != nil {
		t.Fatal(err)
	}
	v := c.Video.Renditions["h264"]
	delete(c.Video.Renditions, "h264")
	for _, n := range []string{"v0", "v1", "v2"} {
		c.Video.Renditions[n] = v
	}
	b, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var hour struct {
	once sync.Once
	dir  string
	mkv  string // the same media, one rendition, as ffmpeg's input
}

// hourArchive is an hour of three H.264 renditions and AAC, archived once
// per benchmark run.
func hourArchive(b *testing.B) (dir, mkv string) {
	hour.once.Do(func() {
		// ARCHIVE_BENCH_DIR keeps the hour between runs (profiling).
		if d := os.Getenv("ARCHIVE_BENCH_DIR"); d != "" {
			hour.dir, hour.mkv = d, filepath.Join(d, "v0.mkv")
			if _, err := os.Stat(hour.mkv); err == nil {
				return
			}
		} else {
			hour.dir, _ = os.MkdirTemp("", "archive-hour-")
		}
		tracks := []synth{sampleSynth(b, "v0", "h264"), sampleSynth(b, "v1", "h264"), sampleSynth(b, "v2", "h264"), sampleSynth(b, "aac", "aac")}
		buildArchive(b, hour.dir, hourCatalog(b), tracks, time.Hour)
		hour.mkv = filepath.Join(hour.dir, "v0.mkv")
		exportTo(b, hour.dir, hour.mkv, []string{"v0"}, archive.Time{}, archive.Time{})
	})
	return hour.dir, hour.mkv
}

// exportTo records rendition(s) video of the archive's demo (from, to)
// into path, audio aside.
func exportTo(t testing.TB, dir, path string, video []string, from, to archive.Time) archive.ReadStats {
	st, err := archive.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := archive.Open(st, "")
	src := record.NewArchiveSource(a, record.ArchiveSourceOptions{From: from, To: to})
	defer src.Close()
	os.Remove(path)
	out, err := record.Files(path, record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := record.New(record.Options{Output: out, Video: video, Audio: []string{}, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Record(context.Background(), src, "demo"); err != nil {
		t.Fatal(err)
	}
	return a.Stats()
}

// BenchmarkExportAnHourOfOneRenditionToMP4 exports one of the three
// renditions of an hour-long archive into MP4, and times `ffmpeg -c copy`
// remuxing the same media (an MKV of it) into MP4 right after each export,
// so that both see the same load: x-ffmpeg-copy is ffmpeg's total time
// over ours, x-min, x-median and x-max those of the pairs' ratios.
//
// The collector runs at GOGC 100 over a 64 MB heap floor, as the command
// sets it for an archive export (internal/cli batchGC), unless GOGC is
// set.
func BenchmarkExportAnHourOfOneRenditionToMP4(b *testing.B) {
	mediatest.RequireTools(b, "ffmpeg")
	dir, mkv := hourArchive(b)
	if _, set := os.LookupEnv("GOGC"); !set {
		defer debug.SetGCPercent(debug.SetGCPercent(100))
		floor := make([]byte, 64<<20)
		defer runtime.KeepAlive(floor)
	}
	out := filepath.Join(dir, "out.mp4")
	ff := filepath.Join(dir, "ffmpeg.mp4")
	b.ResetTimer()
	var st archive.ReadStats
	var ours, theirs, ourCPU, theirCPU time.Duration
	var ratios []float64
	for range b.N {
		// Each run writes a new file, as ffmpeg does: deleting the last
		// run's output (7-10 ms for 110 MB on ext4, which ffmpeg's -y
		// would pay truncating it) is timed for neither.
		b.StopTimer()
		os.Remove(out)
		os.Remove(ff)
		b.StartTimer()
		start, cpu := time.Now(), processCPU()
		st = exportTo(b, dir, out, []string{"v0"}, archive.Time{}, archive.Time{})
		d := time.Since(start)
		ourCPU += processCPU() - cpu
		b.StopTimer()
		start = time.Now()
		cmd := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-y", "-i", mkv, "-c", "copy", ff)
		if o, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("ffmpeg: %v %s", err, o)
		}
		fd := time.Since(start)
		theirCPU += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		b.StartTimer()
		ours, theirs = ours+d, theirs+fd
		ratios = append(ratios, fd.Seconds()/d.Seconds())
	}
	b.StopTimer()
	slices.Sort(ratios)
	b.ReportMetric(theirs.Seconds()/ours.Seconds(), "x-ffmpeg-copy")
	b.ReportMetric(ratios[0], "x-min")
	b.ReportMetric(ratios[len(ratios)/2], "x-median")
	b.ReportMetric(ratios[len(ratios)-1], "x-max")
	b.ReportMetric(theirs.Seconds()/float64(b.N), "s-ffmpeg")
	// CPU time (user + system), which the load moves less than the wall.
	b.ReportMetric(ourCPU.Seconds()/float64(b.N), "cpu-s")
	b.ReportMetric(theirCPU.Seconds()/float64(b.N), "cpu-s-ffmpeg")
	b.ReportMetric(float64(st.Gets), "gets")
	fi, _ := os.Stat(out)
	b.ReportMetric(float64(fi.Size())/1e6, "MB-out")
}

// BenchmarkCutFiveMinutesOfADayLongArchive reads 12:00:00-12:05:00 of a
// 24-hour archive (small frames: the cost is the index, not the media) and
// reports the objects read.
func BenchmarkCutFiveMinutesOfADayLongArchive(b *testing.B) {
	// ARCHIVE_BENCH_DAY_DIR keeps the day between runs.
	dir := os.Getenv("ARCHIVE_BENCH_DAY_DIR")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "archive-day-"); err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(dir)
	}
	// 10 fps, a keyframe every 2 s, 100-byte frames.
	var frames []samples.SampleFrame
	for i := range 20 {
		frames = append(frames, samples.SampleFrame{Timestamp: int64(i) * 100_000, Keyframe: i == 0, Payload: make([]byte, 100)})
	}
	cat := []byte(`{"video":{"renditions":{"v":{"codec":"avc1.64001f","codedWidth":64,"codedHeight":64}}}}`)
	if _, err := os.Stat(filepath.Join(dir, "demo")); err != nil {
		buildArchive(b, dir, cat, []synth{{name: "v", frames: frames, period: 2_000_000}}, 24*time.Hour)
	}
	st, err := archive.Dir(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var stats archive.ReadStats
	var n int
	for range b.N {
		a := archive.Open(st, "")
		rec, err := a.Recording(context.Background(), "demo")
		if err != nil {
			b.Fatal(err)
		}
		bc, err := rec.Broadcast(context.Background(), archive.ReadOptions{From: (12 * time.Hour).Microseconds(), To: (12*time.Hour + 5*time.Minute).Microseconds()})
		if err != nil {
			b.Fatal(err)
		}
		n = len(collect(context.Background(), b, bc)["v"])
		stats = a.Stats()
	}
	b.ReportMetric(float64(stats.Gets), "gets")
	b.ReportMetric(float64(stats.Lists), "lists")
	b.ReportMetric(float64(n), "frames")
}

// processCPU is the CPU time this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// BenchmarkReadAnHourOfOneRendition is the archive side of the hour's
// export alone: one of the three renditions read into a model broadcast
// (timeline and segment objects read and parsed, frames unpacked and
// written to the model) and taken by one consumer, with nothing muxed.
// It reports per frame the time, the CPU (user + system, all goroutines)
// and the allocations.
func BenchmarkReadAnHourOfOneRendition(b *testing.B) {
	dir, _ := hourArchive(b)
	st, err := archive.Dir(dir)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var frames int
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu := processCPU()
	b.ResetTimer()
	for range b.N {
		rec, err := archive.Open(st, "").Recording(ctx, "demo")
		if err != nil {
			b.Fatal(err)
		}
		bc, err := rec.Broadcast(ctx, archive.ReadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		frames = countFrames(ctx, b, bc, "v0")
	}
	b.StopTimer()
	cpu = processCPU() - cpu
	runtime.ReadMemStats(&ms1)
	n := float64(b.N) * float64(frames)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/frame")
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/frame")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/n, "allocs/frame")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/n, "B/frame")
	b.ReportMetric(float64(frames), "frames")
}

// countFrames takes every frame of track name of b until it ends, and
// returns how many there were.
func countFrames(ctx context.Context, t testing.TB, b *model.Broadcast, name string) int {
	tr, err := b.Track(name)
	if err != nil {
		t.Fatal(err)
	}
	c := tr.Subscribe(time.Minute)
	defer c.Close()
	b.Selected()
	n, end, ok := readFrames(ctx, c)
	if !ok {
		t.Fatal(ctx.Err())
	}
	if end != nil {
		t.Fatal(end)
	}
	return n
}

// readFrames takes every frame of c until it ends, and returns how many
// there were and the end's error; ended is false when ctx ended first.
func readFrames(ctx context.Context, c *model.Consumer) (frames int, end error, ended bool) {
	ready := model.NewReadySet()
	c.Watch(ready)
	var taken []*model.Consumer
	for {
		taken = ready.Take(taken[:0])
		ev, ok := c.Next()
		if !ok {
			select {
			case <-ready.Wakeup():
				continue
			case <-ctx.Done():
				return frames, nil, false
			}
		}
		switch ev.Kind {
		case model.EventFrame:
			frames++
		case model.EventEnd:
			return frames, ev.Err, true
		}
	}
}
