package record_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/record"
)

// TestRecordAllRefusesPackagesThatWouldShareADirectory: every HLS/DASH
// package names its files alike (v0.mp4, a0.mp4, v0.m3u8, .manifests), so
// RecordAll refuses, before it records anything, a template whose
// packages of different broadcasts would land in one directory, and says
// the template that gives each its own; a template with {broadcast} in
// the directory is recorded.
func TestRecordAllRefusesPackagesThatWouldShareADirectory(t *testing.T) {
	cases := []struct {
		name     string
		template string // under the test's directory
		suggest  string // "" when accepted
	}{
		{"the broadcast names the playlist only", "rec/{broadcast}.m3u8", "rec/{broadcast}/index.m3u8"},
		{"the broadcast names the MPD only", "rec/{broadcast}.mpd", "rec/{broadcast}/index.mpd"},
		{"the broadcast and the time name the playlist", "rec/{broadcast}-{time}.m3u8", "rec/{broadcast}-{time}/index.m3u8"},
		{"one playlist for every broadcast", "rec/index.m3u8", "rec/{broadcast}/index.m3u8"},
		{"the broadcast names the directory", "rec/{broadcast}/index.m3u8", ""},
		{"the broadcast is the directory", "rec/{broadcast}", ""},
		{"the broadcast and the time name the directory", "rec/{broadcast}-{time}/show.m3u8", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			out, err := record.Files(filepath.Join(dir, tc.template), record.FileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// Two live broadcasts, recorded for a second of media each.
			src := record.Local(liveDemo("room/alice", 2), liveDemo("room/bob", 2))
			r, err := record.New(record.Options{Output: out, Format: record.HLS, Duration: time.Second, HLSSegmentDuration: 500 * time.Millisecond, Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = r.RecordAll(ctx, src)
			if tc.suggest == "" {
				if err != nil {
					t.Fatalf("RecordAll: %v", err)
				}
				if n := len(r.Files()); n != 2 {
					t.Fatalf("%d packages recorded, want 2: %v", n, r.Files())
				}
				for _, f := range r.Files() {
					mediatest.DecodeClean(t, f.Path)
				}
				return
			}
			se, ok := errors.AsType[*record.SharedPackageError](err)
			if !ok || !errors.Is(err, record.ErrTemplate) {
				t.Fatalf("RecordAll = %v (files %v), want a SharedPackageError", err, r.Files())
			}
			if want := filepath.Join(dir, tc.suggest); se.Suggest != want {
				t.Errorf("suggests %q, want %q", se.Suggest, want)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("something was recorded before the refusal: %v", ents)
			}
		})
	}
}
