package mkv

import (
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
)

// TestAFileOfOneFrameHasADuration: before a second frame there is no gap
// to estimate a frame's duration from, so the track's nominal one is used
// (a frame at the video's frame rate, 1024 samples of audio) and the file
// still has a Duration, not none.
func TestAFileOfOneFrameHasADuration(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe", "mkvmerge")
	for _, name := range []string{"h264", "aac"} {
		in := mediatest.SampleInput(name, 1)
		in.Frames = in.Frames[:1]
		path := muxFile(t, "one-"+name+".mkv", Options{}, in)
		mediatest.DecodeClean(t, path)
		m := mkvmergeClean(t, path)
		want := int64(1e6/in.Track.Framerate) * 1000
		if in.Track.Framerate == 0 {
			want = 1024 * 1_000_000_000 / int64(in.Track.SampleRate)
		}
		if d := m.Container.Properties.Duration; d < want-1e6 || d > want+1e6 {
			t.Errorf("%s: duration %d ns, want one frame, %d ns", name, d, want)
		}
	}
}

// TestAFileClosedBeforeItsFirstFrameIsValid: a recording stopped before
// its first frame (the tracks known from the catalog, no media) is a valid
// empty Matroska file, which ffmpeg and mkvmerge read without an error.
func TestAFileClosedBeforeItsFirstFrameIsValid(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe", "mkvmerge")
	in := mediatest.SampleInput("h264", 1)
	in.Frames = nil
	audio := mediatest.SampleInput("aac", 2)
	audio.Frames = nil
	path := muxFile(t, "empty.mkv", Options{}, in, audio)
	// ffmpeg has no frame to decode: ffprobe must read the file without
	// a message, and find both tracks.
	if p := mediatest.Probe(t, path); len(p.Streams) != 2 || len(p.Packets) != 0 {
		t.Errorf("ffprobe: %d streams, %d packets; want 2 and none", len(p.Streams), len(p.Packets))
	}
	mkvmergeClean(t, path)
}
