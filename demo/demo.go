package demo

import (
	"context"
	"fmt"
	"time"

	moqexport "github.com/moq-export/moq-export"
	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/model"
)

// DefaultRenditions are the samples the demo broadcast offers unless told
// otherwise: H.264 with B-frames and AAC, which every container carries and
// Debian 12's ffmpeg 5.1 plays.
var DefaultRenditions = []string{"h264", "aac"}

// Options configures a demo broadcast.
type Options struct {
	// Renditions names the samples to publish (see moqexport.SampleNames);
	// each becomes a track of the same name. Empty means DefaultRenditions.
	Renditions []string
	// Loops is how many times each track repeats its sample before it
	// ends; 0 means forever (until the context ends). Each track loops on
	// its own sample's length, so a short sample never leaves a gap; all
	// tracks share one clock, so they stay aligned.
	Loops int
	// Realtime paces frames on the wall clock from the start; otherwise
	// frames are written as fast as possible.
	Realtime bool
	// KeepGroups, when positive, is how many groups each track keeps for
	// late consumers (see model.Track.SetKeepGroups). Tests that publish a
	// whole clip before reading it raise it. Zero keeps the groups of the
	// last KeepMedia on each track (at least model.DefaultKeepGroups).
	KeepGroups int
	// Offset is added to every timestamp: the broadcast looks as if it had
	// begun Offset before the first frame (as a recorder joining a long
	// live stream sees it).
	Offset time.Duration
}

// KeepMedia is how much of its recent media each demo track keeps by
// default: like a relay, which serves past groups to FETCH for a while, so
// that a recorder joining live can fetch its audio back to the video's
// keyframe.
const KeepMedia = 3 * time.Second

// keepGroups returns how many groups of sample s span KeepMedia.
func keepGroups(s *moqexport.Sample) int {
	groups := 0
	for _, f := range s.Frames {
		if f.Keyframe {
			groups++
		}
	}
	d := max(s.Duration(), 1)
	return max(model.DefaultKeepGroups, int((int64(groups)*KeepMedia.Microseconds()+d-1)/d))
}

// Catalog returns the hang catalog describing the samples, as a publisher
// would announce them.
func Catalog(names []string) (*catalog.Catalog, []*moqexport.Sample, error) {
	if len(names) == 0 {
		names = DefaultRenditions
	}
	cat := &catalog.Catalog{}
	samples := make([]*moqexport.Sample, 0, len(names))
	for _, name := range names {
		s, err := moqexport.LoadSample(name)
		if err != nil {
			return nil, nil, fmt.Errorf("demo: %w (have %v)", err, moqexport.SampleNames())
		}
		samples = append(samples, s)
		common := catalog.Common{Codec: s.Codec, Description: s.Description, Container: &catalog.Container{Kind: catalog.ContainerLegacy}}
		switch s.Kind {
		case "video":
			// B-frames: the encoder holds up to two frames back.
			jitter := 3 * 1000 / max(s.Framerate, 1)
			common.Jitter = &jitter
			w, h, fr := uint32(s.Width), uint32(s.Height), s.Framerate
			if cat.Video.Renditions == nil {
				cat.Video.Renditions = map[string]catalog.VideoConfig{}
			}
			cat.Video.Renditions[name] = catalog.VideoConfig{Common: common, CodedWidth: &w, CodedHeight: &h, Framerate: &fr}
		case "audio":
			if cat.Audio.Renditions == nil {
				cat.Audio.Renditions = map[string]catalog.AudioConfig{}
			}
			cat.Audio.Renditions[name] = catalog.AudioConfig{Common: common, SampleRate: uint32(s.SampleRate), NumberOfChannels: uint32(s.Channels)}
		default:
			return nil, nil, fmt.Errorf("demo: sample %q has unknown kind %q", name, s.Kind)
		}
	}
	return cat, samples, nil
}

// cursor is where one track of the demo is in its sample.
type cursor struct {
	s     *moqexport.Sample
	track *model.Track
	group *model.Group
	i     int   // next frame
	loop  int   // loops started before this one
	base  int64 // timestamp offset of this loop
	ended bool
}

// end closes the track (once).
func (c *cursor) end() {
	if c.ended {
		return
	}
	c.ended = true
	if c.group != nil {
		c.group.Close(nil)
	}
	c.track.Close(nil)
}

// Publish fills b with the demo broadcast and returns when every track has
// ended (after opts.Loops loops) or ctx is done; then it closes b.
func Publish(ctx context.Context, b *model.Broadcast, opts Options) error {
	cat, samples, err := Catalog(opts.Renditions)
	if err != nil {
		b.Close(err)
		return err
	}
	data, err := cat.Marshal()
	if err != nil {
		b.Close(err)
		return err
	}
	catTrack := b.CreateTrack(catalog.TrackName)
	g, err := catTrack.AppendGroup()
	if err != nil {
		return err
	}
	if err := g.WriteFrame(model.Frame{Payload: data}); err != nil {
		return err
	}
	g.Close(nil)

	// Each track loops on its own sample's length (a 2 s sample next to a
	// 4 s one plays twice per loop of the other, never leaving a gap); the
	// timestamps of every track follow one clock, so they stay aligned.
	cursors := make([]*cursor, len(samples))
	for i, s := range samples {
		cursors[i] = &cursor{s: s, track: b.CreateTrack(s.Name)}
		if opts.KeepGroups > 0 {
			cursors[i].track.SetKeepGroups(opts.KeepGroups)
		} else {
			cursors[i].track.SetKeepGroups(keepGroups(s))
		}
	}
	start := time.Now()
	defer func() {
		for _, c := range cursors {
			c.end()
		}
		b.Close(nil)
	}()
	for {
		// Next frame across tracks: the smallest decode-order head, by the
		// time it must be sent. A track at the end of its sample starts it
		// again, one sample length later, until its loops are done.
		var next *cursor
		for _, c := range cursors {
			if c.i == len(c.s.Frames) && !c.ended {
				if opts.Loops == 0 || c.loop+1 < opts.Loops {
					c.loop++
					c.i, c.base = 0, int64(c.loop)*c.s.Duration()
				} else {
					// Done: end the track now, so that no consumer
					// waits for it while the longer samples go on.
					c.end()
				}
			}
			if c.i < len(c.s.Frames) && (next == nil || c.s.Frames[c.i].Timestamp+c.base < next.s.Frames[next.i].Timestamp+next.base) {
				next = c
			}
		}
		if next == nil {
			break
		}
		f := next.s.Frames[next.i]
		ts := f.Timestamp + next.base
		if opts.Realtime {
			if wait := time.Until(start.Add(time.Duration(ts) * time.Microsecond)); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return ctx.Err()
				case <-t.C:
				}
			}
		} else if err := ctx.Err(); err != nil {
			return err
		}
		if f.Keyframe || next.group == nil {
			if next.group != nil {
				next.group.Close(nil)
			}
			if next.group, err = next.track.AppendGroup(); err != nil {
				return err
			}
		}
		if err := next.group.WriteFrame(model.Frame{Timestamp: ts + opts.Offset.Microseconds(), Payload: f.Payload}); err != nil {
			return err
		}
		next.i++
	}
	return nil
}
