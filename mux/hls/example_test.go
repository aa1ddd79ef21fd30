package hls_test

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux/hls"
)

// Package two renditions into a store (here in memory; record.Files and
// objstore give directories and buckets) and list what it holds.
func ExampleWriter() {
	store := memStore{}
	w := hls.NewWriter(hls.Options{Store: store})
	v, a := mediatest.SampleInput("h264", 0), mediatest.SampleInput("aac", 1)
	for _, t := range mediatest.Tracks(v, a) {
		if err := w.AddTrack(t); err != nil {
			panic(err)
		}
	}
	for _, f := range mediatest.Interleave(v, a) {
		if err := w.WriteFrame(f); err != nil {
			panic(err)
		}
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	var names []string
	for name := range store {
		names = append(names, name)
	}
	slices.Sort(names)
	fmt.Println(names)
	// Output: [a0-00001.m4s a0-init.mp4 a0.m3u8 index.m3u8 index.mpd index.state.json v0-00001.m4s v0-init.mp4 v0.m3u8]
}

// Package into a directory through the store the command uses: each
// rendition one media file (its init segment, then its segments, named
// by byte range), playlists swapped in atomically.
func ExampleOpenDirStore() {
	dir, err := os.MkdirTemp("", "pkg")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := hls.OpenDirStore(dir)
	if err != nil {
		panic(err)
	}
	w := hls.NewWriter(hls.Options{Store: store})
	v := mediatest.SampleInput("h264", 0)
	if err := w.AddTrack(v.Track); err != nil {
		panic(err)
	}
	for _, f := range v.Frames {
		if err := w.WriteFrame(f); err != nil {
			panic(err)
		}
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	if err := store.Close(); err != nil { // turns the links into plain files
		panic(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		panic(err)
	}
	for _, e := range ents {
		fmt.Println(e.Name())
	}
	// Output:
	// index.m3u8
	// index.mpd
	// index.state.json
	// v0.m3u8
	// v0.mp4
}

// A held store (as a Writer holds it: BatchStore) shows the files written
// since the last Release together, at the next Release.
func ExampleDirStore_Hold() {
	dir, err := os.MkdirTemp("", "pkg")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := hls.OpenDirStore(dir)
	if err != nil {
		panic(err)
	}
	store.Hold()
	for _, name := range []string{"v0.m3u8", "a0.m3u8", "index.mpd"} {
		if err := store.WriteFile(name, []byte("version 1 of "+name)); err != nil {
			panic(err)
		}
	}
	_, err = os.ReadFile(filepath.Join(dir, "v0.m3u8"))
	fmt.Println("before Release:", errors.Is(err, fs.ErrNotExist))
	if err := store.Release(); err != nil {
		panic(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "v0.m3u8"))
	if err != nil {
		panic(err)
	}
	fmt.Println("after Release:", string(b))
	if err := store.Close(); err != nil {
		panic(err)
	}
	// Output:
	// before Release: true
	// after Release: version 1 of v0.m3u8
}

// Serve a package directory over HTTP while it is recorded: each
// response's ETag names its bytes and the manifests are revalidated on
// every reload, so a player never keeps a replaced playlist.
func ExampleServeFile() {
	dir, err := os.MkdirTemp("", "pkg")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "v0.m3u8"), []byte("#EXTM3U\n"), 0o644); err != nil {
		panic(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		panic(err)
	}
	defer root.Close()
	h := http.StripPrefix("/pkg/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = hls.ServeFile(w, r, root, r.URL.Path)
	}))
	for _, path := range []string{"/pkg/v0.m3u8", "/pkg/../secret", "/pkg/.manifests/v0.m3u8"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "http://example.com"+path, nil))
		fmt.Printf("%s %d %q\n", path, rec.Code, rec.Header().Get("Cache-Control"))
	}
	// Output:
	// /pkg/v0.m3u8 200 "no-cache"
	// /pkg/../secret 404 ""
	// /pkg/.manifests/v0.m3u8 404 ""
}
