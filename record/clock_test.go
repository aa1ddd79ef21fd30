package record_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
)

// With a catalog clock, {time} and FileInfo.Start are the publisher's
// wall-clock time of each file's first frame (what MKV's DateUTC says, as
// ffprobe reads it): the first file's, and a later segment's from the frame
// it begins with. Without a clock they are the wall clock at open.
func TestTimeInTemplatesComesFromTheCatalogClock(t *testing.T) {
	t.Parallel()
	t.Run("clock", func(t *testing.T) {
		t.Parallel()
		bc, _ := markedBroadcast(t)
		dir := t.TempDir()
		out, err := record.Files(filepath.Join(dir, "rec-{time}-{n}.mkv"), record.FileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := record.New(record.Options{Output: out, Segment: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := rec.Record(ctx, record.Local(bc), "marked"); err != nil {
			t.Fatal(err)
		}
		files := rec.Files()
		if len(files) < 2 {
			t.Fatalf("%d files, want segments: %+v", len(files), files)
		}
		for i, f := range files {
			tags, _ := mediatest.Run(t, "ffprobe", "-v", "error", "-show_entries", "format_tags=creation_time", "-of", "default=nw=1:nk=1", f.Path)
			date, err := time.Parse("2006-01-02T15:04:05.000000Z", strings.TrimSpace(tags))
			if err != nil {
				t.Fatalf("file %d: creation_time %q: %v", i, tags, err)
			}
			if date.Year() != 2026 || date.Month() != 10 {
				t.Fatalf("file %d dated %v, not by the catalog clock (2026-10-01)", i, date)
			}
			if !f.Start.Equal(date) {
				t.Errorf("file %d: FileInfo.Start %v, its DateUTC %v", i, f.Start, date)
			}
			if want := "rec-" + date.Format("20060102T150405Z") + "-"; !strings.HasPrefix(filepath.Base(f.Path), want) {
				t.Errorf("file %d is %s, want it named %s...", i, filepath.Base(f.Path), want)
			}
		}
	})
	t.Run("no clock", func(t *testing.T) {
		t.Parallel()
		bc := model.NewBroadcast("demo")
		if err := demo.Publish(context.Background(), bc, demo.Options{Renditions: []string{"h264", "aac"}, Loops: 1, KeepGroups: 1 << 20}); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		out, err := record.Files(filepath.Join(dir, "rec-{time}.mkv"), record.FileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := record.New(record.Options{Output: out, Delay: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		before := time.Now().UTC().Truncate(time.Second)
		if err := rec.Record(context.Background(), record.Local(bc), "demo"); err != nil {
			t.Fatal(err)
		}
		after := time.Now().UTC()
		files := rec.Files()
		if len(files) != 1 || files[0].Start.Before(before) || files[0].Start.After(after) {
			t.Fatalf("files %+v: want one started between %v and %v", files, before, after)
		}
		if _, err := os.Stat(filepath.Join(dir, "rec-"+files[0].Start.Format("20060102T150405Z")+".mkv")); err != nil {
			t.Fatalf("the file is not named by its start: %v", err)
		}
	})
}
