package mp4_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/moq-export/moq-export/internal/browsertest"
	"github.com/moq-export/moq-export/internal/mediatest"
	"github.com/moq-export/moq-export/mux/mp4"
)

// TestBrowserPlaysAndSeeksTheFinishedMP4 loads a finished H.264+AAC
// recording over HTTP in headless Chromium's <video>: it reports the
// recording's duration, seeks to the middle and decodes frames there.
func TestBrowserPlaysAndSeeksTheFinishedMP4(t *testing.T) {
	b := browsertest.New(t, browsertest.Options{Flags: []string{"autoplay-policy=no-user-gesture-required"}})
	ins := []mediatest.Input{loop(mediatest.SampleInput("h264", 1), 3), loop(mediatest.SampleInput("aac", 2), 3)}
	path := muxFile(t, "talk.mp4", true, mp4.Options{}, ins...)
	dir := filepath.Dir(path)
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte("<!doctype html><title>mp4</title>"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := browsertest.ServeDir(t, dir)
	p, err := b.PlayVideo(base+"/index.html", base+"/talk.mp4")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("chromium: %+v", p)
	want := 3 * float64(mediatest.LoadSample("aac").Duration()) / 1e6
	if p.Duration < want-0.05 || p.Duration > want+0.05 {
		t.Errorf("duration %.3f s, want %.3f s", p.Duration, want)
	}
	if p.Width != 320 || p.Height != 180 {
		t.Errorf("video size %dx%d, want 320x180", p.Width, p.Height)
	}
	if p.CurrentTime <= p.SeekedTo || p.FramesDecoded < p.FramesAtSeek+5 {
		t.Errorf("after the seek to %.2f s: at %.2f s, %d frames decoded (%d at the seek)", p.SeekedTo, p.CurrentTime, p.FramesDecoded, p.FramesAtSeek)
	}
}
