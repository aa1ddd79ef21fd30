package objstore_test

import (
	"bytes"
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

// recordStorePackage records broadcast name (the demo, published whole)
// as an HLS package to url on s and returns Record's error.
func recordStorePackage(t *testing.T, s *s3test.Server, url, name string) error {
	t.Helper()
	bc := model.NewBroadcast(name)
	if err := demo.Publish(context.Background(), bc, demo.Options{Loops: 1, KeepGroups: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	r, err := record.New(record.Options{Output: open(t, s, url, objstore.Options{}), Format: record.HLS, Delay: time.Hour,
		Duration: time.Second, HLSSegmentDuration: 500 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return r.Record(ctx, record.Local(bc), name)
}

// TestAPackageIsRefusedAPrefixThatHoldsAnotherPackage: as a directory
// (9bd5520), an object store's prefix holds one package, since every
// package names its objects alike (v0.mp4, a0.mp4, v0.m3u8): a recording
// whose package would go under a prefix that holds another package's
// state (alice recorded into rec/alice.m3u8, then bob into rec/bob.m3u8,
// rec/bob.mpd or rec/) is refused with a PackageDirError before it puts
// anything, and alice's objects stay as they were. The same package
// again is continued; a prefix of its own beside it is recorded. Before,
// only --record-all's templates were checked, and bob's package was put
// over alice's.
func TestAPackageIsRefusedAPrefixThatHoldsAnotherPackage(t *testing.T) {
	t.Parallel()
	s := s3test.Start(t)
	for i, tc := range []struct {
		name   string
		second string // the key after rec/alice.m3u8
		who    string
		refuse bool
	}{
		{"another playlist under the prefix", "rec/bob.m3u8", "bob", true},
		{"another MPD under the prefix", "rec/bob.mpd", "bob", true},
		{"the prefix itself, index.m3u8", "rec", "bob", true},
		{"the same package again", "rec/alice.m3u8", "alice", false},
		{"a prefix of its own beside it", "rec/bob/index.m3u8", "bob", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bucket := "prefix" + string(rune('a'+i))
			s.Bucket(t, bucket)
			dir := filepath.Join(s.Dir, bucket)
			if err := recordStorePackage(t, s, "s3://"+bucket+"/rec/alice.m3u8", "alice"); err != nil {
				t.Fatal(err)
			}
			media, err := os.ReadFile(filepath.Join(dir, "rec", "v0.m3u8"))
			if err != nil {
				t.Fatal(err)
			}
			err = recordStorePackage(t, s, "s3://"+bucket+"/"+tc.second, tc.who)
			if !tc.refuse {
				if err != nil {
					t.Fatalf("the second recording: %v", err)
				}
				mediatest.DecodeClean(t, filepath.Join(dir, "rec", "alice.m3u8"))
				if tc.who == "bob" {
					mediatest.DecodeClean(t, filepath.Join(dir, "rec", "bob", "index.m3u8"))
				}
				return
			}
			pe, ok := errors.AsType[*record.PackageDirError](err)
			if !ok {
				t.Fatalf("the second recording = %v, want a PackageDirError", err)
			}
			if pe.Other != "alice.m3u8" || pe.Recording || pe.Dir != "s3://"+bucket+"/rec" {
				t.Errorf("refused %+v, want Other alice.m3u8 in s3://%s/rec", pe, bucket)
			}
			if now, err := os.ReadFile(filepath.Join(dir, "rec", "v0.m3u8")); err != nil || !bytes.Equal(now, media) {
				t.Errorf("alice's media playlist v0.m3u8 changed (%v)", err)
			}
			for _, n := range []string{"bob.m3u8", "bob.mpd", "bob.state.json", "index.m3u8"} {
				if _, err := os.Stat(filepath.Join(dir, "rec", n)); err == nil {
					t.Errorf("%s was put before the refusal", n)
				}
			}
			mediatest.DecodeClean(t, filepath.Join(dir, "rec", "alice.m3u8"))
		})
	}
}

// TestAPackageIsRefusedAPrefixThisProcessRecordsAPackageInto: before its
// first segment a package has no state under its prefix, so the listing
// cannot see it; a second package there in the same process (another, or
// the same one: one package has one writer) is refused until the first
// one's Close.
func TestAPackageIsRefusedAPrefixThisProcessRecordsAPackageInto(t *testing.T) {
	t.Parallel()
	s := s3test.Start(t)
	s.Bucket(t, "busy")
	out := open(t, s, "s3://busy/rec/alice.m3u8", objstore.Options{})
	first, err := out.CreatePackage("alice", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"rec/alice.m3u8", "rec/bob.m3u8"} {
		_, err := open(t, s, "s3://busy/"+key, objstore.Options{}).CreatePackage("x", time.Now())
		if pe, ok := errors.AsType[*record.PackageDirError](err); !ok || !pe.Recording || pe.Other != "alice.m3u8" {
			t.Errorf("%s while alice's package is open = %v, want a PackageDirError saying it is being recorded", key, err)
		}
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := open(t, s, "s3://busy/rec/alice.m3u8", objstore.Options{}).CreatePackage("alice", time.Now())
	if err != nil {
		t.Fatalf("alice's package after its Close: %v", err)
	}
	again.Close()
}
