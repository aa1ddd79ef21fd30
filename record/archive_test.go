package record_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/archive"
	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
)

// archiveAndRecord publishes the demo (renditions, one loop, real time)
// on loopback QUIC and, in the same run, archives it into dir through one
// session and records it into direct through another.
func archiveAndRecord(t *testing.T, renditions []string, dir, direct string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bc := model.NewBroadcast("demo")
	hold := make(chan struct{})
	go demo.Publish(ctx, bc, demo.Options{Renditions: renditions, Loops: 1, Realtime: true, Hold: hold})
	srv, url, pin, err := subscribe.ServeLoopback(bc, subscribe.ServerOptions{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	st, err := archive.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	file, err := record.Files(direct, record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	for _, out := range []record.Output{record.ArchiveOutput(st, record.ArchiveOptions{}), file} {
		go func() {
			_, err := record.Run(ctx, record.Options{URL: url, Dial: subscribe.Options{TLSFingerprint: pin, Logger: quiet()},
				Broadcast: "demo", Output: out, Logger: quiet()})
			done <- err
		}()
	}
	cat, _ := demo.CatalogIn(renditions, catalog.ContainerLegacy)
	for _, r := range cat.Renditions() {
		for bc.CreateTrack(r.Name).Consumers() < 2 {
			if ctx.Err() != nil {
				t.Fatal("the recorders did not subscribe")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	close(hold)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// exportArchive records broadcast demo of the archive in dir into path.
func exportArchive(t *testing.T, dir, path string, o record.ArchiveSourceOptions, keep bool) archive.ReadStats {
	t.Helper()
	st, err := archive.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := archive.Open(st, "")
	src := record.NewArchiveSource(a, o)
	defer src.Close()
	out, err := record.Files(path, record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := record.New(record.Options{Output: out, KeepTimestamps: keep, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := rec.Record(ctx, src, "demo"); err != nil {
		t.Fatal(err)
	}
	return a.Stats()
}

// framemd5 is ffmpeg's per-packet listing (stream, dts, pts, duration,
// size, md5 of the bytes) of every stream of path.
func framemd5(t *testing.T, path string) []string {
	t.Helper()
	out, _ := mediatest.Run(t, "ffmpeg", "-nostdin", "-v", "error", "-i", path, "-map", "0", "-c", "copy", "-f", "framemd5", "-")
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines
}

func TestAnArchiveExportsTheSameFileAsADirectRecordingOfTheRun(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	direct := filepath.Join(dir, "direct.mkv")
	archiveAndRecord(t, []string{"h264", "h265", "aac"}, filepath.Join(dir, "archive"), direct)
	back := filepath.Join(dir, "back.mkv")
	exportArchive(t, filepath.Join(dir, "archive"), back, record.ArchiveSourceOptions{}, false)
	want, got := framemd5(t, direct), framemd5(t, back)
	if len(want) < 300 {
		t.Fatalf("the direct recording holds %d packets: the run went wrong", len(want))
	}
	if len(got) != len(want) {
		t.Errorf("%d packets from the archive, %d recorded directly", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("packet %d differs:\narchive %s\ndirect  %s", i, got[i], want[i])
		}
	}
	mediatest.DecodeClean(t, back)
}

func TestARangeExportStartsAtTheKeyframeBeforeFromAndEndsAtTo(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	archiveAndRecord(t, []string{"h264", "aac"}, filepath.Join(dir, "archive"), filepath.Join(dir, "direct.mkv"))
	// The demo's H.264 has a keyframe every second. MKV keeps the
	// broadcast's timestamps as they are (MP4 starts its timeline at 0).
	clip := filepath.Join(dir, "clip.mkv")
	rng := record.ArchiveSourceOptions{From: archive.Time{Media: 1500 * time.Millisecond}, To: archive.Time{Media: 3200 * time.Millisecond}}
	exportArchive(t, filepath.Join(dir, "archive"), clip, rng, true)
	mp4 := filepath.Join(dir, "clip.mp4")
	exportArchive(t, filepath.Join(dir, "archive"), mp4, rng, false)
	mediatest.DecodeClean(t, mp4)
	if d, err := mediatest.Probe(t, mp4).Format.Seconds(); err != nil || d < 2.1 || d > 2.3 {
		t.Errorf("the MP4 lasts %v s (%v), want 2.2 s: from the keyframe at 1 s to 3.2 s", d, err)
	}
	out, _ := mediatest.Run(t, "ffprobe", "-v", "error", "-show_entries", "packet=codec_type,pts_time,flags", "-of", "csv=p=0", clip)
	first := map[string]float64{}
	last := map[string]float64{}
	var firstFlags string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(l, ",")
		if len(f) < 3 {
			continue
		}
		ts, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			t.Fatalf("packet %q", l)
		}
		if _, ok := first[f[0]]; !ok {
			first[f[0]] = ts
			if f[0] == "video" {
				firstFlags = f[2]
			}
		}
		first[f[0]] = min(first[f[0]], ts)
		last[f[0]] = max(last[f[0]], ts)
	}
	if v := first["video"]; v < 0.99 || v > 1.01 || !strings.HasPrefix(firstFlags, "K") {
		t.Errorf("video starts at %.3f s (flags %s), want the keyframe at 1 s, before --from 1.5 s", v, firstFlags)
	}
	if a := first["audio"]; a < first["video"]-0.001 || a > first["video"]+0.05 {
		t.Errorf("audio starts at %.3f s, want it aligned with the video's %.3f s", a, first["video"])
	}
	for kind, l := range last {
		// Before --to (MKV rounds to the millisecond: 3.1999 s reads 3.200).
		if l > 3.2 || l < 3.1 {
			t.Errorf("%s ends at %.3f s, want just before --to 3.2 s", kind, l)
		}
	}
	mediatest.DecodeClean(t, clip)
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestAReplayRecordedBackEqualsTheArchive(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	arch := filepath.Join(dir, "archive")
	archiveAndRecord(t, []string{"h264", "aac"}, arch, filepath.Join(dir, "direct.mkv"))
	whole := filepath.Join(dir, "whole.mkv")
	exportArchive(t, arch, whole, record.ArchiveSourceOptions{}, false)

	// The archive replayed in real time on loopback QUIC, recorded back
	// by a subscriber as from any publisher.
	st, err := archive.Dir(arch)
	if err != nil {
		t.Fatal(err)
	}
	src := record.NewArchiveSource(archive.Open(st, ""), record.ArchiveSourceOptions{Pace: true})
	defer src.Close()
	bc := src.Broadcast("demo")
	srv, url, pin, err := subscribe.ServeLoopback(bc, subscribe.ServerOptions{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	replayed := filepath.Join(dir, "replayed.mkv")
	out, err := record.Files(replayed, record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	if _, err := record.Run(ctx, record.Options{URL: url, Dial: subscribe.Options{TLSFingerprint: pin, Logger: quiet()},
		Broadcast: "demo", Output: out, Logger: quiet()}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 3*time.Second {
		t.Errorf("the replay of 4 s of media took %v: not paced in real time", took)
	}
	want, got := framemd5(t, whole), framemd5(t, replayed)
	if len(want) < 250 || len(got) != len(want) {
		t.Fatalf("%d packets replayed, %d in the archive", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("packet %d differs:\nreplayed %s\narchive  %s", i, got[i], want[i])
		}
	}
	mediatest.DecodeClean(t, replayed)
}
