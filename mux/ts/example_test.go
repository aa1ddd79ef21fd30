package ts_test

import (
	"bytes"
	"fmt"

	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/ts"
)

// Example muxes the embedded AAC sample into MPEG-TS.
func Example() {
	s := samples.MustLoadSample("aac")
	var out bytes.Buffer
	w := ts.NewWriter(&out, ts.Options{})
	if err := w.AddTrack(mux.Track{ID: 1, Kind: mux.Audio, Codec: s.Codec, Description: s.Description,
		SampleRate: s.SampleRate, Channels: s.Channels}); err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range s.Frames {
		if err := w.WriteFrame(mux.Frame{TrackID: 1, Timestamp: f.Timestamp, Keyframe: f.Keyframe, Payload: f.Payload}); err != nil {
			fmt.Println(err)
			return
		}
	}
	if err := w.Close(); err != nil {
		fmt.Println(err)
		return
	}
	st := w.Stats()
	fmt.Println(st.Frames, "frames,", out.Len()%188 == 0)
	// Output: 189 frames, true
}

// ExampleWriter_AddTrack shows the error for a codec MPEG-TS cannot carry.
func ExampleWriter_AddTrack() {
	w := ts.NewWriter(&bytes.Buffer{}, ts.Options{})
	err := w.AddTrack(mux.Track{ID: 1, Kind: mux.Video, Codec: "vp09.00.10.08"})
	fmt.Println(err)
	// Output: ts cannot carry codec "vp09.00.10.08"; use mkv instead
}
