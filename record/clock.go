package record

import (
	"context"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/model"
)

// A catalog with a clock (its root "clock": the wall time of PTS 0) dates
// the recording by the publisher's time, not ours: a replayed archive or a
// delayed stream is named and dated when its media was made. The muxers
// date their files from the first frame they write (MKV DateUTC, MP4
// creation_time, HLS PROGRAM-DATE-TIME); {time} in a template and
// FileInfo.Start need the date before the file exists, so the recording
// looks at the first frame of the broadcast's first video rendition (its
// first audio one without video) before it opens its first output: the
// frame a live join starts the file with. A later output (Segment, Split)
// is dated by the frame it begins with.

// maxClockWait bounds how long the first output waits for a frame to date
// it by; without one it is dated by the wall clock, as without a clock.
const maxClockWait = 5 * time.Second

// clockWait is how long prepare waits for the first frame: the live
// delay, at least a second, at most maxClockWait.
func (r *Recorder) clockWait() time.Duration {
	return min(max(r.opts.Delay, time.Second), maxClockWait)
}

// firstTimestamp returns the media time of the first frame of the first
// video rendition of cat (of the first audio one when there is no video)
// in bc, waiting for it at most wait.
func firstTimestamp(ctx context.Context, bc *model.Broadcast, cat *catalog.Catalog, wait time.Duration) (int64, bool) {
	name := ""
	for _, kind := range []catalog.Kind{catalog.KindVideo, catalog.KindAudio} {
		for _, r := range cat.Renditions() {
			if r.Kind == kind && name == "" {
				name = r.Name
			}
		}
	}
	if name == "" {
		return 0, false
	}
	t, err := bc.Track(name)
	if err != nil {
		return 0, false
	}
	c := t.Subscribe(0)
	defer c.Close()
	rs := model.NewReadySet()
	c.Watch(rs)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		for {
			ev, ok := c.Next()
			if !ok {
				break
			}
			switch ev.Kind {
			case model.EventFrame:
				if !ev.Frame.Marker {
					return ev.Frame.Timestamp, true
				}
			case model.EventEnd:
				return 0, false
			}
		}
		select {
		case <-rs.Wakeup():
			rs.Take(nil)
		case <-timer.C:
			return 0, false
		case <-ctx.Done():
			return 0, false
		}
	}
}

// fileStart is the start of output n of rec, which {time} names: by the
// catalog's clock, the first frame's time (output 0) or the frame the
// output begins with (a later one); the wall clock now otherwise.
func (rec *Recording) fileStart(n int) time.Time {
	rec.mu.Lock()
	wall, first, hasFirst, seg := rec.wall, rec.firstTS, rec.hasFirst, rec.seg
	rec.mu.Unlock()
	if wall == nil {
		return time.Now()
	}
	if n > 0 && seg != nil {
		if ts, ok := seg.NextStart(); ok {
			return wall(ts)
		}
	}
	if n == 0 && hasFirst {
		return wall(first)
	}
	return time.Now()
}
