package mp4_test

import (
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/browsertest"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux/mp4"
)

// TestBrowserPlaysAndSeeksTheFinishedMP4 loads a finished H.264+AAC
// recording over HTTP in headless Chromium's <video>: it reports the
// recording's duration, seeks to the middle and decodes frames there.
func TestBrowserPlaysAndSeeksTheFinishedMP4(t *testing.T) {
	b := browsertest.New(t, browsertest.Options{Flags: []string{"autoplay-policy=no-user-gesture-required"}})
	ins := []mediatest.Input{loop(mediatest.SampleInput("h264", 1), 3), loop(mediatest.SampleInput("aac", 2), 3)}
	p, err := b.PlayFile(muxFile(t, "talk.mp4", true, mp4.Options{}, ins...))
	if err != nil {
		t.Fatal(err)
	}
	browsertest.CheckPlayback(t, p, 3*float64(mediatest.LoadSample("aac").Duration())/1e6, 0.05, 320, 180)
}
