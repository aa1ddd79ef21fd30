package objstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/internal/testutil/s3test"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/objstore"
	"github.com/moq-export/moq-export/record"
)

// TestRecordAllRefusesPackagesThatWouldShareAPrefix: RecordAll into an
// object store refuses, as into files, a key template whose HLS/DASH
// packages of different broadcasts would share a prefix (every package
// names its objects alike: v0.mp4, a0.mp4, v0.m3u8), before anything is
// put, with a SharedPackageError that suggests the template with
// {broadcast} in the prefix; that template records each broadcast's
// package under its own prefix, and each plays whole.
func TestRecordAllRefusesPackagesThatWouldShareAPrefix(t *testing.T) {
	t.Parallel()
	s := s3test.Start(t)
	for _, tc := range []struct {
		name, bucket, key, suggest string
	}{
		{"the broadcast names the playlist only", "shared", "live/{broadcast}.m3u8", "live/{broadcast}/index.m3u8"},
		{"the broadcast names the prefix", "own", "live/{broadcast}/index.m3u8", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.Bucket(t, tc.bucket)
			out := open(t, s, "s3://"+tc.bucket+"/"+tc.key, objstore.Options{})
			var srcs []*model.Broadcast
			for _, name := range []string{"alice", "bob"} {
				bc := model.NewBroadcast(name)
				if err := demo.Publish(context.Background(), bc, demo.Options{Loops: 1, KeepGroups: 1 << 20}); err != nil {
					t.Fatal(err)
				}
				srcs = append(srcs, bc)
			}
			src := record.Local(srcs...)
			src.Close() // every frame is published: the recordings end with the broadcasts
			r, err := record.New(record.Options{Output: out, Format: record.HLS, Delay: time.Hour, HLSSegmentDuration: 500 * time.Millisecond, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			err = r.RecordAll(ctx, src)
			bucket := filepath.Join(s.Dir, tc.bucket)
			if tc.suggest == "" {
				if err != nil && !errors.Is(err, record.ErrSourceClosed) {
					t.Fatalf("RecordAll: %v", err)
				}
				for _, name := range []string{"alice", "bob"} {
					mediatest.DecodeClean(t, filepath.Join(bucket, "live", name, "index.m3u8"))
				}
				return
			}
			se, ok := errors.AsType[*record.SharedPackageError](err)
			if !ok || !errors.Is(err, record.ErrTemplate) {
				t.Fatalf("RecordAll = %v (files %v), want a SharedPackageError", err, r.Files())
			}
			if se.Suggest != tc.suggest {
				t.Errorf("suggests %q, want %q", se.Suggest, tc.suggest)
			}
			if ents, _ := os.ReadDir(bucket); len(ents) != 0 {
				t.Errorf("objects were put before the refusal: %v", ents)
			}
		})
	}
}
