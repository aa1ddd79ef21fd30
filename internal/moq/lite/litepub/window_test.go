package litepub

import (
	"testing"

	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/model"
)

func TestASubscribeAsksForTheWindowItsVersionMeans(t *testing.T) {
	// Groups 0-4 held, one frame each, 100 ms apart.
	tr := model.NewTrack("v")
	for i := range 5 {
		g, _ := tr.AppendGroup()
		g.WriteFrame(model.Frame{Timestamp: int64(i) * 100_000, Payload: []byte{1}})
		g.Close(nil)
	}
	sub := func(p wire.SubscribeParams) wire.Subscribe { return wire.Subscribe{SubscribeParams: p} }
	tests := []struct {
		name string
		v    *wire.Version
		req  wire.Subscribe
		want session.Window
	}{
		{"no start joins at the live edge", wire.Lite05, sub(wire.SubscribeParams{}),
			session.Window{Start: session.Location{Group: 4}, HasStart: true}},
		{"a start before lite-06 is where the window starts", wire.Lite05, sub(wire.SubscribeParams{Start: wire.Some(1)}),
			session.Window{Start: session.Location{Group: 1}, HasStart: true}},
		{"a lite-06 start is a floor: the latest group at or above it", wire.Lite06, sub(wire.SubscribeParams{Start: wire.Some(1)}),
			session.Window{Start: session.Location{Group: 4}, HasStart: true}},
		{"a lite-06 max age reaches back to the oldest group it does not expire", wire.Lite06,
			sub(wire.SubscribeParams{Start: wire.Some(1), MaxLatency: 250}),
			session.Window{Start: session.Location{Group: 1}, HasStart: true}},
		{"a lite-06 floor above the latest group waits there", wire.Lite06, sub(wire.SubscribeParams{Start: wire.Some(7), FrameStart: 2}),
			session.Window{Start: session.Location{Group: 7, Frame: 2}, HasStart: true}},
		{"frame start counts in the floor group only", wire.Lite06,
			sub(wire.SubscribeParams{Start: wire.Some(4), FrameStart: 3, End: wire.Some(6), FrameEnd: wire.Some(1)}),
			session.Window{Start: session.Location{Group: 4, Frame: 3}, HasStart: true, End: 6, EndFrame: 2, HasEnd: true}},
		{"a floor the max age moves past drops the frame start", wire.Lite06,
			sub(wire.SubscribeParams{Start: wire.Some(1), FrameStart: 3}),
			session.Window{Start: session.Location{Group: 4}, HasStart: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := window(tr, tt.v, tt.req); got != tt.want {
				t.Fatalf("window %+v, want %+v", got, tt.want)
			}
		})
	}
}
