package segment_test

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/mkv"
	"github.com/moq-export/moq-export/mux/segment"
)

// recorder is a Muxer that remembers every call.
type recorder struct {
	tracks  []int
	removed []int
	frames  []mux.Frame
	closed  bool
}

func (r *recorder) AddTrack(t mux.Track) error { r.tracks = append(r.tracks, t.ID); return nil }
func (r *recorder) RemoveTrack(id int) error   { r.removed = append(r.removed, id); return nil }
func (r *recorder) WriteFrame(f mux.Frame) error {
	r.frames = append(r.frames, f)
	return nil
}
func (r *recorder) Stats() mux.Stats { return mux.Stats{Frames: int64(len(r.frames))} }
func (r *recorder) Close() error     { r.closed = true; return nil }

const ms = 1000

func TestRotation(t *testing.T) {
	video := mux.Track{ID: 1, Kind: mux.Video}
	audio := mux.Track{ID: 2, Kind: mux.Audio}
	vkey := func(ts int64) mux.Frame { return mux.Frame{TrackID: 1, Timestamp: ts * ms, Keyframe: true} }
	v := func(ts int64) mux.Frame { return mux.Frame{TrackID: 1, Timestamp: ts * ms} }
	a := func(ts int64) mux.Frame { return mux.Frame{TrackID: 2, Timestamp: ts * ms, Keyframe: true} }
	for _, tc := range []struct {
		name   string
		tracks []mux.Track
		frames []mux.Frame
		want   []string // per output: the timestamps (ms) of its frames
	}{
		{"cut at the first video keyframe at or after each multiple of the duration",
			[]mux.Track{video, audio},
			[]mux.Frame{vkey(0), a(0), v(500), a(900), a(1000), v(1000), a(1500), vkey(1500), a(1600), vkey(2000), vkey(3000)},
			[]string{"0 0 500 900 1000 1000 1500", "1500 1600", "2000", "3000"}},
		{"a late cut does not move the next target",
			[]mux.Track{video},
			[]mux.Frame{vkey(0), vkey(1900), vkey(2000), vkey(2500), vkey(3000)},
			[]string{"0", "1900", "2000 2500", "3000"}},
		{"audio keyframes do not cut when there is video",
			[]mux.Track{video, audio},
			[]mux.Frame{vkey(0), a(1000), a(1200), v(1300), vkey(1400)},
			[]string{"0 1000 1200 1300", "1400"}},
		{"any keyframe cuts without video",
			[]mux.Track{audio},
			[]mux.Frame{a(0), a(999), a(1000), a(1999), a(2000)},
			[]string{"0 999", "1000 1999", "2000"}},
		{"the duration counts from each output's first frame",
			[]mux.Track{video},
			[]mux.Frame{vkey(100), vkey(1000), vkey(1100), vkey(2000), vkey(2100)},
			[]string{"100 1000", "1100 2000", "2100"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outs := []*recorder{{}}
			m := segment.New(outs[0], segment.Options{Duration: time.Second, Next: func(n int) (mux.Muxer, error) {
				if n != len(outs) {
					t.Errorf("Next(%d), want %d", n, len(outs))
				}
				outs = append(outs, &recorder{})
				return outs[n], nil
			}})
			mediatest.Write(t, m, tc.tracks, tc.frames)
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			var got []string
			for i, o := range outs {
				var ts []string
				for _, f := range o.frames {
					ts = append(ts, fmt.Sprint(f.Timestamp/ms))
				}
				got = append(got, strings.Join(ts, " "))
				if !o.closed || len(o.tracks) != len(tc.tracks) {
					t.Errorf("output %d: closed %v, tracks %v", i, o.closed, o.tracks)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("outputs %q, want %q", got, tc.want)
			}
			if m.Outputs() != len(tc.want) || m.Stats().Frames != int64(len(tc.frames)) {
				t.Fatalf("%d outputs, stats %+v", m.Outputs(), m.Stats())
			}
		})
	}
}

// TestSegmentsOfA30fpsStreamAreEqual is the case of a live demo: 30 fps in
// microseconds rounded from the frame clock, a keyframe every second, so
// the keyframe of second 4 lands at 3,999,999 µs, a microsecond short of
// its target. 2 s segments over 12 s are six outputs of 60 frames each.
func TestSegmentsOfA30fpsStreamAreEqual(t *testing.T) {
	for _, round := range []struct {
		name string
		f    func(i int) int64
	}{
		{"truncated", func(i int) int64 { return int64(i) * 1_000_000 / 30 }},
		{"rounded", func(i int) int64 { return (int64(i)*1_000_000 + 15) / 30 }},
	} {
		t.Run(round.name, func(t *testing.T) {
			var frames []mux.Frame
			for i := range 360 {
				frames = append(frames, mux.Frame{TrackID: 1, Timestamp: 5_000_000 + round.f(i), Keyframe: i%30 == 0})
			}
			outs := []*recorder{{}}
			m := segment.New(outs[0], segment.Options{Duration: 2 * time.Second, Next: func(int) (mux.Muxer, error) {
				outs = append(outs, &recorder{})
				return outs[len(outs)-1], nil
			}})
			mediatest.Write(t, m, []mux.Track{{ID: 1, Kind: mux.Video}}, frames)
			var counts []int
			for _, o := range outs {
				counts = append(counts, len(o.frames))
			}
			if fmt.Sprint(counts) != "[60 60 60 60 60 60]" {
				t.Fatalf("frames per output %v, want 6 x 60", counts)
			}
		})
	}
}

// TestTheLastFramesOfARunStartNoOutput: with the run's end known
// (Options.End), a keyframe less than half a segment before it does not
// start an output: 2 s segments of a 5 s run are 2, 2 and 1 s, and of a
// 4.9 s run 2 and 2.9 s, never a file of a frame or two.
func TestTheLastFramesOfARunStartNoOutput(t *testing.T) {
	for _, tc := range []struct {
		end  time.Duration
		want string
	}{
		{5 * time.Second, "[60 60 30]"},
		{4900 * time.Millisecond, "[60 87]"},
		{0, "[60 60 27]"},
	} {
		var frames []mux.Frame
		n := int(tc.end.Seconds()*30 + 0.5)
		if tc.end == 0 {
			n = 147
		}
		for i := range n {
			frames = append(frames, mux.Frame{TrackID: 1, Timestamp: int64(i) * 1_000_000 / 30, Keyframe: i%30 == 0})
		}
		outs := []*recorder{{}}
		m := segment.New(outs[0], segment.Options{Duration: 2 * time.Second, End: tc.end, Next: func(int) (mux.Muxer, error) {
			outs = append(outs, &recorder{})
			return outs[len(outs)-1], nil
		}})
		mediatest.Write(t, m, []mux.Track{{ID: 1, Kind: mux.Video}}, frames)
		var counts []int
		for _, o := range outs {
			counts = append(counts, len(o.frames))
		}
		if fmt.Sprint(counts) != tc.want {
			t.Errorf("end %v: frames per output %v, want %s", tc.end, counts, tc.want)
		}
	}
}

func TestRemovedTracksAreNotCarriedOver(t *testing.T) {
	outs := []*recorder{{}}
	m := segment.New(outs[0], segment.Options{Duration: time.Second, Next: func(int) (mux.Muxer, error) {
		outs = append(outs, &recorder{})
		return outs[len(outs)-1], nil
	}})
	mediatest.Write(t, m, []mux.Track{{ID: 1, Kind: mux.Audio}, {ID: 2, Kind: mux.Audio}, {ID: 3, Kind: mux.Audio}},
		[]mux.Frame{{TrackID: 1, Keyframe: true}})
	if err := m.RemoveTrack(2); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteFrame(mux.Frame{TrackID: 1, Timestamp: 1000 * ms, Keyframe: true}); err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 || fmt.Sprint(outs[1].tracks) != "[1 3]" || fmt.Sprint(outs[0].removed) != "[2]" {
		t.Fatalf("outputs %d, second has tracks %v, first removed %v", len(outs), outs[1].tracks, outs[0].removed)
	}
}

func TestFailedNextOutputIsSticky(t *testing.T) {
	first := &recorder{}
	boom := errors.New("disk full")
	m := segment.New(first, segment.Options{Duration: time.Second, Next: func(int) (mux.Muxer, error) { return nil, boom }})
	mediatest.Write(t, m, []mux.Track{{ID: 1, Kind: mux.Audio}}, []mux.Frame{{TrackID: 1, Keyframe: true}})
	err := m.WriteFrame(mux.Frame{TrackID: 1, Timestamp: 1000 * ms, Keyframe: true})
	if !errors.Is(err, boom) || !first.closed {
		t.Fatalf("WriteFrame = %v (first closed %v), want %v", err, first.closed, boom)
	}
	if err := m.WriteFrame(mux.Frame{TrackID: 1, Timestamp: 1020 * ms, Keyframe: true}); !errors.Is(err, boom) {
		t.Fatalf("after the failure: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close after the failure: %v", err)
	}
}

// TestOutputsAreDecodableFiles cuts h264+aac into Matroska files and has
// ffprobe check that each starts with a video keyframe and that together
// they hold every frame.
func TestOutputsAreDecodableFiles(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	v, a := mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2)
	dir := t.TempDir()
	open := func(n int) (mux.Muxer, error) {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%d.mkv", n)))
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { f.Close() })
		return mkv.NewWriter(f, mkv.Options{}), nil
	}
	first, _ := open(0)
	m := segment.New(first, segment.Options{Duration: 1500 * time.Millisecond, Next: open})
	mediatest.Feed(t, m, v, a)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if m.Outputs() < 2 {
		t.Fatalf("%d outputs from %d video frames", m.Outputs(), len(v.Frames))
	}
	packets := 0
	for n := range m.Outputs() {
		path := filepath.Join(dir, fmt.Sprintf("%d.mkv", n))
		mediatest.DecodeClean(t, path)
		p := mediatest.Probe(t, path)
		packets += len(p.Packets)
		for _, pk := range p.Packets {
			if pk.CodecType == "video" {
				if !strings.Contains(pk.Flags, "K") {
					t.Errorf("output %d starts with a video packet that is not a keyframe", n)
				}
				break
			}
		}
	}
	if want := len(v.Frames) + len(a.Frames); packets != want {
		t.Fatalf("%d packets in %d outputs, want %d", packets, m.Outputs(), want)
	}
}

