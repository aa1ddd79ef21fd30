package hls_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux/hls"
)

func openDirStore(t *testing.T) (*hls.DirStore, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := hls.OpenDirStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, dir
}

// dirNames lists dir's entries, space-separated, in name order.
func dirNames(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}

func TestDirStoreReplacesAFileWholeEveryTimeAndLeavesNoSpareAfterClose(t *testing.T) {
	t.Parallel()
	st, dir := openDirStore(t)
	// Growing, shrinking and growing again: every read is exactly the
	// last write, never the tail of a longer earlier version.
	for i, n := range []int{10, 3000, 100, 5, 4096, 1, 700} {
		want := bytes.Repeat([]byte{byte('a' + i)}, n)
		if err := st.WriteFile("v0.m3u8", want); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, "v0.m3u8"))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("write %d (%d bytes): read %d bytes (%v)", i, n, len(got), err)
		}
		if got, err := st.ReadFile("v0.m3u8"); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("write %d: ReadFile gave %d bytes (%v)", i, len(got), err)
		}
	}
	if err := st.WriteNewFile("v0-00001.m4s", []byte("segment")); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := dirNames(t, dir), "v0-00001.m4s v0.m3u8"; got != want {
		t.Fatalf("after Close the directory holds %s, want only the package's files %s", got, want)
	}
}

func TestDirStoreKeepsTheVersionAReaderOpenedWhole(t *testing.T) {
	t.Parallel()
	st, dir := openDirStore(t)
	old := bytes.Repeat([]byte("#EXTINF:4.0,\nv0-00001.m4s\n"), 50)
	if err := st.WriteFile("v0.m3u8", []byte("first")); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteFile("v0.m3u8", old); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "v0.m3u8"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := st.WriteFile("v0.m3u8", []byte("#EXTM3U\nnew")); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(got, old) {
		t.Fatalf("a reader that opened the file before a write read %q (%v), want the version it opened", got, err)
	}
}

func TestDirStoreRefusesNamesOutsideItsDirectory(t *testing.T) {
	t.Parallel()
	st, _ := openDirStore(t)
	for _, name := range []string{"", ".", "..", "../x.m3u8", "a/b.m4s", `a\b`, "x\x00y"} {
		if err := st.WriteFile(name, []byte("x")); !errors.Is(err, hls.ErrName) {
			t.Errorf("WriteFile(%q) = %v, want ErrName", name, err)
		}
		if err := st.WriteNewFile(name, []byte("x")); !errors.Is(err, hls.ErrName) {
			t.Errorf("WriteNewFile(%q) = %v, want ErrName", name, err)
		}
		if _, err := st.ReadFile(name); !errors.Is(err, hls.ErrName) {
			t.Errorf("ReadFile(%q) = %v, want ErrName", name, err)
		}
	}
}

func TestDirStoreFollowsNoSymlinkOutOfItsDirectory(t *testing.T) {
	t.Parallel()
	st, dir := openDirStore(t)
	outside := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "v0-00001.m4s")); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteNewFile("v0-00001.m4s", []byte("x")); err == nil {
		t.Error("writing through a symlink that leaves the directory succeeded")
	}
	if got, _ := os.ReadFile(outside); string(got) != "keep" {
		t.Fatalf("the file outside the directory became %q", got)
	}
}

// TestDirStoreReplacesAnEarlierRunsFileAndOutlivesALostSpare: the store
// keeps the two files of a name open between writes; a file an earlier
// run left (a continued package) and a spare someone else removed are
// still replaced whole.
func TestDirStoreReplacesAnEarlierRunsFileAndOutlivesALostSpare(t *testing.T) {
	t.Parallel()
	st, dir := openDirStore(t)
	if err := os.WriteFile(filepath.Join(dir, "v0.m3u8"), bytes.Repeat([]byte("old run\n"), 100), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, n := range []int{10, 3000, 100, 5} {
		if i == 2 {
			if err := os.Remove(filepath.Join(dir, ".v0.m3u8.tmp")); err != nil {
				t.Fatal(err)
			}
		}
		want := bytes.Repeat([]byte{byte('a' + i)}, n)
		if err := st.WriteFile("v0.m3u8", want); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if got, err := os.ReadFile(filepath.Join(dir, "v0.m3u8")); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("write %d (%d bytes): read %d bytes (%v)", i, n, len(got), err)
		}
	}
}

