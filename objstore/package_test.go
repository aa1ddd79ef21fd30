package objstore_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/internal/testutil/s3test"
	"github.com/moq-export/moq-export/objstore"
	"github.com/moq-export/moq-export/record"
)

// TestHLSPackagesGoToTheStoreAndContinueThere records the simulcast demo
// (two video sizes, two audio renditions) as an HLS package into a bucket,
// twice to the same key: every rendition's objects are there, ffmpeg
// plays the package from the store's bytes, and the second recording
// continued the first after a discontinuity.
func TestHLSPackagesGoToTheStoreAndContinueThere(t *testing.T) {
	t.Parallel()
	s := s3test.Start(t)
	s.Bucket(t, "rec")
	var published int64
	for run := range 2 {
		bc, n := publish(t, demo.Simulcast, 1, 0)
		published += n
		out := open(t, s, "s3://rec/live/{broadcast}/index.m3u8", objstore.Options{})
		_, files := recordInto(t, context.Background(), out, record.HLS, record.Local(bc))
		if len(files) != 1 || files[0].Path != "s3://rec/live/demo/index.m3u8" || files[0].Frames != n {
			t.Fatalf("run %d: files %+v, want s3://rec/live/demo/index.m3u8 with %d frames", run, files, n)
		}
	}
	// versitygw keeps each object as a file: the package is a directory.
	dir := filepath.Join(s.Dir, "rec", "live", "demo")
	mediatest.DecodeClean(t, filepath.Join(dir, "index.m3u8"))
	var packets int
	for _, id := range []string{"v0", "v1", "a0", "a1"} {
		b, err := os.ReadFile(filepath.Join(dir, id+".m3u8"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(string(b), "#EXT-X-DISCONTINUITY\n") != 1 || !strings.HasSuffix(string(b), "#EXT-X-ENDLIST\n") {
			t.Fatalf("%s after two recordings:\n%s", id, b)
		}
		packets += len(mediatest.Probe(t, filepath.Join(dir, id+".m3u8")).Packets)
	}
	if int64(packets) != published {
		t.Errorf("the four media playlists hold %d packets, %d frames were published", packets, published)
	}
}
