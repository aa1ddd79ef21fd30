package export_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/segment"
)

// recorder is a Muxer that remembers every call.
type recorder struct {
	tracks  map[int]mux.Track
	frames  []mux.Frame
	discs   []int
	removed []int
	closed  bool
	refuse  map[string]bool // codec families refused as unsupported
	late    bool            // refuse tracks after the first frame
	stats   mux.Stats
	drop    int     // frames to drop (and count as dropped) first
	handed  []int64 // the timestamp of every frame WriteFrame was given
	// ends are the EndFrame calls, each with the number of frames
	// written before it.
	ends []frameEnd
}

type frameEnd struct {
	id          int
	end         int64
	framesSoFar int
}

func (r *recorder) EndFrame(id int, end int64) error {
	r.ends = append(r.ends, frameEnd{id, end, len(r.frames)})
	return nil
}

func newRecorder() *recorder {
	return &recorder{tracks: map[int]mux.Track{}, refuse: map[string]bool{}}
}

func (r *recorder) AddTrack(t mux.Track) error {
	if fam := mux.CodecFamily(t.Codec); r.refuse[fam] {
		return &mux.UnsupportedCodecError{Container: "test", Codec: t.Codec}
	}
	if r.late && len(r.frames) > 0 {
		return fmt.Errorf("test: %w", mux.ErrLateTrack)
	}
	r.tracks[t.ID] = t
	return nil
}
func (r *recorder) RemoveTrack(id int) error { r.removed = append(r.removed, id); return nil }
func (r *recorder) WriteFrame(f mux.Frame) error {
	if _, ok := r.tracks[f.TrackID]; !ok {
		return mux.ErrUnknownTrack
	}
	if f.Discontinuity {
		r.discs = append(r.discs, f.TrackID)
	}
	r.handed = append(r.handed, f.Timestamp)
	if r.drop > 0 {
		r.drop--
		r.stats.Dropped++
		return nil
	}
	r.frames = append(r.frames, f)
	r.stats.Frames++
	r.stats.Bytes += int64(len(f.Payload))
	return nil
}
func (r *recorder) Stats() mux.Stats { return r.stats }
func (r *recorder) Close() error     { r.closed = true; return nil }

func (r *recorder) countByName() map[string]int {
	out := map[string]int{}
	for _, f := range r.frames {
		out[r.tracks[f.TrackID].Name]++
	}
	return out
}

// publishDemo fills a broadcast with whole clips of the named samples.
func publishDemo(t *testing.T, loops int, names ...string) *model.Broadcast {
	t.Helper()
	bc := model.NewBroadcast("demo")
	err := demo.Publish(context.Background(), bc, demo.Options{Renditions: names, Loops: loops, KeepGroups: 10000})
	if err != nil {
		t.Fatal(err)
	}
	return bc
}