// headerFirst is a recorder that, like FLV or MP4 after their header,
// refuses tracks once it wrote a frame; refuse lists codecs it never takes.
type headerFirst struct {
	recorder
	refuse string
}

func (h *headerFirst) AddTrack(t mux.Track) error {
	if h.refuse != "" && t.Codec == h.refuse {
		return fmt.Errorf("no %s here: %w", t.Codec, mux.ErrLateTrack)
	}
	if len(h.frames) > 0 {
		return fmt.Errorf("track %d: %w", t.ID, mux.ErrLateTrack)
	}
	return h.recorder.AddTrack(t)
}

func TestLateTrackStartsTheNextOutputAtTheNextKeyframe(t *testing.T) {
	video := mux.Track{ID: 1, Kind: mux.Video}
	vkey := func(ts int64) mux.Frame { return mux.Frame{TrackID: 1, Timestamp: ts * ms, Keyframe: true} }
	v := func(ts int64) mux.Frame { return mux.Frame{TrackID: 1, Timestamp: ts * ms} }
	a := func(id int, ts int64) mux.Frame { return mux.Frame{TrackID: id, Timestamp: ts * ms, Keyframe: true} }
	type step struct {
		add    *mux.Track // a track to add before the frame
		remove int        // a track to remove before the frame
		frame  mux.Frame
	}
	for _, tc := range []struct {
		name     string
		first    mux.Track // the track added before any frame
		refuse   string    // codec no output takes
		steps    []step
		want     []string // per output: its tracks, then the timestamps (ms) of its frames
		dropped  int64
		duration time.Duration
	}{
		{name: "audio joins: its frames wait for the next video keyframe, which starts output 1", first: video,
			steps: []step{{frame: vkey(0)}, {frame: v(33)}, {add: &mux.Track{ID: 2, Kind: mux.Audio}, frame: a(2, 40)},
				{frame: v(66)}, {frame: a(2, 60)}, {frame: vkey(100)}, {frame: a(2, 101)}, {frame: v(133)}},
			want:    []string{"[1] 0 33 66", "[1 2] 100 101 133"},
			dropped: 2},
		{name: "a video track joining cuts at its own first keyframe", first: mux.Track{ID: 1, Kind: mux.Audio},
			steps: []step{{frame: a(1, 0)}, {add: &mux.Track{ID: 2, Kind: mux.Video}, frame: mux.Frame{TrackID: 2, Timestamp: 10 * ms}},
				{frame: a(1, 20)}, {frame: mux.Frame{TrackID: 2, Timestamp: 30 * ms, Keyframe: true}}, {frame: a(1, 40)}},
			want:    []string{"[1] 0 20", "[1 2] 30 40"},
			dropped: 1},
		{name: "a track no output takes is dropped after the split, the rest goes on", first: video,
			refuse: "opus",
			steps: []step{{frame: vkey(0)}, {add: &mux.Track{ID: 2, Kind: mux.Audio, Codec: "opus"}, frame: a(2, 10)},
				{frame: vkey(100)}, {frame: a(2, 110)}, {frame: vkey(1100)}},
			want:     []string{"[1] 0", "[1] 100", "[1] 1100"},
			dropped:  2,
			duration: time.Second},
		{name: "a late track removed before the split is forgotten", first: video,
			steps: []step{{frame: vkey(0)}, {add: &mux.Track{ID: 2, Kind: mux.Audio}, frame: a(2, 10)},
				{remove: 2, frame: vkey(100)}},
			want:    []string{"[1] 0 100"},
			dropped: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outs := []*headerFirst{{refuse: tc.refuse}}
			m := segment.New(outs[0], segment.Options{Duration: tc.duration, SplitForLateTracks: true, Next: func(n int) (mux.Muxer, error) {
				outs = append(outs, &headerFirst{refuse: tc.refuse})
				return outs[n], nil
			}})
			if err := m.AddTrack(tc.first); err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.steps {
				if s.add != nil {
					if err := m.AddTrack(*s.add); err != nil {
						t.Fatalf("late AddTrack: %v", err)
					}
				}
				if s.remove != 0 {
					if err := m.RemoveTrack(s.remove); err != nil {
						t.Fatal(err)
					}
				}
				if err := m.WriteFrame(s.frame); err != nil {
					t.Fatal(err)
				}
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range outs {
				ts := []string{fmt.Sprint(o.tracks)}
				for _, f := range o.frames {
					ts = append(ts, fmt.Sprint(f.Timestamp/ms))
				}
				got = append(got, strings.Join(ts, " "))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("outputs %q, want %q", got, tc.want)
			}
			if st := m.Stats(); st.Dropped != tc.dropped {
				t.Errorf("Stats().Dropped = %d, want %d", st.Dropped, tc.dropped)
			}
		})
	}
}

