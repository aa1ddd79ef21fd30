package record_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
)

func TestHLSNeedsAnOutputThatHoldsPackages(t *testing.T) {
	t.Parallel()
	if _, err := record.New(record.Options{Output: record.Stream(io.Discard), Format: record.HLS}); !errors.Is(err, record.ErrPackage) {
		t.Errorf("HLS to a Stream: %v, want ErrPackage", err)
	}
	out, err := record.Files(filepath.Join(t.TempDir(), "{broadcast}", "index.m3u8"), record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := record.New(record.Options{Output: out, Segment: time.Second}); !errors.Is(err, record.ErrPackage) {
		t.Errorf("HLS with Segment: %v, want ErrPackage", err)
	}
}

func TestHLSRecordsEveryRenditionIntoOnePackageDirectory(t *testing.T) {
	t.Parallel()
	bc := model.NewBroadcast("room/alice")
	var published atomic.Int64
	if err := demo.Publish(context.Background(), bc, demo.Options{Renditions: demo.Simulcast, Loops: 1, KeepGroups: 1 << 20, Published: &published}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, err := record.Files(filepath.Join(dir, "{broadcast}", "index.m3u8"), record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := record.New(record.Options{Output: out, Delay: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Record(context.Background(), record.Local(bc), "room/alice"); err != nil {
		t.Fatal(err)
	}
	files := rec.Files()
	pkg := filepath.Join(dir, "room_alice")
	if len(files) != 1 || files[0].Path != filepath.Join(pkg, "index.m3u8") || files[0].Format != "hls" || files[0].Frames != published.Load() {
		t.Fatalf("files %+v, want %s/index.m3u8 with %d frames", files, pkg, published.Load())
	}
	var size int64
	ents, _ := os.ReadDir(pkg)
	for _, e := range ents {
		fi, _ := e.Info()
		size += fi.Size()
	}
	if files[0].Size <= 0 || files[0].Size < size*9/10 {
		t.Errorf("FileInfo.Size %d, the package holds %d bytes", files[0].Size, size)
	}
	mediatest.DecodeClean(t, filepath.Join(pkg, "index.m3u8"))
	var packets int
	for _, id := range []string{"v0", "v1", "a0", "a1"} {
		packets += len(mediatest.Probe(t, filepath.Join(pkg, id+".m3u8")).Packets)
	}
	if int64(packets) != published.Load() {
		t.Errorf("the media playlists hold %d packets, %d frames were published", packets, published.Load())
	}
}
