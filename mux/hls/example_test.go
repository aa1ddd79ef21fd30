package hls_test

import (
	"fmt"
	"os"
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
	if err := store.Close(); err != nil { // removes the spare copies
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
