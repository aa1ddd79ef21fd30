package hls_test

import (
	"fmt"
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
