package flv_test

import (
	"bytes"
	"fmt"

	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/flv"
)

// Example muxes an AAC rendition into FLV in memory. A file or stdout works
// the same; a file also gets its duration patched on Close.
func Example() {
	s := samples.MustLoadSample("aac")
	var out bytes.Buffer
	w := flv.NewWriter(&out, flv.Options{})
	err := w.AddTrack(mux.Track{ID: 1, Kind: mux.Audio, Codec: s.Codec, Description: s.Description,
		SampleRate: s.SampleRate, Channels: s.Channels})
	if err != nil {
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
	fmt.Printf("%s version %d, audio %v, video %v\n", out.Bytes()[:3], out.Bytes()[3], out.Bytes()[4]&4 != 0, out.Bytes()[4]&1 != 0)

	// A codec FLV cannot carry is refused with a suggestion.
	err = flv.NewWriter(&out, flv.Options{}).AddTrack(mux.Track{ID: 2, Kind: mux.Video, Codec: "vp8"})
	fmt.Println(err)
	// Output:
	// FLV version 1, audio true, video false
	// flv cannot carry codec "vp8"; use mkv instead
}