func run(t *testing.T, bc *model.Broadcast, m mux.Muxer, opts export.Options) *export.Export {
	t.Helper()
	e := export.New(bc, m, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return e
}

func TestExportWritesEveryFrameInTimestampOrder(t *testing.T) {
	bc := publishDemo(t, 2, "h264", "aac", "opus")
	rec := newRecorder()
	e := run(t, bc, rec, export.Options{})
	if !rec.closed {
		t.Fatal("muxer not closed")
	}
	got := rec.countByName()
	for _, name := range []string{"h264", "aac", "opus"} {
		want := 2 * len(samples.MustLoadSample(name).Frames)
		if got[name] != want {
			t.Errorf("%s: %d frames written, want %d", name, got[name], want)
		}
	}
	lastKey := map[int]int64{}
	var global int64 = -1 << 62
	for _, f := range rec.frames {
		key := max(f.Timestamp, lastKey[f.TrackID])
		lastKey[f.TrackID] = key
		if key < global {
			t.Fatalf("order key went back from %d to %d", global, key)
		}
		global = key
	}
	st := e.Stats()
	if st.Frames != int64(len(rec.frames)) || st.Late != 0 || st.Dropped != 0 {
		t.Fatalf("stats %+v, %d frames recorded", st, len(rec.frames))
	}
	if st.MediaTime < 7*time.Second {
		t.Fatalf("media time %v, want about 8s", st.MediaTime)
	}
}

func TestStatsAreTheMuxersAndCountItsDrops(t *testing.T) {
	bc := publishDemo(t, 1, "h264", "aac")
	rec := newRecorder()
	rec.drop = 7
	e := run(t, bc, rec, export.Options{})
	st := e.Stats()
	var bytes int64
	for _, f := range rec.frames {
		bytes += int64(len(f.Payload))
	}
	if st.Dropped != 7 || st.Frames != int64(len(rec.frames)) || st.Bytes != bytes || st.Frames == 0 {
		t.Fatalf("stats %+v; the muxer wrote %d frames (%d bytes) and dropped 7", st, len(rec.frames), bytes)
	}
}

func TestKeyframesStartEveryGroup(t *testing.T) {
	bc := publishDemo(t, 1, "h264")
	rec := newRecorder()
	run(t, bc, rec, export.Options{})
	s := samples.MustLoadSample("h264")
	for i, f := range rec.frames {
		if f.Keyframe != s.Frames[i].Keyframe {
			t.Fatalf("frame %d: keyframe %v, want %v", i, f.Keyframe, s.Frames[i].Keyframe)
		}
	}
}

func TestRenditionSelection(t *testing.T) {
	tests := []struct {
		name   string
		opts   export.Options
		refuse []string
		want   map[string]bool
	}{
		{"all", export.Options{}, nil, map[string]bool{"h264": true, "vp9": true, "aac": true, "opus": true}},
		{"one of each kind", export.Options{Caps: mux.Caps{PerKind: map[mux.Kind]int{mux.Video: 1, mux.Audio: 1}}}, nil, map[string]bool{"h264": true, "aac": true}},
		{"caps refuse before AddTrack", export.Options{Caps: mux.Caps{Supports: refuseFamilies("vp9", "opus")}}, nil, map[string]bool{"h264": true, "aac": true}},
		{"named", export.Options{Video: []string{"vp9"}, Audio: []string{}}, nil, map[string]bool{"vp9": true}},
		{"unsupported skipped", export.Options{}, []string{"vp9", "opus"}, map[string]bool{"h264": true, "aac": true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bc := publishDemo(t, 1, "h264", "vp9", "aac", "opus")
			rec := newRecorder()
			for _, f := range tc.refuse {
				rec.refuse[f] = true
			}
			e := run(t, bc, rec, tc.opts)
			got := map[string]bool{}
			for _, tr := range rec.tracks {
				got[tr.Name] = true
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("exported %v, want %v", got, tc.want)
			}
			counts := rec.countByName()
			for name := range tc.want {
				if counts[name] != len(samples.MustLoadSample(name).Frames) {
					t.Errorf("%s: %d frames", name, counts[name])
				}
			}
			// Refused renditions leave gaps in the track IDs: the
			// accounting still finds every track written.
			for _, st := range e.TrackStats() {
				if st.Written != int64(counts[st.Name]) || st.Received != st.Written {
					t.Errorf("%s (ID %d): accounted %+v, %d frames written", st.Name, st.ID, st, counts[st.Name])
				}
			}
		})
	}
}

// refuseFamilies returns a Caps.Supports that refuses the codec families.
func refuseFamilies(fams ...string) func(mux.Track) error {
	return func(t mux.Track) error {
		if slices.Contains(fams, mux.CodecFamily(t.Codec)) {
			return &mux.UnsupportedCodecError{Container: "test", Codec: t.Codec}
		}
		return nil
	}
}

func TestNamedUnsupportedRenditionIsAnError(t *testing.T) {
	bc := publishDemo(t, 1, "vp9")
	rec := newRecorder()
	rec.refuse["vp9"] = true
	e := export.New(bc, rec, export.Options{Video: []string{"vp9"}})
	err := e.Run(context.Background())
	if !errors.Is(err, mux.ErrUnsupportedCodec) {
		t.Fatalf("Run error %v, want ErrUnsupportedCodec", err)
	}
	if !rec.closed {
		t.Fatal("muxer not closed after the error")
	}
}

func TestMaxDurationStopsAndFinalizes(t *testing.T) {
	bc := publishDemo(t, 3, "h264", "aac")
	rec := newRecorder()
	run(t, bc, rec, export.Options{MaxDuration: 2 * time.Second})
	if !rec.closed {
		t.Fatal("muxer not closed")
	}
	for _, f := range rec.frames {
		if f.Timestamp >= 2*time.Second.Microseconds() {
			t.Fatalf("frame at %d us written past the 2s limit", f.Timestamp)
		}
	}
	if n := rec.countByName()["h264"]; n < 55 || n > 60 {
		t.Fatalf("%d video frames in 2s at 30 fps", n)
	}
}

// TestMaxDurationCountsFromTheFirstFrameTheMuxerWrote: a muxer that drops
// the first frames (a TS file holds audio back until the first video
// keyframe, which a loaded relay may deliver late) still gets MaxDuration
// of media, counted from the first frame it wrote; counting from the first
// frame handed to it ended such recordings empty.
func TestMaxDurationCountsFromTheFirstFrameTheMuxerWrote(t *testing.T) {
	bc := publishDemo(t, 4, "h264", "aac")
	rec := newRecorder()
	rec.drop = 120 // about 1.5 s of H.264 at 30 fps and AAC at 47 frames/s
	run(t, bc, rec, export.Options{MaxDuration: 2 * time.Second})
	if len(rec.frames) == 0 {
		t.Fatal("nothing written")
	}
	first, last := rec.frames[0].Timestamp, rec.frames[0].Timestamp
	for _, f := range rec.frames {
		first, last = min(first, f.Timestamp), max(last, f.Timestamp)
	}
	if first < time.Second.Microseconds() {
		t.Fatalf("first written frame at %d us: the muxer did not drop the first second", first)
	}
	limit := 2 * time.Second.Microseconds()
	if last-first >= limit || last-first < limit-50_000 {
		t.Fatalf("written frames span %d us, want just under the 2 s limit", last-first)
	}
}

// TestMaxDurationEndsAMuxerThatNeverWrites: a muxer that drops every frame
// (a TS file whose video never comes) does not hold the export open for as
// long as the broadcast lasts: it ends once 10 s more than MaxDuration was
// handed to it.
func TestMaxDurationEndsAMuxerThatNeverWrites(t *testing.T) {
	sample := samples.MustLoadSample("h264")
	last := sample.Frames[len(sample.Frames)-1].Timestamp
	loops := int(14*time.Second.Microseconds()/last) + 1
	bc := publishDemo(t, loops, "h264", "aac")
	rec := newRecorder()
	rec.drop = 1 << 30
	run(t, bc, rec, export.Options{MaxDuration: time.Second})
	if len(rec.frames) != 0 || len(rec.handed) == 0 {
		t.Fatalf("%d frames written, %d handed: want none written", len(rec.frames), len(rec.handed))
	}
	first, newest := rec.handed[0], rec.handed[0]
	for _, ts := range rec.handed {
		first, newest = min(first, ts), max(newest, ts)
	}
	span, bound := newest-first, 11*time.Second.Microseconds()
	if span >= bound || span < bound-100_000 {
		t.Fatalf("the muxer was handed %d us of media, want just under MaxDuration + 10 s (%d us) of a %d us broadcast", span, bound, int64(loops)*last)
	}
}

func TestSegmentsRotateAtVideoKeyframes(t *testing.T) {
	bc := publishDemo(t, 1, "h264", "aac")
	first := newRecorder()
	var segs []*recorder
	run(t, bc, segment.New(first, segment.Options{
		Duration: 1500 * time.Millisecond,
		Next: func(n int) (mux.Muxer, error) {
			if n != len(segs)+1 {
				t.Errorf("segment number %d, want %d", n, len(segs)+1)
			}
			r := newRecorder()
			segs = append(segs, r)
			return r, nil
		},
	}), export.Options{})
	// Keyframes every second over 4s, targets cumulative (1.5 s, 3 s, as
	// ffmpeg's segment muxer): cuts at 2s (the first keyframe at or after
	// 1.5s) and at 3s (at or after 3s).
	if len(segs) != 2 {
		t.Fatalf("%d extra segments, want 2", len(segs))
	}
	all := append([]*recorder{first}, segs...)
	total := 0
	for i, r := range all {
		if !r.closed {
			t.Fatalf("segment %d not closed", i)
		}
		if len(r.tracks) != 2 {
			t.Fatalf("segment %d has %d tracks", i, len(r.tracks))
		}
		var firstVideo *mux.Frame
		for j := range r.frames {
			if r.tracks[r.frames[j].TrackID].Kind == mux.Video {
				firstVideo = &r.frames[j]
				break
			}
		}
		if firstVideo == nil || !firstVideo.Keyframe {
			t.Fatalf("segment %d does not start with a video keyframe", i)
		}
		total += len(r.frames)
	}
	want := len(samples.MustLoadSample("h264").Frames) + len(samples.MustLoadSample("aac").Frames)
	if total != want {
		t.Fatalf("%d frames over all segments, want %d", total, want)
	}
}

// TestEndedTrackIsRemovedOnceDrained: a rendition whose track ends while
// the broadcast goes on is removed from the muxer once its frames are out,
// so a segmenting muxer does not carry it into the next output; at the
// broadcast's end nothing is removed before Close.
func TestEndedTrackIsRemovedOnceDrained(t *testing.T) {
	bc := model.NewBroadcast("live")
	writeCatalog(t, bc.CreateTrack(catalog.TrackName), "aac", "opus")
	aac, opus := bc.CreateTrack("aac"), bc.CreateTrack("opus")
	rec := newRecorder()
	e := export.New(bc, rec, export.Options{Delay: time.Millisecond})
	write := func(tr *model.Track, ts int64) {
		g, _ := tr.AppendGroup()
		g.WriteFrame(model.Frame{Timestamp: ts, Payload: []byte{1}})
		g.Close(nil)
	}
	ts := int64(0)
	for ; ts < 200_000; ts += 20_000 {
		write(aac, ts)
		write(opus, ts)
		if err := e.Poll(); err != nil {
			t.Fatal(err)
		}
	}
	opus.Close(nil)
	for ; len(rec.removed) == 0 && ts < 10_000_000; ts += 20_000 {
		write(aac, ts)
		if err := e.Poll(); err != nil {
			t.Fatal(err)
		}
	}
	if len(rec.removed) != 1 || rec.tracks[rec.removed[0]].Name != "opus" {
		t.Fatalf("removed %v, want the opus track", rec.removed)
	}
	bc.Close(nil)
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(rec.removed) != 1 || !rec.closed {
		t.Fatalf("removed %v at the end (closed %v), want only opus", rec.removed, rec.closed)
	}
}

// TestCloseFinishesAPolledExport: Close writes what the jitter buffer holds
// and finalizes the muxer; a second Close does nothing.
func TestCloseFinishesAPolledExport(t *testing.T) {
	bc := publishDemo(t, 1, "aac")
	rec := newRecorder()
	e := export.New(bc, rec, export.Options{Delay: time.Hour})
	for range 3 {
		if err := e.Poll(); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(samples.MustLoadSample("aac").Frames); len(rec.frames) != n || !rec.closed {
		t.Fatalf("%d frames written (closed %v), want %d", len(rec.frames), rec.closed, n)
	}
	rec.closed = false
	if err := e.Close(); err != nil || rec.closed {
		t.Fatalf("second Close: %v, muxer closed again %v", err, rec.closed)
	}
}

// writeCatalog appends a group with the demo catalog of the named samples.
func writeCatalog(t *testing.T, catTrack *model.Track, names ...string) {
	t.Helper()
	cat, err := demo.Catalog(names)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := cat.Marshal()
	g, _ := catTrack.AppendGroup()
	g.WriteFrame(model.Frame{Payload: data})
	g.Close(nil)
}

func TestCatalogUpdatesAddAndRemoveTracks(t *testing.T) {
	bc := model.NewBroadcast("live")
	catTrack := bc.CreateTrack(catalog.TrackName)
	publish := func(names ...string) { writeCatalog(t, catTrack, names...) }
	audio := bc.CreateTrack("aac")
	video := bc.CreateTrack("h264")
	rec := newRecorder()
	e := export.New(bc, rec, export.Options{Delay: 100 * time.Millisecond})
	publish("aac")
	writeFrame := func(tr *model.Track, ts int64) {
		g, _ := tr.AppendGroup()
		g.WriteFrame(model.Frame{Timestamp: ts, Payload: []byte{1}})
		g.Close(nil)
	}
	for ts := int64(0); ts < 300_000; ts += 20_000 {
		writeFrame(audio, ts)
		if err := e.Poll(); err != nil {
			t.Fatal(err)
		}
	}
	publish("aac", "h264")
	for ts := int64(300_000); ts < 600_000; ts += 20_000 {
		writeFrame(audio, ts)
		writeFrame(video, ts)
		if err := e.Poll(); err != nil {
			t.Fatal(err)
		}
	}
	publish("h264")
	for ts := int64(600_000); ts < 900_000; ts += 20_000 {
		writeFrame(video, ts)
		if err := e.Poll(); err != nil {
			t.Fatal(err)
		}
	}
	counts := rec.countByName()
	if len(rec.tracks) != 2 || counts["aac"] < 25 || counts["h264"] < 20 {
		t.Fatalf("tracks %v counts %v", rec.tracks, counts)
	}
	if len(rec.removed) != 1 || rec.tracks[rec.removed[0]].Name != "aac" {
		t.Fatalf("removed %v, want the aac track", rec.removed)
	}
}

func TestCompressedCatalog(t *testing.T) {
	bc := model.NewBroadcast("z")
	cat, _ := demo.Catalog([]string{"aac"})
	data, _ := cat.Marshal()
	var d catalog.Deflater
	z, err := d.Frame(data)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := bc.CreateTrack(catalog.CompressedTrackName).AppendGroup()
	g.WriteFrame(model.Frame{Payload: z})
	audio := bc.CreateTrack("aac")
	for ts := int64(0); ts < 100_000; ts += 20_000 {
		ag, _ := audio.AppendGroup()
		ag.WriteFrame(model.Frame{Timestamp: ts, Payload: []byte{1}})
		ag.Close(nil)
	}
	bc.Close(nil)
	rec := newRecorder()
	run(t, bc, rec, export.Options{CatalogTrack: catalog.CompressedTrackName})
	if rec.countByName()["aac"] != 5 {
		t.Fatalf("got %v", rec.countByName())
	}
}

// audioExport is a broadcast with the demo catalog's aac rendition and an
// export of it into rec; write adds a one-frame group at ts and polls.
func audioExport(t *testing.T, rec *recorder) (bc *model.Broadcast, audio *model.Track, e *export.Export, write func(ts int64)) {
	t.Helper()
	bc = model.NewBroadcast("d")
	cat, _ := demo.Catalog([]string{"aac"})
	data, _ := cat.Marshal()
	cg, _ := bc.CreateTrack(catalog.TrackName).AppendGroup()
	cg.WriteFrame(model.Frame{Payload: data})
	audio = bc.CreateTrack("aac")
	e = export.New(bc, rec, export.Options{})
	write = func(ts int64) {
		g, _ := audio.AppendGroup()
		g.WriteFrame(model.Frame{Timestamp: ts, Payload: []byte{1}})
		g.Close(nil)
		if err := e.Poll(); err != nil {
			t.Fatal(err)
		}
	}
	return bc, audio, e, write
}

func TestDiscontinuityReachesTheMuxer(t *testing.T) {
	rec := newRecorder()
	bc, audio, e, write := audioExport(t, rec)
	write(0)
	write(20_000)
	empty, _ := audio.AppendGroup() // an empty group means nothing
	empty.Close(nil)
	marker, _ := audio.AppendGroup() // hang's discontinuity marker
	marker.WriteFrame(model.Frame{Timestamp: 40_000, Marker: true})
	marker.Close(nil)
	write(5_000_000)
	audio.Discontinuity() // a reconnect: the publisher's clock restarted
	write(0)
	bc.Close(nil)
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(rec.discs) != 2 || len(rec.frames) != 4 {
		t.Fatalf("discontinuities %v frames %d", rec.discs, len(rec.frames))
	}
	if last := rec.frames[3].Timestamp; last < 5_000_000 {
		t.Fatalf("frame after the restart at %d us: went back in time", last)
	}
}

func TestIdlePollReturnsAtOnce(t *testing.T) {
	bc := publishDemo(t, 1, "aac")
	rec := newRecorder()
	e := export.New(bc, rec, export.Options{})
	for e.Poll() == nil && !e.Done() {
	}
	n := len(rec.frames)
	for range 100 {
		if err := e.Poll(); err != nil {
			t.Fatal(err)
		}
	}
	if len(rec.frames) != n {
		t.Fatal("idle polls wrote frames")
	}
}

func TestCancelFinalizes(t *testing.T) {
	bc := model.NewBroadcast("live")
	ctx, cancel := context.WithCancel(context.Background())
	go demo.Publish(ctx, bc, demo.Options{Realtime: true})
	rec := newRecorder()
	e := export.New(bc, rec, export.Options{Delay: 200 * time.Millisecond})
	time.AfterFunc(700*time.Millisecond, cancel)
	err := e.Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want context.Canceled", err)
	}
	if !rec.closed || len(rec.frames) == 0 {
		t.Fatalf("closed=%v frames=%d", rec.closed, len(rec.frames))
	}
}

// failingClose is a recorder whose Close fails, like a muxer finalizing on
// a full disk.
type failingClose struct{ *recorder }

var errDiskFull = errors.New("no space left on device")

func (f failingClose) Close() error { f.recorder.Close(); return errDiskFull }

func TestFinalizeErrorWinsOverCancellation(t *testing.T) {
	bc := model.NewBroadcast("live")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go demo.Publish(ctx, bc, demo.Options{Realtime: true})
	rec := newRecorder()
	e := export.New(bc, failingClose{rec}, export.Options{Delay: 200 * time.Millisecond})
	time.AfterFunc(500*time.Millisecond, cancel)
	err := e.Run(ctx)
	if !errors.Is(err, errDiskFull) || errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want the finalize error, not the cancellation", err)
	}
	if !rec.closed {
		t.Fatal("muxer not closed")
	}
}

