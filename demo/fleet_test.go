package demo

import (
	"context"
	"errors"
	"testing"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux/mkv"
)

// reader reads one track of a broadcast in process.
type reader struct {
	c  *model.Consumer
	rs *model.ReadySet
}

func newReader(t *testing.T, b *model.Broadcast, name string) *reader {
	t.Helper()
	tr, err := b.Track(name)
	if err != nil {
		t.Fatal(err)
	}
	r := &reader{c: tr.Subscribe(1 << 62), rs: model.NewReadySet()}
	r.c.Watch(r.rs)
	t.Cleanup(r.c.Close)
	return r
}

// next waits for the next frame; false when the track ended.
func (r *reader) next() (model.Frame, bool) {
	for {
		r.rs.Take(nil) // re-arm: a consumer is listed once until taken
		ev, ok := r.c.Next()
		if !ok {
			<-r.rs.Wakeup()
			continue
		}
		switch ev.Kind {
		case model.EventFrame:
			return ev.Frame, true
		case model.EventEnd:
			return model.Frame{}, false
		}
	}
}

// secondKeyframe returns the timestamp of the second keyframe of s and how
// many frames come before it.
func secondKeyframe(s *samples.Sample) (int64, int) {
	seen := 0
	for i, f := range s.Frames {
		if f.Keyframe {
			if seen++; seen == 2 {
				return f.Timestamp, i
			}
		}
	}
	panic("sample has one group")
}

func TestHoldAndPause(t *testing.T) {
	b := model.NewBroadcast("paused")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hold := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- Publish(ctx, b, Options{Pause: true, Hold: hold, KeepGroups: 1 << 20}) }()

	// Held: the catalog is published, the media is not.
	w, err := catalog.Watch(b, catalog.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Next(ctx); err != nil {
		t.Fatal(err)
	}
	w.Close()
	video, audio := newReader(t, b, "h264"), newReader(t, b, "aac")
	for _, name := range DefaultRenditions {
		tr, _ := b.Track(name)
		if _, ok := tr.OldestTimestamp(); ok {
			t.Errorf("track %s has media before Hold was closed", name)
		}
	}
	close(hold)

	// Paused: exactly the first video group, and the audio before its end
	// (one clock: the next frame across tracks is the earliest), then
	// nothing until ctx ends; then the tracks end cleanly.
	end, want := secondKeyframe(samples.MustLoadSample("h264"))
	for range want {
		if _, ok := video.next(); !ok {
			t.Fatal("video ended before its first group was published")
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Publish returned %v, want context.Canceled", err)
	}
	if f, ok := video.next(); ok {
		t.Errorf("video frame at %d µs published after the pause at %d µs", f.Timestamp, end)
	}
	n := 0
	for {
		f, ok := audio.next()
		if !ok {
			break
		}
		if f.Timestamp >= end {
			t.Errorf("audio frame at %d µs published after the pause at %d µs", f.Timestamp, end)
		}
		n++
	}
	if n == 0 {
		t.Error("no audio published before the pause")
	}
}

func TestVideoBitratePadsFramesThatStillDecode(t *testing.T) {
	const bitrate = 4_000_000
	s, err := paddedSample(samples.MustLoadSample("h264"), bitrate)
	if err != nil {
		t.Fatal(err)
	}
	var bytes int
	for _, f := range s.Frames {
		bytes += len(f.Payload)
	}
	if got := float64(bytes) * 8 / (float64(s.Duration()) / 1e6); got < bitrate || got > bitrate*1.1 {
		t.Errorf("padded to %.0f b/s, want %d to 10%% above", got, bitrate)
	}
	if again, _ := paddedSample(samples.MustLoadSample("h264"), bitrate); again != s {
		t.Error("a second broadcast at the same bitrate got its own copy")
	}
	f, path := mediatest.CreateFile(t, "padded.mkv")
	w := mkv.NewWriter(f, mkv.Options{})
	mediatest.Feed(t, w, mediatest.InputOf(s, 1))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	mediatest.DecodeClean(t, path)
	if n := len(mediatest.Probe(t, path).PacketsOf(0)); n != len(s.Frames) {
		t.Errorf("ffprobe reads %d packets, want %d", n, len(s.Frames))
	}
	if _, err := paddedSample(samples.MustLoadSample("vp9"), bitrate); err == nil {
		t.Error("VP9 was padded with an H.264 filler")
	}
	if _, err := newPlanAt(nil, catalog.ContainerCMAF, bitrate); err == nil {
		t.Error("cmaf frames were padded")
	}
}
