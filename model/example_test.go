package model_test

import (
	"fmt"
	"time"

	"github.com/moq-export/moq-export/model"
)

// A producer writes two groups; a consumer watching through a ready set is
// woken once and reads them without blocking.
func Example() {
	track := model.NewTrack("video")
	ready := model.NewReadySet()
	c := track.Subscribe(500 * time.Millisecond)
	c.Watch(ready)
	ready.Take(nil) // Watch marks the consumer once to read what is buffered.

	for seq := range 2 {
		g, _ := track.AppendGroup()
		g.WriteFrame(model.Frame{Timestamp: int64(seq) * 1_000_000, Payload: []byte("key")})
		g.WriteFrame(model.Frame{Timestamp: int64(seq)*1_000_000 + 33_333, Payload: []byte("delta")})
		g.Close(nil)
	}
	track.Close(nil)

	for _, consumer := range ready.Take(nil) {
		for {
			ev, ok := consumer.Next()
			if !ok {
				break
			}
			switch ev.Kind {
			case model.EventFrame:
				fmt.Printf("group %d at %d us keyframe=%v\n", ev.Group, ev.Frame.Timestamp, ev.Keyframe)
			case model.EventEnd:
				fmt.Println("end")
			}
		}
	}
	// Output:
	// group 0 at 0 us keyframe=true
	// group 0 at 33333 us keyframe=false
	// group 1 at 1000000 us keyframe=true
	// group 1 at 1033333 us keyframe=false
	// end
}