func TestLateTrackIsRefusedWithoutSplitForLateTracks(t *testing.T) {
	out := &headerFirst{}
	m := segment.New(out, segment.Options{Duration: time.Second, Next: func(int) (mux.Muxer, error) { return &headerFirst{}, nil }})
	mediatest.Write(t, m, []mux.Track{{ID: 1, Kind: mux.Video}}, []mux.Frame{{TrackID: 1, Keyframe: true}})
	if err := m.AddTrack(mux.Track{ID: 2, Kind: mux.Audio}); !errors.Is(err, mux.ErrLateTrack) {
		t.Fatalf("late AddTrack = %v, want ErrLateTrack", err)
	}
}

// TestTheLateTrackWarningSaysWhereTheOutputStood: the warning that a late
// track waits for the next output names the newest timestamp written, so
// a reader of the log (and the end-to-end test of a late rendition) knows
// which keyframe "the next" is: the first after it.
func TestTheLateTrackWarningSaysWhereTheOutputStood(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before []mux.Frame // written before the audio track comes
		want   string
	}{
		{"after a keyframe and a frame", []mux.Frame{{TrackID: 1, Timestamp: 0, Keyframe: true}, {TrackID: 1, Timestamp: 33_333}}, "written_to=33.333ms"},
		{"after two GOPs, a B-frame's time first", []mux.Frame{{TrackID: 1, Timestamp: 0, Keyframe: true}, {TrackID: 1, Timestamp: 66_666},
			{TrackID: 1, Timestamp: 33_333}, {TrackID: 1, Timestamp: 2_000_000, Keyframe: true}}, "written_to=2s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log strings.Builder
			outs := []*headerFirst{{}}
			m := segment.New(outs[0], segment.Options{SplitForLateTracks: true,
				Logger: slog.New(slog.NewTextHandler(&log, nil)),
				Next: func(n int) (mux.Muxer, error) {
					outs = append(outs, &headerFirst{})
					return outs[n], nil
				}})
			if err := m.AddTrack(mux.Track{ID: 1, Kind: mux.Video}); err != nil {
				t.Fatal(err)
			}
			for _, f := range tc.before {
				if err := m.WriteFrame(f); err != nil {
					t.Fatal(err)
				}
			}
			if err := m.AddTrack(mux.Track{ID: 2, Kind: mux.Audio, Name: "aac"}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(log.String(), "a late track starts the next file") || !strings.Contains(log.String(), " "+tc.want+" ") {
				t.Errorf("the log says %q, want the late track's warning with %s", log.String(), tc.want)
			}
		})
	}
}
