package mkv

import (
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/browsertest"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
)

// TestBrowserPlaysAndSeeksAWebM loads a finalized VP9+Opus WebM over HTTP
// in headless Chromium's <video>: it reports the duration from Info, seeks
// to the middle through the Cues and decodes frames there.
func TestBrowserPlaysAndSeeksAWebM(t *testing.T) {
	b := browsertest.New(t, browsertest.Options{Flags: []string{"autoplay-policy=no-user-gesture-required"}})
	var ins []input
	longest := int64(0)
	for i, name := range []string{"vp9", "opus"} {
		in := mediatest.SampleInput(name, i+1)
		period := mediatest.LoadSample(name).Duration()
		longest = max(longest, 4*period)
		looped := input{Track: in.Track}
		for k := range 4 {
			looped.Frames = append(looped.Frames, in.Shift(int64(k)*period).Frames...)
		}
		ins = append(ins, looped)
	}
	p, err := b.PlayFile(muxFile(t, "talk.webm", Options{DocType: "webm"}, ins...))
	if err != nil {
		t.Fatal(err)
	}
	browsertest.CheckPlayback(t, p, float64(longest)/1e6, 0.1, 320, 180)
}
