package mkv

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/moq-export/moq-export/internal/browsertest"
	"github.com/moq-export/moq-export/internal/mediatest"
)

// TestBrowserPlaysAndSeeksAWebM loads a finalized VP9+Opus WebM over HTTP
// in headless Chromium's <video>: it reports the duration from Info, seeks
// to the middle through the Cues and decodes frames there.
func TestBrowserPlaysAndSeeksAWebM(t *testing.T) {
	b := browsertest.New(t, browsertest.Options{Flags: []string{"autoplay-policy=no-user-gesture-required"}})
	var ins []input
	for i, name := range []string{"vp9", "opus"} {
		in := mediatest.SampleInput(name, i+1)
		period := mediatest.LoadSample(name).Duration()
		looped := input{Track: in.Track}
		for k := range 4 {
			looped.Frames = append(looped.Frames, in.Shift(int64(k)*period).Frames...)
		}
		ins = append(ins, looped)
	}
	path := muxFile(t, "talk.webm", Options{DocType: "webm"}, ins...)
	dir := filepath.Dir(path)
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte("<!doctype html><title>webm</title>"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := browsertest.ServeDir(t, dir)
	p, err := b.PlayVideo(base+"/index.html", base+"/talk.webm")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("chromium: %+v", p)
	// The longest track's span: 4 loops of the longer of the two samples.
	want := 4 * float64(max(mediatest.LoadSample("vp9").Duration(), mediatest.LoadSample("opus").Duration())) / 1e6
	if p.Duration < want-0.1 || p.Duration > want+0.1 {
		t.Errorf("duration %.3f s, want %.3f s", p.Duration, want)
	}
	if p.Width != 320 || p.Height != 180 {
		t.Errorf("video size %dx%d, want 320x180", p.Width, p.Height)
	}
	if p.CurrentTime <= p.SeekedTo || p.FramesDecoded < p.FramesAtSeek+5 {
		t.Errorf("after the seek to %.2f s: at %.2f s, %d frames decoded (%d at the seek)", p.SeekedTo, p.CurrentTime, p.FramesDecoded, p.FramesAtSeek)
	}
}
