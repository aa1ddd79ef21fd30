package mkv_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/mkv"
)

// Example records the embedded VP9 and Opus samples into a finalized WebM
// file: the DocType is chosen from the codecs, and because an *os.File can
// seek, Close writes Cues, Duration and sizes.
func Example() {
	dir, err := os.MkdirTemp("", "mkv-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	f, err := os.Create(filepath.Join(dir, "out.webm"))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	w := mkv.NewWriter(f, mkv.Options{})
	v, a := samples.MustLoadSample("vp9"), samples.MustLoadSample("opus")
	tracks := []mux.Track{
		{ID: 1, Kind: mux.Video, Codec: v.Codec, Width: v.Width, Height: v.Height},
		{ID: 2, Kind: mux.Audio, Codec: a.Codec, Description: a.Description, SampleRate: a.SampleRate, Channels: a.Channels},
	}
	for _, t := range tracks {
		if err := w.AddTrack(t); err != nil {
			log.Fatal(err)
		}
	}
	// The engine delivers frames in timestamp order across tracks; here the
	// video then the audio of each 20 ms slot, which is close enough.
	i, j := 0, 0
	for i < len(v.Frames) || j < len(a.Frames) {
		if j >= len(a.Frames) || (i < len(v.Frames) && v.Frames[i].Timestamp <= a.Frames[j].Timestamp) {
			fr := v.Frames[i]
			i++
			err = w.WriteFrame(mux.Frame{TrackID: 1, Timestamp: fr.Timestamp, Keyframe: fr.Keyframe, Payload: fr.Payload})
		} else {
			fr := a.Frames[j]
			j++
			err = w.WriteFrame(mux.Frame{TrackID: 2, Timestamp: fr.Timestamp, Keyframe: true, Payload: fr.Payload})
		}
		if err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	st := w.Stats()
	fmt.Println("seekable:", w.Seekable())
	fmt.Println("frames:", st.Frames, "dropped:", st.Dropped)
	// Output:
	// seekable: true
	// frames: 291 dropped: 0
}