// TestTrackStatsAccountForEveryFrame: per track, every frame received is
// written or dropped (by the muxer here), and a gap counts with the media
// time it skipped.
func TestTrackStatsAccountForEveryFrame(t *testing.T) {
	rec := newRecorder()
	rec.drop = 1
	bc, audio, e, write := audioExport(t, rec)
	write(0)
	write(20_000)
	write(40_000)
	audio.MarkLost(3, 10) // a reconnect that could not fetch groups 3..9
	g, _ := audio.CreateGroup(10)
	g.WriteFrame(model.Frame{Timestamp: 4_040_000, Payload: []byte{1}})
	g.Close(nil)
	bc.Close(nil)
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := e.TrackStats()
	if len(st) != 1 {
		t.Fatalf("%d tracks: %+v", len(st), st)
	}
	s := st[0]
	if s.Name != "aac" || s.Kind != mux.Audio || s.Received != 4 || s.Written != 3 || s.DroppedByMuxer != 1 || s.DroppedLate != 0 ||
		s.Gaps != 1 || s.LostToGaps != 4*time.Second {
		t.Fatalf("%+v", s)
	}
}

// TestMaxDurationEndsAgainstAProducerFasterThanTheReader: a track that
// another goroutine fills faster than the export reads it (a publisher far
// ahead, the command's --demo-fast) still ends the recording at
// MaxDuration: one poll reads a bounded turn of a track, not all there is,
// which a faster producer never lets run out.
func TestMaxDurationEndsAgainstAProducerFasterThanTheReader(t *testing.T) {
	bc := model.NewBroadcast("fast")
	cat, err := demo.Catalog([]string{"aac"})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := cat.Marshal()
	g, _ := bc.CreateTrack(catalog.TrackName).AppendGroup()
	g.WriteFrame(model.Frame{Payload: data})
	g.Close(nil)
	audio := bc.CreateTrack("aac")
	// As a remote track the export subscribed: nothing is skipped, every
	// group is read.
	audio.SetKeepGroups(1 << 30)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for seq := uint64(0); seq < 3_000_000; seq++ {
			select {
			case <-stop:
				return
			default:
			}
			if writeAudioGroup(audio, seq) != nil {
				return
			}
		}
	}()
	defer func() { close(stop); <-done }()
	rec := newRecorder()
	e := export.New(bc, rec, export.Options{MaxDuration: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.Run(ctx); err != nil {
		t.Fatalf("Run: %v (it did not stop at MaxDuration)", err)
	}
	if n := rec.countByName()["aac"]; n < 46 || n > 47 {
		t.Fatalf("%d audio frames in 1 s, want 47", n)
	}
	select {
	case <-done:
		t.Fatal("the producer ran out before the export ended: the test proves nothing")
	default:
	}
}

func TestAnEndMarkerEndsTheVideoFrameBeforeItAndIsNoFrame(t *testing.T) {
	bc := model.NewBroadcast("d")
	cat, _ := demo.Catalog([]string{"h264"})
	data, _ := cat.Marshal()
	cg, _ := bc.CreateTrack(catalog.TrackName).AppendGroup()
	cg.WriteFrame(model.Frame{Payload: data})
	s := samples.MustLoadSample("h264")
	video := bc.CreateTrack(cat.Renditions()[0].Name)
	g, _ := video.AppendGroup()
	g.WriteFrame(model.Frame{Timestamp: 0, Payload: s.Frames[0].Payload})
	g.WriteFrame(model.Frame{Timestamp: 40_000, Payload: s.Frames[1].Payload})
	g.WriteFrame(model.Frame{Timestamp: 140_000, Marker: true}) // the second frame lasts 100 ms
	g.Close(nil)
	bc.Close(nil)
	rec := newRecorder()
	run(t, bc, rec, export.Options{})
	if len(rec.frames) != 2 {
		t.Fatalf("%d frames reached the muxer, want 2: a marker is no frame", len(rec.frames))
	}
	if len(rec.ends) != 1 || rec.ends[0] != (frameEnd{rec.frames[1].TrackID, 140_000, 2}) {
		t.Fatalf("ends %+v; want the second frame's, at 140 ms, right after it", rec.ends)
	}
}

func TestADisabledRenditionIsTakenWhenItIsEnabledAndDataTracksAreCounted(t *testing.T) {
	bc := model.NewBroadcast("live")
	catTrack := bc.CreateTrack(catalog.TrackName)
	publish := func(videoEnabled bool) {
		cat, err := demo.Catalog([]string{"h264", "aac"})
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range cat.Video.Renditions {
			v.Enabled = &videoEnabled
			cat.Video.Renditions[name] = v
		}
		cat.JSON = &catalog.DataSection{Tracks: map[string]catalog.DataTrack{"chat": {Mode: "stream"}}}
		data, _ := cat.Marshal()
		g, _ := catTrack.AppendGroup()
		g.WriteFrame(model.Frame{Payload: data})
		g.Close(nil)
	}
	audio := bc.CreateTrack("aac")
	video := bc.CreateTrack("h264")
	rec := newRecorder()
	e := export.New(bc, rec, export.Options{Delay: 100 * time.Millisecond})
	writeFrame := func(tr *model.Track, ts int64) {
		g, _ := tr.AppendGroup()
		g.WriteFrame(model.Frame{Timestamp: ts, Payload: []byte{1}})
		g.Close(nil)
	}
	publish(false)
	for ts := int64(0); ts < 300_000; ts += 20_000 {
		writeFrame(audio, ts)
		writeFrame(video, ts) // frames a disabled rendition should not have: not taken
		if err := e.Poll(); err != nil {
			t.Fatal(err)
		}
	}
	if counts := rec.countByName(); counts["h264"] != 0 || len(rec.tracks) != 1 {
		t.Fatalf("while disabled: tracks %v counts %v", rec.tracks, counts)
	}
	publish(true)
	for ts := int64(300_000); ts < 600_000; ts += 20_000 {
		writeFrame(audio, ts)
		writeFrame(video, ts)
		if err := e.Poll(); err != nil {
			t.Fatal(err)
		}
	}
	bc.Close(nil)
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if counts := rec.countByName(); counts["h264"] < 10 || len(rec.tracks) != 2 {
		t.Fatalf("once enabled: tracks %v counts %v", rec.tracks, counts)
	}
	if n := e.Stats().DataTracks; n != 1 {
		t.Fatalf("%d data tracks counted, the catalog lists 1", n)
	}
}

// TestTheEngineSaysItAskedForEveryTrackOfEachCatalog: after each catalog
// the engine tells the broadcast (model.Broadcast.Selected) that it asked
// for every track it takes, once those asks were made, so a source that
// starts its tracks together (an archive) does not wait for more.
func TestTheEngineSaysItAskedForEveryTrackOfEachCatalog(t *testing.T) {
	bc := model.NewBroadcast("live")
	catTrack := bc.CreateTrack(catalog.TrackName)
	var asked []string
	var atSelected [][]string
	bc.HandleRequests(func(name string) (*model.Track, error) {
		asked = append(asked, name)
		return model.NewTrack(name), nil
	})
	bc.HandleSelected(func() { atSelected = append(atSelected, slices.Clone(asked)) })
	e := export.New(bc, newRecorder(), export.Options{Delay: 100 * time.Millisecond})
	writeCatalog(t, catTrack, "aac")
	if err := e.Poll(); err != nil {
		t.Fatal(err)
	}
	writeCatalog(t, catTrack, "aac", "h264")
	if err := e.Poll(); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"aac"}, {"aac", "h264"}}
	if fmt.Sprint(atSelected) != fmt.Sprint(want) {
		t.Fatalf("tracks asked for at each Selected: %v, want %v", atSelected, want)
	}
}

