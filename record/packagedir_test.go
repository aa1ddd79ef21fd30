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

// recordPackage records a second of broadcast name (a live demo) as an
// HLS package to path and returns Record's error.
func recordPackage(t *testing.T, ctx context.Context, path, name string) error {
	t.Helper()
	out, err := record.Files(path, record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := record.New(record.Options{Output: out, Format: record.HLS, Duration: time.Second, HLSSegmentDuration: 500 * time.Millisecond, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	return r.Record(ctx, record.Local(liveDemo(name, 2)), name)
}

// TestAPackageIsRefusedADirectoryThatHoldsAnotherPackage: every HLS/DASH
// package names its files alike (v0.mp4, a0.mp4, v0.m3u8, .manifests), so
// a recording whose package would go into a directory that holds another
// package (one recorded before into rec/alice.m3u8, then one of bob into
// rec/bob.m3u8 or rec/bob.mpd) is refused with a PackageDirError before it
// writes anything, and the package there stays whole. The same package
// recorded again is continued; a package in a directory of its own beside
// it is recorded.
func TestAPackageIsRefusedADirectoryThatHoldsAnotherPackage(t *testing.T) {
	cases := []struct {
		name   string
		second string // under the test's directory, after rec/alice.m3u8
		who    string // whose broadcast
		refuse bool
	}{
		{"another playlist in the directory", "rec/bob.m3u8", "bob", true},
		{"another MPD in the directory", "rec/bob.mpd", "bob", true},
		{"the directory itself, index.m3u8", "rec", "bob", true},
		{"the same package again", "rec/alice.m3u8", "alice", false},
		{"a directory of its own beside it", "rec/bob/index.m3u8", "bob", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			alice := filepath.Join(dir, "rec", "alice.m3u8")
			if err := recordPackage(t, ctx, alice, "alice"); err != nil {
				t.Fatal(err)
			}
			media, err := os.ReadFile(filepath.Join(dir, "rec", "v0.mp4"))
			if err != nil {
				t.Fatal(err)
			}
			err = recordPackage(t, ctx, filepath.Join(dir, tc.second), tc.who)
			if !tc.refuse {
				if err != nil {
					t.Fatalf("the second recording: %v", err)
				}
				mediatest.DecodeClean(t, alice)
				if tc.who == "bob" {
					mediatest.DecodeClean(t, filepath.Join(dir, tc.second))
				}
				return
			}
			pe, ok := errors.AsType[*record.PackageDirError](err)
			if !ok {
				t.Fatalf("the second recording = %v, want a PackageDirError", err)
			}
			if pe.Other != "alice.m3u8" || pe.Recording || pe.Dir != filepath.Join(dir, "rec") {
				t.Errorf("the error says %+v", pe)
			}
			after, err := os.ReadFile(filepath.Join(dir, "rec", "v0.mp4"))
			if err != nil || string(after) != string(media) {
				t.Fatalf("alice's v0.mp4 changed (%d bytes, then %d, %v)", len(media), len(after), err)
			}
			mediatest.DecodeClean(t, alice)
		})
	}
}

// TestAPackageIsRefusedADirectoryAnotherRecordingOfTheProcessWritesInto:
// while one recording writes its package into rec/ (before its first
// segment, so no state shows it on disk yet), a recording of another
// Recorder of the process into rec/bob.m3u8, or into the same package,
// is refused; once the first ended, the same package is continued.
func TestAPackageIsRefusedADirectoryAnotherRecordingOfTheProcessWritesInto(t *testing.T) {
	dir := t.TempDir()
	alice := filepath.Join(dir, "rec", "alice.m3u8")
	out, err := record.Files(alice, record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A segment longer than the recording: nothing on disk names the
	// package until it ends.
	r, err := record.New(record.Options{Output: out, Format: record.HLS, HLSSegmentDuration: time.Hour, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	running := r.Start(ctx, record.Local(liveDemo("alice", 0)), "alice")
	for running.State() != record.StateRecording {
		select {
		case <-running.Done():
			t.Fatalf("the first recording ended: %v", running.Err())
		case <-ctx.Done():
			t.Fatal("the first recording did not start")
		case <-time.After(10 * time.Millisecond):
		}
	}
	for _, second := range []struct{ path, who string }{{"rec/bob.m3u8", "bob"}, {"rec/alice.m3u8", "alice"}} {
		err := recordPackage(t, ctx, filepath.Join(dir, second.path), second.who)
		if pe, ok := errors.AsType[*record.PackageDirError](err); !ok || !pe.Recording || pe.Other != "alice.m3u8" {
			t.Fatalf("%s while alice's package is recorded: %v, want a PackageDirError saying it is being recorded", second.path, err)
		}
	}
	running.Stop()
	<-running.Done()
	if err := running.Err(); err != nil {
		t.Fatal(err)
	}
	if err := recordPackage(t, ctx, alice, "alice"); err != nil {
		t.Fatalf("continuing alice's package once its recording ended: %v", err)
	}
	mediatest.DecodeClean(t, alice)
}
