package hang

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/moq-export/moq-export/catalog"
)

// rateSamples is how many frame timestamps a rate check looks at.
const rateSamples = 16

// rateCheck looks at the first frames of a track once and tells when their
// spacing is one no media has: a video frame rate outside 1-300 fps (or
// off by more than half from the catalog's framerate), or audio frames
// outside 1 ms-500 ms. That is what a timestamp read in the wrong
// timescale looks like (90 kHz read as microseconds plays 11 times too
// fast). Safe for concurrent use: the groups of a track are read
// concurrently.
type rateCheck struct {
	video     bool
	framerate float64 // the catalog's, 0 when absent
	name      string

	done atomic.Bool // fast path once checked
	mu   sync.Mutex
	ts   []int64
}

func newRateCheck(r catalog.Rendition) *rateCheck {
	c := &rateCheck{video: r.Kind == catalog.KindVideo, name: r.Name}
	if r.Video != nil && r.Video.Framerate != nil {
		c.framerate = *r.Video.Framerate
	}
	return c
}

// frame notes the timestamp (µs) of a frame and returns the warning, once,
// when the first frames' spacing is implausible. Once checked, it costs a
// load (it runs per frame on the group stream's goroutine: the check
// itself, with its large frame, is a function of its own).
func (c *rateCheck) frame(ts int64) string {
	if c.done.Load() {
		return ""
	}
	return c.note(ts)
}

// note is frame until the first frames were checked.
func (c *rateCheck) note(ts int64) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done.Load() {
		return ""
	}
	c.ts = append(c.ts, ts)
	if len(c.ts) < rateSamples {
		return ""
	}
	c.done.Store(true)
	ts2 := slices.Clone(c.ts)
	c.ts = nil
	slices.Sort(ts2)
	var deltas []int64
	for i := 1; i < len(ts2); i++ {
		if d := ts2[i] - ts2[i-1]; d > 0 {
			deltas = append(deltas, d)
		}
	}
	if len(deltas) == 0 {
		return fmt.Sprintf("track %q: %d frames share one timestamp", c.name, len(ts2))
	}
	slices.Sort(deltas)
	median := deltas[len(deltas)/2]
	if c.video {
		fps := 1e6 / float64(median)
		switch {
		case fps > 300 || fps < 1:
			return fmt.Sprintf("track %q: frames %d µs apart (%.1f fps): its timestamps are likely in another timescale than assumed", c.name, median, fps)
		case c.framerate > 0 && (fps > 1.5*c.framerate || fps < c.framerate/1.5):
			return fmt.Sprintf("track %q: frames %d µs apart (%.1f fps) while the catalog says %.3g fps: its timestamps are likely in another timescale than assumed", c.name, median, fps, c.framerate)
		}
		return ""
	}
	if median < 1000 || median > 500_000 {
		return fmt.Sprintf("track %q: audio frames %d µs apart: its timestamps are likely in another timescale than assumed", c.name, median)
	}
	return ""
}
