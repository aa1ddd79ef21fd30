package segment_test

import (
	"fmt"
	"time"

	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/segment"
)

// Cut a stream into outputs of at least two seconds, each starting at a
// video keyframe. A recorder opens a file per output in Next.
func Example() {
	outs := []*mux.Discard{{}}
	m := segment.New(outs[0], segment.Options{
		Duration: 2 * time.Second,
		Next: func(n int) (mux.Muxer, error) {
			outs = append(outs, &mux.Discard{})
			return outs[n], nil
		},
	})
	_ = m.AddTrack(mux.Track{ID: 1, Kind: mux.Video, Codec: "avc1.64001f"})
	for i := range 150 { // 5 s at 30 fps, a keyframe every second
		_ = m.WriteFrame(mux.Frame{TrackID: 1, Timestamp: int64(i) * 1e6 / 30, Keyframe: i%30 == 0, Payload: []byte{0}})
	}
	_ = m.Close()
	for n, o := range outs {
		fmt.Printf("output %d: %d frames\n", n, o.Stats().Frames)
	}
	// Output:
	// output 0: 60 frames
	// output 1: 60 frames
	// output 2: 30 frames
}
