package objstore_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/archive"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/internal/testutil/s3test"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/objstore"
	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
)

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

// TestAnArchiveInABucketExportsWhatWasRecordedDirectly: the demo archived
// into a real S3 server (through ArchiveStore) and, in the same run,
// recorded into a file; the archive read back from the bucket exports the
// same packets.
func TestAnArchiveInABucketExportsWhatWasRecordedDirectly(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg")
	s := s3test.Start(t)
	s.Bucket(t, "rec")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := objstore.ArchiveStore(ctx, "s3://rec/arch?endpoint="+s.Endpoint, nil)
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	bc := model.NewBroadcast("room/alice")
	hold := make(chan struct{})
	go demo.Publish(ctx, bc, demo.Options{Loops: 1, Realtime: true, Hold: hold})
	srv, url, pin, err := subscribe.ServeLoopback(bc, subscribe.ServerOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	direct := filepath.Join(dir, "direct.mkv")
	file, err := record.Files(direct, record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	for _, out := range []record.Output{record.ArchiveOutput(st, record.ArchiveOptions{}), file} {
		go func() {
			_, err := record.Run(ctx, record.Options{URL: url, Dial: subscribe.Options{TLSFingerprint: pin, Logger: quiet},
				Broadcast: "room/alice", Output: out, Logger: quiet})
			done <- err
		}()
	}
	for _, n := range demo.DefaultRenditions {
		for bc.CreateTrack(n).Consumers() < 2 {
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
	// The objects are in the bucket under the prefix.
	if b := s.Object(t, "rec", "arch/room/alice/h264/.info"); !strings.Contains(string(b), `"version":2`) {
		t.Errorf("h264's .info in the bucket: %s", b)
	}
	back := filepath.Join(dir, "back.mkv")
	out, err := record.Files(back, record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := record.New(record.Options{Output: out, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	src := record.NewArchiveSource(archive.Open(st, ""), record.ArchiveSourceOptions{})
	defer src.Close()
	if err := rec.Record(ctx, src, "room/alice"); err != nil {
		t.Fatal(err)
	}
	want, got := framemd5(t, direct), framemd5(t, back)
	if len(want) < 250 || len(got) != len(want) {
		t.Fatalf("%d packets from the bucket's archive, %d recorded directly", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("packet %d differs:\narchive %s\ndirect  %s", i, got[i], want[i])
		}
	}
}