// TestDirStoreGivesTheStatesOldVersionToANameThatNeedsASpare: nobody
// reads an old package state, so a name that needs a spare takes the
// state's instead of creating a file; a version a reader opened is still
// overwritten only by its own name's next write.
func TestDirStoreGivesTheStatesOldVersionToANameThatNeedsASpare(t *testing.T) {
	t.Parallel()
	st, dir := openDirStore(t)
	write := func(name, data string) {
		t.Helper()
		if err := st.WriteFile(name, []byte(data)); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != data {
			t.Fatalf("%s reads %q (%v), want %q", name, got, err, data)
		}
	}
	write("index.state.json", `{"state":1}`)
	write("index.m3u8", "#EXTM3U\nfirst")
	write("index.state.json", `{"state":2}`)
	reader, err := os.Open(filepath.Join(dir, "index.m3u8"))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	write("index.m3u8", "#EXTM3U\nsecond, in the state's old file")
	if got := st.Created(); got != 3 {
		t.Fatalf("the store created %d files, want 3 (the state's first two, the playlist's first)", got)
	}
	write("index.state.json", `{"state":3}`)
	write("index.state.json", `{"state":4, a longer one}`)
	if got, err := io.ReadAll(reader); err != nil || string(got) != "#EXTM3U\nfirst" {
		t.Fatalf("the playlist version a reader opened reads %q (%v) after the state's writes", got, err)
	}
	write("index.m3u8", "#EXTM3U\nthird")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := dirNames(t, dir), "index.m3u8 index.state.json"; got != want {
		t.Fatalf("after Close the directory holds %s, want only the package's files %s", got, want)
	}
}

// TestAPackageShowsItsManifestsThroughLinksWhileRecordedAndPlainFilesAfterClose:
// a Writer publishes through the manifest directories (manifests.go), so
// while the package is recorded (or after a kill) each of its 5 named
// files (2 media playlists, the MPD, the multivariant playlist, the
// state) is a link into .manifests and no per-file spare is created; once
// the store closes they are plain files and the directories are gone.
func TestAPackageShowsItsManifestsThroughLinksWhileRecordedAndPlainFilesAfterClose(t *testing.T) {
	t.Parallel()
	st, dir := openDirStore(t)
	w := hls.NewWriter(hls.Options{Store: st})
	mediatest.Feed(t, w, looped("h264", 0, 16), looped("aac", 1, 16))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := st.Created(); got != 0 {
		t.Errorf("WriteFile created %d files of its own, want none: the manifests are in .manifests", got)
	}
	if got, want := dirNames(t, dir), ".manifests .manifests.tmp a0.m3u8 a0.mp4 index.m3u8 index.mpd index.state.json v0.m3u8 v0.mp4"; got != want {
		t.Fatalf("before Close the directory holds %s, want %s", got, want)
	}
	names := []string{"a0.m3u8", "index.m3u8", "index.mpd", "index.state.json", "v0.m3u8"}
	for _, name := range names {
		if fi, err := os.Lstat(filepath.Join(dir, name)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("before Close %s is not a link (%v)", name, err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := dirNames(t, dir), "a0.m3u8 a0.mp4 index.m3u8 index.mpd index.state.json v0.m3u8 v0.mp4"; got != want {
		t.Fatalf("after Close the directory holds %s, want %s", got, want)
	}
	for _, name := range names {
		if fi, err := os.Lstat(filepath.Join(dir, name)); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("after Close %s is not a plain file (%v)", name, err)
		}
	}
}
