package mp4

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	amp4 "github.com/abema/go-mp4"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
)

// The last sample's duration, and the one before a discontinuity, are the
// ones the publisher gave (hang's end marker, mux.FrameEnder) rather than
// estimates.
// ffprobe reads the file's end from the last; the sample table is read
// for both (ffmpeg 5.1 reports VP9 packet durations from the frame rate).
func TestAFrameWithADurationGivesTheSampleItsDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		finished bool
	}{{"Fragmented", false}, {"Finished", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := mediatest.SampleInput("vp9", 1)
			n := len(in.Frames)
			const last, beforeGap = 100_000, 50_000 // µs; frames are 33 ms apart
			mid := n / 2
			for !in.Frames[mid].Keyframe {
				mid++ // the gap comes before a keyframe
			}
			for i := mid; i < n; i++ {
				in.Frames[i].Timestamp += 5_000_000 // a 5 s gap
			}
			in.Frames[mid].Discontinuity = true
			f, path := mediatest.CreateFile(t, "duration.mp4")
			opts := Options{}
			if tc.finished {
				opts.Path = path
			}
			w := NewWriter(f, opts)
			for _, tr := range mediatest.Tracks(in) {
				if err := w.AddTrack(tr); err != nil {
					t.Fatal(err)
				}
			}
			for i, fr := range in.Frames {
				err := w.WriteFrame(fr)
				switch {
				case err != nil:
				case i == mid-1:
					err = w.EndFrame(1, fr.Timestamp+beforeGap)
				case i == n-1:
					err = w.EndFrame(1, fr.Timestamp+last)
				}
				if err != nil {
					t.Fatal(err)
				}
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
			durs := sampleDurations(t, path)
			if len(durs) != n {
				t.Fatalf("%d sample durations, wrote %d samples", len(durs), n)
			}
			if durs[n-1] != 9000 {
				t.Errorf("the last sample lasts %d ticks, want 9000 (100 ms at 90 kHz)", durs[n-1])
			}
			// A finished file's table has no tfdt: the sample before the
			// gap spans it there.
			if !tc.finished && durs[mid-1] != 4500 {
				t.Errorf("the sample before the gap lasts %d ticks, want 4500 (50 ms)", durs[mid-1])
			}
		})
	}
}

// sampleDurations returns the duration of every sample of the file's
// only track, in ticks: from its trun boxes, or its stts.
func sampleDurations(t *testing.T, path string) []uint32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []uint32
	truns, err := amp4.ExtractBoxWithPayload(bytes.NewReader(b), nil, amp4.BoxPath{amp4.BoxTypeMoof(), amp4.BoxTypeTraf(), amp4.BoxTypeTrun()})
	if err != nil {
		t.Fatal(err)
	}
	for _, bx := range truns {
		for _, e := range bx.Payload.(*amp4.Trun).Entries {
			out = append(out, e.SampleDuration)
		}
	}
	if len(out) > 0 {
		return out
	}
	stts, err := amp4.ExtractBoxWithPayload(bytes.NewReader(b), nil, amp4.BoxPath{amp4.BoxTypeMoov(), amp4.BoxTypeTrak(), amp4.BoxTypeMdia(), amp4.BoxTypeMinf(), amp4.BoxTypeStbl(), amp4.BoxTypeStts()})
	if err != nil || len(stts) != 1 {
		t.Fatalf("stts: %v (%d boxes)", err, len(stts))
	}
	for _, e := range stts[0].Payload.(*amp4.Stts).Entries {
		for range e.SampleCount {
			out = append(out, e.SampleDelta)
		}
	}
	return out
}

// With a wall clock (a catalog's), the movie's creation_time is the
// wall-clock time of the first frame, in both forms, as ffprobe reads it.
func TestTheCreationTimeIsTheWallClockOfTheFirstFrame(t *testing.T) {
	t.Parallel()
	epoch := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC) // the broadcast's PTS 0
	for _, finished := range []bool{false, true} {
		t.Run(fmt.Sprint("finished=", finished), func(t *testing.T) {
			t.Parallel()
			in := mediatest.SampleInput("vp9", 1)
			for i := range in.Frames {
				in.Frames[i].Timestamp += 7_000_000 // the broadcast began 7 s before
			}
			f, path := mediatest.CreateFile(t, "dated.mp4")
			opts := Options{WallClock: func(ts int64) time.Time { return epoch.Add(time.Duration(ts) * time.Microsecond) }}
			if finished {
				opts.Path = path
			}
			w := NewWriter(f, opts)
			mediatest.Feed(t, w, in)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			mediatest.DecodeClean(t, path)
			out, _ := mediatest.Run(t, "ffprobe", "-v", "error", "-show_entries", "format_tags=creation_time", "-of", "default=nw=1:nk=1", path)
			if got, want := strings.TrimSpace(out), "2026-10-01T12:00:07.000000Z"; got != want {
				t.Fatalf("creation_time %q, want %q", got, want)
			}
		})
	}
}