// TestTrackStateSaysWhatTheSourceHoldsAndWhereTheReaderIs: the state a
// recorder logs for a track that stopped alone is that of the track the
// export reads (its groups and its reader), for a rendition it exports.
func TestTrackStateSaysWhatTheSourceHoldsAndWhereTheReaderIs(t *testing.T) {
	bc := model.NewBroadcast("demo")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go demo.Publish(ctx, bc, demo.Options{Renditions: []string{"h264", "aac"}, Pause: true})
	rec := newRecorder()
	e := export.New(bc, rec, export.Options{})
	for deadline := time.Now().Add(10 * time.Second); len(rec.frames) == 0; time.Sleep(time.Millisecond) {
		if err := e.Poll(); err != nil || time.Now().After(deadline) {
			t.Fatalf("no frame written: %v", err)
		}
	}
	st, ok := e.TrackState("h264")
	if !ok || st.Groups == 0 || st.Ended || st.Aligning || len(st.Readers) != 1 || !st.Readers[0].Started || st.Readers[0].Cursor < st.Oldest {
		t.Fatalf("h264: %+v, %v", st, ok)
	}
	if _, ok := e.TrackState("vp9"); ok {
		t.Fatal("a state for a rendition the export does not read")
	}
}

// TestTheJitterBuffersClockIsReadOncePerPollNotPerFrame: with a delay that
// may grow (MaxDelay), the jitter buffer times each track's pushes; the
// engine gives it a clock read once per poll, not once per frame (the
// frames a poll reads arrived by the time it began).
func TestTheJitterBuffersClockIsReadOncePerPollNotPerFrame(t *testing.T) {
	bc := publishDemo(t, 4, "h264", "aac")
	rec := newRecorder()
	var reads atomic.Int64
	run(t, bc, rec, export.Options{MaxDelay: 5 * time.Second, Now: func() time.Time {
		reads.Add(1)
		return time.Now()
	}})
	frames := int64(len(rec.frames))
	if frames < 400 {
		t.Fatalf("%d frames written: the test proves nothing", frames)
	}
	if n := reads.Load(); n > frames/4 {
		t.Errorf("the clock was read %d times for %d frames, want a read per poll", n, frames)
	}
	t.Logf("%d clock reads for %d frames", reads.Load(), frames)
}
