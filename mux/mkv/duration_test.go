package mkv

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
)

// A file whose last frame's end its publisher gave (hang's end marker,
// mux.FrameEnder) lasts up to that end, not one estimated frame past the
// last frame; an end given before a later frame changes nothing.
func TestTheFileEndsWhereItsLastFramesEndMarkerSays(t *testing.T) {
	t.Parallel()
	in := mediatest.SampleInput("vp9", 1)
	n := len(in.Frames)
	f, path := mediatest.CreateFile(t, "end.webm")
	w := NewWriter(f, Options{})
	mediatest.Write(t, w, mediatest.Tracks(in), in.Frames[:n/2])
	if err := w.EndFrame(1, in.Frames[n/2-1].Timestamp+20_000); err != nil {
		t.Fatal(err)
	}
	for _, fr := range in.Frames[n/2:] {
		if err := w.WriteFrame(fr); err != nil {
			t.Fatal(err)
		}
	}
	const last = 100_000 // µs, three frames' worth: no estimate gives it
	if err := w.EndFrame(1, in.Frames[n-1].Timestamp+last); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	mediatest.DecodeClean(t, path)
	p := mediatest.Probe(t, path)
	pk := p.PacketsOf(0)
	if len(pk) != n {
		t.Fatalf("%d packets, wrote %d", len(pk), n)
	}
	lastPTS, _ := strconv.ParseFloat(pk[n-1].PTSTime, 64)
	if d, _ := p.Format.Seconds(); math.Abs(d-(lastPTS+0.1)) > 0.0015 {
		t.Errorf("file lasts %v s, want %v (the last frame's end)", d, lastPTS+0.1)
	}
	mkvmergeClean(t, path)
}

// With a wall clock (a catalog's), the Info's DateUTC is the wall-clock
// time of the first frame, which ffprobe reads as creation_time.
func TestTheDateIsTheWallClockOfTheFirstFrame(t *testing.T) {
	t.Parallel()
	in := mediatest.SampleInput("vp9", 1)
	for i := range in.Frames {
		in.Frames[i].Timestamp += 7_000_000 // the broadcast began 7 s before
	}
	epoch := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC) // its PTS 0
	f, path := mediatest.CreateFile(t, "dated.webm")
	w := NewWriter(f, Options{WallClock: func(ts int64) time.Time { return epoch.Add(time.Duration(ts) * time.Microsecond) }})
	mediatest.Feed(t, w, in)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	mediatest.DecodeClean(t, path)
	out, _ := mediatest.Run(t, "ffprobe", "-v", "error", "-show_entries", "format_tags=creation_time", "-of", "default=nw=1:nk=1", path)
	if got, want := strings.TrimSpace(out), "2026-10-01T12:00:07.000000Z"; got != want {
		t.Fatalf("creation_time %q, want %q", got, want)
	}
	mkvmergeClean(t, path)
}

// A frame that carries its duration (its end marker came before it was
// written, mux.Frame.Duration) is a BlockGroup with that BlockDuration:
// ffprobe gives the packet that duration, a delta frame stays one
// (ReferenceBlock) and a keyframe stays one, and mkvmerge reads the file
// clean.
func TestAFrameThatCarriesItsDurationIsWrittenWithABlockDuration(t *testing.T) {
	t.Parallel()
	in := mediatest.SampleInput("vp9", 1)
	n := len(in.Frames)
	marked := map[int]int64{n/2 - 1: 20_000, n - 1: 100_000, 0: 15_000} // frame index: µs
	if in.Frames[n/2-1].Keyframe || !in.Frames[0].Keyframe {
		t.Fatal("the sample's frame layout changed: want a delta frame before the middle and a keyframe first")
	}
	for i, d := range marked {
		in.Frames[i].Duration = d
	}
	path := muxFile(t, "durations.webm", Options{}, in)
	mediatest.DecodeClean(t, path)
	p := mediatest.Probe(t, path)
	pk := p.PacketsOf(0)
	if len(pk) != n {
		t.Fatalf("%d packets, wrote %d", len(pk), n)
	}
	for i, k := range pk {
		if key := strings.Contains(k.Flags, "K"); key != in.Frames[i].Keyframe {
			t.Errorf("packet %d: keyframe %v, wrote %v", i, key, in.Frames[i].Keyframe)
		}
		d, ok := marked[i]
		if !ok {
			continue
		}
		got, err := strconv.ParseFloat(k.DurationTime, 64)
		if err != nil || math.Abs(got-float64(d)/1e6) > 0.0005 {
			t.Errorf("packet %d: duration %q, want %v s", i, k.DurationTime, float64(d)/1e6)
		}
	}
	lastPTS, _ := strconv.ParseFloat(pk[n-1].PTSTime, 64)
	if d, _ := p.Format.Seconds(); math.Abs(d-(lastPTS+0.1)) > 0.0015 {
		t.Errorf("file lasts %v s, want %v (the last frame's end)", d, lastPTS+0.1)
	}
	mkvmergeClean(t, path)
	// mkvinfo lists the BlockDurations: one per marked frame.
	out, _ := mediatest.Run(t, "mkvinfo", "-v", path)
	if got := strings.Count(out, "Block duration:"); got != len(marked) {
		t.Errorf("mkvinfo lists %d block durations, want %d", got, len(marked))
	}
}

// TestTheLastFrameAfterADiscontinuityLastsAFrameOfTheNewTimeline: the
// estimate of a frame's gap, which the frame grid and the last frame's
// Duration share, starts again at a discontinuity. A publisher that
// restarts at half its frame rate ends the file one of its new frames
// after the last one, not one of the old timeline's. (Before the grid and
// Duration shared one estimate, Duration's kept the old timeline's
// smallest gap across discontinuities.)
func TestTheLastFrameAfterADiscontinuityLastsAFrameOfTheNewTimeline(t *testing.T) {
	t.Parallel()
	mediatest.RequireTools(t, "ffmpeg", "ffprobe", "mkvmerge")
	in := mediatest.SampleInput("vp8", 1)
	n := len(in.Frames)
	gap := in.Frames[1].Timestamp - in.Frames[0].Timestamp
	f, path := mediatest.CreateFile(t, "slower.webm")
	w := NewWriter(f, Options{})
	mediatest.Write(t, w, mediatest.Tracks(in), in.Frames)
	resume := in.Frames[n-1].Timestamp + 2_000_000
	last := int64(0)
	for i, fr := range in.Frames[:10] {
		fr.Timestamp = resume + int64(i)*2*gap // half the frame rate
		fr.Discontinuity = i == 0
		if err := w.WriteFrame(fr); err != nil {
			t.Fatal(err)
		}
		last = fr.Timestamp
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	mediatest.DecodeClean(t, path)
	m := mkvmergeClean(t, path)
	want := (last - in.Frames[0].Timestamp + 2*gap) / 1000 // ms
	if d := m.Container.Properties.Duration / 1e6; d < want-1 || d > want+1 {
		t.Errorf("duration %d ms, want %d ms: the last frame lasts %d ms, the new timeline's gap", d, want, 2*gap/1000)
	}
}
