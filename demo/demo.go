package demo

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/model"
)

// DefaultRenditions are the samples the demo broadcast offers unless told
// otherwise: H.264 with B-frames and AAC, which every container carries and
// Debian 12's ffmpeg 5.1 plays.
var DefaultRenditions = []string{"h264", "aac"}

// Simulcast is the demo of a broadcast with several renditions of each
// kind, what an HLS package records as variants: H.264 at 640x360 and at
// 320x180 (keyframes aligned), and two AAC audio renditions.
var Simulcast = []string{"360p=h264-360p", "180p=h264", "main=aac", "alt=aac"}

// Options configures a demo broadcast.
type Options struct {
	// Renditions names the samples to publish (see samples.SampleNames);
	// each becomes a track of the same name, or of NAME for NAME=SAMPLE
	// (one sample twice under two names). Empty means DefaultRenditions.
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
	// Container is how the tracks package their frames: "legacy" (the
	// default), "loc", or "cmaf", shaped as `moq import fmp4` publishes
	// ffmpeg's fragmented MP4: tracks named 0.m4s, 1.m4s, ..., the init in
	// the catalog, one moof+mdat per frame at the media's timescale (the
	// samples' microseconds for video, the sample rate for audio), and
	// every timestamp moved by the largest reorder delay, as the tfdt
	// cannot go below zero. Package subscribe sends a cmaf track's frames
	// as they are and the others in their container.
	Container catalog.ContainerKind
	// Hold, when set, holds the media back: the catalog is published at
	// once, the first frame when Hold is closed (the clock starts then). A
	// benchmark starts many broadcasts together with it, once a recorder
	// subscribed to each.
	Hold <-chan struct{}
	// Pause publishes the first video group (and the audio alongside it),
	// closes the groups and then publishes nothing more until ctx ends,
	// when the tracks end cleanly: a broadcast announced and subscribed
	// whose media paused, what an idle recording waits on.
	Pause bool
	// VideoBitrate, when positive, pads every H.264/H.265 video frame with
	// a filler-data NAL unit (which decoders skip) up to this average
	// bitrate in bits per second: the same pictures at a higher load.
	// Legacy and loc containers only. The padded frames are shared by
	// every broadcast published with the same sample and bitrate.
	VideoBitrate int
	// Published, when set, counts the media frames published (catalog
	// frames aside): what a recorder that took the broadcast from its
	// first frame must have written.
	Published *atomic.Int64
	// Late names samples that join the broadcast once LateAfter of media
	// has been published: a catalog update (a new group of the catalog
	// track) adds them, as a publisher adding a rendition mid-broadcast
	// does, and their frames start at LateAfter on the shared clock.
	Late      []string
	LateAfter time.Duration
	// Markers publishes the newest hang draft's empty-payload markers:
	// every group of a video track ends with an end marker, the exclusive
	// end of its last frame in decode order (where it stops presenting);
	// and every second video group, every track puts a discontinuity
	// marker (a group holding one empty payload) before its next group,
	// the timeline going on forward. They are no media: Published does
	// not count them.
	Markers bool
	// Stall stalls one rendition for a while, as an encoder or a sender
	// that hangs does, while the others go on: see Stall.
	Stall Stall
}

// Stall names a rendition whose frames of a span of media time are
// published late, at once, when the stall ends (in Realtime, For after
// From on the wall clock), behind the other renditions' frames of that
// time, which are published on time. A zero For stalls nothing.
type Stall struct {
	Rendition string
	From, For time.Duration
}

// KeepMedia is how much of its recent media each demo track keeps by
// default: like a relay, which serves past groups to FETCH for a while, so
// that a recorder joining live can fetch its audio back to the video's
// keyframe.
const KeepMedia = 3 * time.Second

