package export_test

import (
	"context"
	"fmt"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
)

// Export one loop of the demo broadcast into a muxer. A recording service
// passes a mux/mkv, mux/flv or mux/ts writer instead of mux.Discard, and a
// broadcast from package subscribe instead of the demo.
func Example() {
	bc := model.NewBroadcast("demo")
	// The whole clip is published up front here; live, the publisher and
	// the export run concurrently.
	if err := demo.Publish(context.Background(), bc, demo.Options{Loops: 1, KeepGroups: 1000}); err != nil {
		fmt.Println("publish failed:", err)
		return
	}

	out := &mux.Discard{}
	e := export.New(bc, out, export.Options{})
	if err := e.Run(context.Background()); err != nil {
		fmt.Println("export failed:", err)
		return
	}
	st := e.Stats()
	fmt.Println("frames:", st.Frames, "late:", st.Late)
	// Output: frames: 309 late: 0
}
