// Package archivetest opens an archived recording as a broadcast for
// tests: the few lines every test that reads an archive back begins with
// (open the store, the recording, its broadcast; fail the test on an
// error), shared by package archive's tests and interop's replay test.
//
// It imports testing and is for _test.go files only (internal/layering
// fails when production code imports it).
package archivetest

import (
	"context"
	"testing"

	"github.com/moq-export/moq-export/archive"
	"github.com/moq-export/moq-export/model"
)

// Broadcast opens recording name of the archive at the root of st and
// returns it as a broadcast read with o, failing t on an error.
func Broadcast(t testing.TB, ctx context.Context, st archive.Store, name string, o archive.ReadOptions) *model.Broadcast {
	t.Helper()
	rec, err := archive.Open(st, "").Recording(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rec.Broadcast(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Dir is the archive store in directory dir, failing t on an error.
func Dir(t testing.TB, dir string) *archive.DirStore {
	t.Helper()
	st, err := archive.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
