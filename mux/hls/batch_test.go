package hls_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/moq-export/moq-export/mux/hls"
)

// readName reads name in dir, "" when it does not exist.
func readName(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if os.IsNotExist(err) {
		return ""
	}
	must(t, err)
	return string(b)
}

// wantFiles fails t unless dir's files hold want, each a plain file, and
// nothing else is in dir.
func wantPlainFiles(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	must(t, err)
	if len(ents) != len(want) {
		t.Errorf("the directory holds %s, want %d files", dirNames(t, dir), len(want))
	}
	for name, w := range want {
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s: %v, want a plain file", name, err)
			continue
		}
		if got := readName(t, dir, name); got != w {
			t.Errorf("%s holds %q, want %q", name, got, w)
		}
	}
}

func TestAHeldDirStoreShowsAPublicationsManifestsAtOnceAndLeavesPlainFilesAtClose(t *testing.T) {
	t.Parallel()
	st, dir := openDirStore(t)
	st.Hold()
	for name, data := range map[string]string{"v0.m3u8": "v1", "a0.m3u8": "a1", "index.mpd": "m1"} {
		must(t, st.WriteFile(name, []byte(data)))
		if got := readName(t, dir, name); got != "" {
			t.Fatalf("%s shows %q before Release", name, got)
		}
	}
	must(t, st.Release())
	// The next publication changes two of them: the third still shows.
	must(t, st.WriteFile("v0.m3u8", []byte("v2, longer")))
	must(t, st.WriteFile("a0.m3u8", []byte("a")))
	for name, want := range map[string]string{"v0.m3u8": "v1", "a0.m3u8": "a1", "index.mpd": "m1"} {
		if got := readName(t, dir, name); got != want {
			t.Fatalf("before the second Release %s shows %q, want %q", name, got, want)
		}
	}
	must(t, st.Release())
	for name, want := range map[string]string{"v0.m3u8": "v2, longer", "a0.m3u8": "a", "index.mpd": "m1"} {
		if got := readName(t, dir, name); got != want {
			t.Fatalf("after the second Release %s shows %q, want %q", name, got, want)
		}
		if got, err := st.ReadFile(name); err != nil || string(got) != want {
			t.Fatalf("ReadFile(%s) = %q, %v; want %q", name, got, err, want)
		}
	}
	// Nothing written since: a Release changes nothing.
	must(t, st.Release())
	must(t, st.Close())
	wantPlainFiles(t, dir, map[string]string{"v0.m3u8": "v2, longer", "a0.m3u8": "a", "index.mpd": "m1"})
}

func TestADirStoreContinuesAPackageAKilledRunLeftAsLinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// An earlier package, finished: plain files.
	old, err := hls.OpenDirStore(dir)
	must(t, err)
	must(t, old.WriteFile("index.m3u8", []byte("mv0")))
	must(t, old.WriteFile("v0.m3u8", []byte("v0")))
	must(t, old.Close())
	// A run that continues it and is killed (never closed): index.m3u8
	// is written once, v0.m3u8 twice.
	killed, err := hls.OpenDirStore(dir)
	must(t, err)
	killed.Hold()
	must(t, killed.WriteFile("index.m3u8", []byte("mv1")))
	must(t, killed.WriteFile("v0.m3u8", []byte("v1")))
	must(t, killed.Release())
	must(t, killed.WriteFile("v0.m3u8", []byte("v2")))
	must(t, killed.Release())
	must(t, killed.WriteFile("v0.m3u8", []byte("never released")))
	for name, want := range map[string]string{"index.m3u8": "mv1", "v0.m3u8": "v2"} {
		if got := readName(t, dir, name); got != want {
			t.Fatalf("after the kill %s shows %q, want %q", name, got, want)
		}
	}
	// The next run writes v0.m3u8 only: index.m3u8 must still show what
	// the killed run showed last, through every exchange.
	st, err := hls.OpenDirStore(dir)
	must(t, err)
	st.Hold()
	if got, err := st.ReadFile("v0.m3u8"); err != nil || string(got) != "v2" {
		t.Fatalf("the next run reads v0.m3u8 %q, %v; want v2", got, err)
	}
	for i, v := range []string{"v3", "v4", "v5"} {
		must(t, st.WriteFile("v0.m3u8", []byte(v)))
		must(t, st.Release())
		if got := readName(t, dir, "index.m3u8"); got != "mv1" {
			t.Fatalf("after publication %d index.m3u8 shows %q, want mv1", i, got)
		}
	}
	must(t, st.Close())
	wantPlainFiles(t, dir, map[string]string{"index.m3u8": "mv1", "v0.m3u8": "v5"})
}