// keepGroups returns how many groups of sample s span KeepMedia.
func keepGroups(s *samples.Sample) int {
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
// would announce them in the legacy container.
func Catalog(names []string) (*catalog.Catalog, error) {
	return CatalogIn(names, catalog.ContainerLegacy)
}

// SamplesIn lists the samples that have a form in container kind (all of
// them but VP8 and AC-3 in cmaf), sorted.
func SamplesIn(kind catalog.ContainerKind) []string {
	var out []string
	for _, n := range samples.SampleNames() {
		if _, err := newPlan([]string{n}, kind); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// CatalogIn is Catalog for the container kind (see Options.Container); it
// fails for a sample that has no form in that container.
func CatalogIn(names []string, kind catalog.ContainerKind) (*catalog.Catalog, error) {
	p, err := newPlan(names, kind)
	if err != nil {
		return nil, err
	}
	return p.cat, nil
}

// plan is what a demo broadcast publishes: its catalog and, per sample, the
// track name and (cmaf) the packaging.
type plan struct {
	cat     *catalog.Catalog
	samples []*samples.Sample
	names   []string     // track name per sample
	cmaf    []*cmafTrack // per sample, cmaf only
	shift   int64        // µs added to every timestamp (cmaf)
}

func newPlan(names []string, kind catalog.ContainerKind) (*plan, error) {
	return newPlanAt(names, kind, 0)
}

// newPlanAt is newPlan with the video padded to videoBitrate (0: as it is).
func newPlanAt(names []string, kind catalog.ContainerKind, videoBitrate int) (*plan, error) {
	if len(names) == 0 {
		names = DefaultRenditions
	}
	if kind == "" {
		kind = catalog.ContainerLegacy
	}
	switch kind {
	case catalog.ContainerLegacy, catalog.ContainerLOC, catalog.ContainerCMAF:
	default:
		return nil, fmt.Errorf("demo: no %q container (legacy, loc or cmaf)", kind)
	}
	p := &plan{cat: &catalog.Catalog{}}
	for _, name := range names {
		track, sample, alias := strings.Cut(name, "=")
		if !alias {
			sample = name
		}
		s, err := samples.LoadSample(sample)
		if err != nil {
			return nil, fmt.Errorf("demo: %w (have %v)", err, samples.SampleNames())
		}
		if alias {
			if track == "" || strings.ContainsAny(track, "/=") {
				return nil, fmt.Errorf("demo: rendition name %q: want NAME=SAMPLE with a plain NAME", name)
			}
			c := *s
			c.Name = track
			s = &c
		}
		if videoBitrate > 0 && s.Kind == "video" {
			if kind == catalog.ContainerCMAF {
				return nil, fmt.Errorf("demo: VideoBitrate pads legacy or loc frames, not %s", kind)
			}
			if s, err = paddedSample(s, videoBitrate); err != nil {
				return nil, err
			}
		}
		if s.Kind == "text" && kind == catalog.ContainerCMAF {
			return nil, fmt.Errorf("demo: no cmaf form of the text sample %q (legacy or loc)", s.Name)
		}
		p.samples = append(p.samples, s)
		if kind == catalog.ContainerCMAF {
			// The tfdt cannot go below zero: every track moves by the
			// largest reorder delay, so they stay aligned.
			p.shift = max(p.shift, reorderDelay(s))
		}
	}
	for i, s := range p.samples {
		name := s.Name
		common := catalog.Common{Codec: s.Codec, Description: s.Description, Container: &catalog.Container{Kind: kind}}
		if kind == catalog.ContainerCMAF {
			name = fmt.Sprintf("%d.m4s", i)
			t, err := newCMAFTrack(s, p.shift)
			if err != nil {
				return nil, err
			}
			p.cmaf = append(p.cmaf, t)
			common.Container.Init = base64.StdEncoding.EncodeToString(t.init)
			if !strings.HasPrefix(s.Codec, "avc1") && !strings.HasPrefix(s.Codec, "hvc1") {
				// Like the importer: only H.264/H.265 get a description
				// besides the init.
				common.Description = nil
			}
		}
		p.names = append(p.names, name)
		switch s.Kind {
		case "video":
			// B-frames: the encoder holds up to two frames back.
			jitter := 3 * 1000 / max(s.Framerate, 1)
			common.Jitter = &jitter
			w, h, fr := uint32(s.Width), uint32(s.Height), s.Framerate
			if p.cat.Video.Renditions == nil {
				p.cat.Video.Renditions = map[string]catalog.VideoConfig{}
			}
			p.cat.Video.Renditions[name] = catalog.VideoConfig{Common: common, CodedWidth: &w, CodedHeight: &h, Framerate: &fr}
		case "audio":
			if p.cat.Audio.Renditions == nil {
				p.cat.Audio.Renditions = map[string]catalog.AudioConfig{}
			}
			p.cat.Audio.Renditions[name] = catalog.AudioConfig{Common: common, SampleRate: uint32(s.SampleRate), NumberOfChannels: uint32(s.Channels)}
		case "text":
			if p.cat.Text.Renditions == nil {
				p.cat.Text.Renditions = map[string]catalog.TextConfig{}
			}
			p.cat.Text.Renditions[name] = catalog.TextConfig{Format: s.Codec, Lang: "en", Label: "English", Container: common.Container}
		default:
			return nil, fmt.Errorf("demo: sample %q has unknown kind %q", s.Name, s.Kind)
		}
	}
	return p, nil
}

// catalogWithout returns p's catalog without the renditions of samples
// from index n on (the late ones).
func catalogWithout(p *plan, n int) *catalog.Catalog {
	c := *p.cat
	c.Video.Renditions, c.Audio.Renditions, c.Text.Renditions = nil, nil, nil
	for _, name := range p.names[:n] {
		if v, ok := p.cat.Video.Renditions[name]; ok {
			if c.Video.Renditions == nil {
				c.Video.Renditions = map[string]catalog.VideoConfig{}
			}
			c.Video.Renditions[name] = v
		}
		if a, ok := p.cat.Audio.Renditions[name]; ok {
			if c.Audio.Renditions == nil {
				c.Audio.Renditions = map[string]catalog.AudioConfig{}
			}
			c.Audio.Renditions[name] = a
		}
		if x, ok := p.cat.Text.Renditions[name]; ok {
			if c.Text.Renditions == nil {
				c.Text.Renditions = map[string]catalog.TextConfig{}
			}
			c.Text.Renditions[name] = x
		}
	}
	return &c
}

// cursor is where one track of the demo is in its sample.
type cursor struct {
	s     *samples.Sample
	cmaf  *cmafTrack // nil unless the track is cmaf
	track *model.Track
	group *model.Group
	i     int   // next frame
	loop  int   // loops started before this one
	base  int64 // timestamp offset of this loop
	start int64 // timestamp offset of the first loop (a late track's join time)
	late  bool  // a late track that has not joined yet
	ended bool
	// Options.Markers: disc opens the next group with a discontinuity
	// marker; ends[i], when set, is where frame i stops presenting (a
	// sample time), for the end marker of a group that frame closes;
	// shift moves a sample time to the published one.
	disc     bool
	ends     []int64
	shift    int64
	last     int   // the frame written last, in the loop at lastBase
	lastBase int64 // (ends only)
	// stallFrom and stallTo: Options.Stall's span, for its rendition
	// (stallTo 0: none).
	stallFrom, stallTo int64
}

// due returns the sample time at which the next frame is published: its
// own, or the end of the stall it falls in.
func (c *cursor) due() int64 {
	ts := c.s.Frames[c.i].Timestamp + c.base
	if ts >= c.stallFrom && ts < c.stallTo {
		return c.stallTo
	}
	return ts
}

// closeGroup closes the open group, with an end marker after its last
// frame when the cursor writes them.
func (c *cursor) closeGroup() error {
	if c.group == nil {
		return nil
	}
	if c.ends != nil {
		end := c.lastBase + c.ends[c.last]
		if err := c.group.WriteFrame(model.Frame{Timestamp: end + c.shift, Marker: true}); err != nil {
			return err
		}
	}
	c.group.Close(nil)
	c.group = nil
	return nil
}

// discontinuity publishes the discontinuity marker at ts (a sample time).
func (c *cursor) discontinuity(ts int64) error {
	c.disc = false
	g, err := c.track.AppendGroup()
	if err != nil {
		return err
	}
	if err := g.WriteFrame(model.Frame{Timestamp: ts + c.shift, Marker: true}); err != nil {
		return err
	}
	g.Close(nil)
	return nil
}

// open creates the cursor's track in b.
func (c *cursor) open(b *model.Broadcast, name string, opts Options) {
	c.track = b.CreateTrack(name)
	if opts.KeepGroups > 0 {
		c.track.SetKeepGroups(opts.KeepGroups)
	} else {
		c.track.SetKeepGroups(keepGroups(c.s))
	}
}

// end closes the track (once).
func (c *cursor) end() {
	if c.ended || c.track == nil {
		return
	}
	c.ended = true
	c.closeGroup()
	c.track.Close(nil)
}

// Publish fills b with the demo broadcast and returns when every track has
// ended (after opts.Loops loops) or ctx is done; then it closes b.
func Publish(ctx context.Context, b *model.Broadcast, opts Options) error {
	early := opts.Renditions
	if len(early) == 0 {
		early = DefaultRenditions
	}
	p, err := newPlanAt(append(append([]string(nil), early...), opts.Late...), opts.Container, opts.VideoBitrate)
	if err != nil {
		b.Close(err)
		return err
	}
	// Until the late samples join, the catalog lists the others only.
	data, err := catalogWithout(p, len(early)).Marshal()
	if err != nil {
		b.Close(err)
		return err
	}
	catTrack := b.CreateTrack(catalog.TrackName)
	writeCatalog := func(data []byte) error {
		g, err := catTrack.AppendGroup()
		if err != nil {
			return err
		}
		if err := g.WriteFrame(model.Frame{Payload: data}); err != nil {
			return err
		}
		g.Close(nil)
		return nil
	}
	if err := writeCatalog(data); err != nil {
		return err
	}

	// Each track loops on its own sample's length (a 2 s sample next to a
	// 4 s one plays twice per loop of the other, never leaving a gap); the
	// timestamps of every track follow one clock, so they stay aligned.
	cursors := make([]*cursor, len(p.samples))
	lateAt := opts.LateAfter.Microseconds()
	for i, s := range p.samples {
		cursors[i] = &cursor{s: s, shift: p.shift + opts.Offset.Microseconds()}
		if opts.Markers && s.Kind == "video" {
			cursors[i].ends = presentationEnds(s)
		}
		if p.cmaf != nil {
			cursors[i].cmaf = p.cmaf[i]
		}
		if st := opts.Stall; st.For > 0 && p.names[i] == st.Rendition {
			cursors[i].stallFrom, cursors[i].stallTo = st.From.Microseconds(), (st.From + st.For).Microseconds()
		}
		if i >= len(early) {
			cursors[i].late, cursors[i].start, cursors[i].base = true, lateAt, lateAt
			continue
		}
		cursors[i].open(b, p.names[i], opts)
	}
	waiting := len(opts.Late) // late cursors not joined yet
	defer func() {
		for _, c := range cursors {
			c.end()
		}
		b.Close(nil)
	}()
	if opts.Hold != nil {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-opts.Hold:
		}
	}
	start := time.Now()
	videoGroups := 0
	markedGroups := 0 // video groups opened, for Markers
	// One timer paces every frame (a timer per frame cost an allocation
	// and a timer-heap insert each, for 1,000 broadcasts 77,000 a second).
	pace := time.NewTimer(time.Hour)
	defer pace.Stop()
	for {
		// Next frame across tracks: the smallest decode-order head, by the
		// time it must be sent. A track at the end of its sample starts it
		// again, one sample length later, until its loops are done.
		var next *cursor
		for _, c := range cursors {
			if c.late {
				continue
			}
			if c.i == len(c.s.Frames) && !c.ended {
				if opts.Loops == 0 || c.loop+1 < opts.Loops {
					c.loop++
					c.i, c.base = 0, c.start+int64(c.loop)*c.s.Duration()
				} else {
					// Done: end the track now, so that no consumer
					// waits for it while the longer samples go on.
					c.end()
				}
			}
			if c.i < len(c.s.Frames) && (next == nil || c.due() < next.due()) {
				next = c
			}
		}
		if waiting > 0 && (next == nil || next.s.Frames[next.i].Timestamp+next.base >= lateAt) {
			// The clock reached LateAfter: the late samples join.
			for i, c := range cursors {
				if c.late {
					c.late = false
					c.open(b, p.names[i], opts)
				}
			}
			waiting = 0
			data, err := p.cat.Marshal()
			if err != nil {
				return err
			}
			if err := writeCatalog(data); err != nil {
				return err
			}
			continue
		}
		if next == nil {
			break
		}
		f := next.s.Frames[next.i]
		ts := f.Timestamp + next.base
		if opts.Realtime {
			if wait := time.Until(start.Add(time.Duration(next.due()) * time.Microsecond)); wait > 0 {
				pace.Reset(wait)
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-pace.C:
				}
			}
		} else if err := ctx.Err(); err != nil {
			return err
		}
		if opts.Pause && next.s.Kind == "video" && f.Keyframe {
			if videoGroups++; videoGroups > 1 {
				return pause(ctx, cursors)
			}
		}
		if f.Keyframe || next.group == nil {
			if err := next.closeGroup(); err != nil {
				return err
			}
			if opts.Markers && next.s.Kind == "video" && f.Keyframe {
				if markedGroups++; markedGroups%2 == 0 {
					for _, c := range cursors {
						c.disc = c.track != nil
					}
				}
			}
			if next.disc {
				if err := next.discontinuity(ts); err != nil {
					return err
				}
			}
			if next.group, err = next.track.AppendGroup(); err != nil {
				return err
			}
		}
		frame := model.Frame{Timestamp: ts + p.shift + opts.Offset.Microseconds(), Payload: f.Payload}
		if next.cmaf != nil {
			base := next.base + opts.Offset.Microseconds()
			if frame.Payload, err = next.cmaf.fragment(f, next.i, base, f.Timestamp+p.shift); err != nil {
				return err
			}
		}
		if err := next.group.WriteFrame(frame); err != nil {
			return err
		}
		next.last, next.lastBase = next.i, next.base
		if opts.Published != nil {
			opts.Published.Add(1)
		}
		next.i++
	}
	return nil
}

// presentationEnds returns, for each frame of s, where it stops
// presenting: the next presentation time of the sample, or the sample's
// end (where its next loop begins) for the last.
func presentationEnds(s *samples.Sample) []int64 {
	pts := make([]int64, len(s.Frames))
	for i, f := range s.Frames {
		pts[i] = f.Timestamp
	}
	sorted := slices.Clone(pts)
	slices.Sort(sorted)
	ends := make([]int64, len(pts))
	for i, t := range pts {
		j, _ := slices.BinarySearch(sorted, t+1)
		ends[i] = sorted[0] + s.Duration()
		if j < len(sorted) {
			ends[i] = sorted[j]
		}
	}
	return ends
}

// pause closes the open group of every track and waits for ctx: the
// broadcast stays announced and its tracks open, with nothing sent.
func pause(ctx context.Context, cursors []*cursor) error {
	for _, c := range cursors {
		if c.group != nil {
			c.group.Close(nil)
			c.group = nil
		}
	}
	<-ctx.Done()
	return ctx.Err()
}
