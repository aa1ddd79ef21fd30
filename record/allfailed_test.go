package record_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/record"
)

// TestRecordAllInWhichEveryRecordingFailedSaysSo: RecordAll over two
// announced broadcasts whose files cannot be created (a file stands where
// each one's directory would go) recorded nothing: it returns a
// RecordingsFailedError that names both broadcasts and wraps each one's
// error, instead of nil. One recording failing beside one that records is
// the success it was (nil, the recorded file whole).
func TestRecordAllInWhichEveryRecordingFailedSaysSo(t *testing.T) {
	cases := []struct {
		name    string
		blocked []string // broadcasts whose directory's path is a file
	}{
		{"every recording fails", []string{"alice", "bob"}},
		{"one of two recordings fails", []string{"bob"}},
		{"no recording fails", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for _, b := range tc.blocked {
				if err := os.WriteFile(filepath.Join(dir, b), []byte("not a directory"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out, err := record.Files(filepath.Join(dir, "{broadcast}", "rec.mkv"), record.FileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			src := record.Local(liveDemo("alice", 2), liveDemo("bob", 2))
			r, err := record.New(record.Options{Output: out, Duration: time.Second, Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = r.RecordAll(ctx, src)
			if len(tc.blocked) < 2 {
				if err != nil {
					t.Fatalf("RecordAll = %v, want nil", err)
				}
				if n := len(r.Files()); n != 2-len(tc.blocked) {
					t.Fatalf("%d files recorded, want %d: %v", n, 2-len(tc.blocked), r.Files())
				}
				for _, f := range r.Files() {
					mediatest.DecodeClean(t, f.Path)
				}
				return
			}
			fe, ok := errors.AsType[*record.RecordingsFailedError](err)
			if !ok || !errors.Is(err, fs.ErrExist) {
				t.Fatalf("RecordAll = %v (files %v), want a RecordingsFailedError", err, r.Files())
			}
			got := slices.Sorted(slices.Values(fe.Broadcasts))
			if !slices.Equal(got, tc.blocked) || len(fe.Errs) != len(fe.Broadcasts) {
				t.Fatalf("the error names %v with %d errors, want %v", fe.Broadcasts, len(fe.Errs), tc.blocked)
			}
			for i, b := range fe.Broadcasts {
				// Each broadcast's own error (its directory could not be
				// made), naming the file, reachable through the chain.
				if !errors.Is(err, fe.Errs[i]) || !errors.Is(fe.Errs[i], fs.ErrExist) || !strings.Contains(fe.Errs[i].Error(), filepath.Join(dir, b, "rec.mkv")) {
					t.Errorf("error of %s: %v", b, fe.Errs[i])
				}
				if !strings.Contains(err.Error(), fe.Errs[i].Error()) {
					t.Errorf("%q does not say %q", err, fe.Errs[i])
				}
			}
			if len(r.Files()) != 0 {
				t.Errorf("files %v", r.Files())
			}
		})
	}
}
