package jitter_test

import (
	"fmt"
	"time"

	"github.com/moq-export/moq-export/jitter"
	"github.com/moq-export/moq-export/mux"
)

// A video track runs ahead of an audio track; the buffer interleaves them by
// timestamp and holds the last video frame until audio catches up.
func Example() {
	b := jitter.New(jitter.Options{Delay: 500 * time.Millisecond})
	b.AddTrack(1, mux.Video)
	b.AddTrack(2, mux.Audio)
	for _, ts := range []int64{0, 40_000, 80_000} {
		b.Push(mux.Frame{TrackID: 1, Timestamp: ts})
	}
	for _, ts := range []int64{0, 20_000, 40_000, 60_000} {
		b.Push(mux.Frame{TrackID: 2, Timestamp: ts})
	}
	for {
		it, ok := b.Pop()
		if !ok {
			break
		}
		fmt.Printf("track %d at %d ms\n", it.Frame.TrackID, it.Frame.Timestamp/1000)
	}
	fmt.Println("held:", b.Stats().Buffered)
	// Output:
	// track 1 at 0 ms
	// track 2 at 0 ms
	// track 2 at 20 ms
	// track 1 at 40 ms
	// track 2 at 40 ms
	// track 2 at 60 ms
	// held: 1
}
