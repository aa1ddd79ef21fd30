package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/model"
)

// logSink records what Serve asks of a family's wire, one word each:
// "open 1@2" (group 1 from frame 2), "1.3" (frame 3 of the open group,
// its timestamp naming group and index), "fin", "reset", "cut". fail
// makes the write of a frame fail with the error mapped to its name.
type logSink struct {
	mu    sync.Mutex
	log   []string
	fail  map[string]error
	wrote chan struct{} // gets a value per write, when not nil
}

func (k *logSink) add(s string) {
	k.mu.Lock()
	k.log = append(k.log, s)
	k.mu.Unlock()
}

func (k *logSink) OpenGroup(seq, first uint64) error {
	name := fmt.Sprintf("open %d@%d", seq, first)
	k.add(name)
	return k.fail[name]
}

func (k *logSink) WriteObject(o Object, index uint64) error {
	name := fmt.Sprintf("%d.%d", o.Micros/1000, index)
	if o.Micros%1000 != int64(index) {
		name += "(wrong index)"
	}
	k.add(name)
	if k.wrote != nil {
		k.wrote <- struct{}{}
	}
	return k.fail[name]
}

func (k *logSink) CloseGroup(how GroupEnd) {
	k.add([]string{"fin", "reset", "cut"}[how])
}

func (k *logSink) String() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return strings.Join(k.log, " ")
}

// writeGroups appends one group per entry of sizes, frame i of group g at
// timestamp g*1000+i, and finishes every group but the last when open.
func writeGroups(t *testing.T, tr *model.Track, sizes []int, open bool) {
	t.Helper()
	for gi, n := range sizes {
		g, err := tr.AppendGroup()
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := g.WriteFrame(model.Frame{Timestamp: int64(gi*1000 + i), Payload: []byte{1}}); err != nil {
				t.Fatal(err)
			}
		}
		if !open || gi < len(sizes)-1 {
			g.Close(nil)
		}
	}
}

func TestServeSendsEachGroupOnItsOwnStreamInsideTheWindow(t *testing.T) {
	stopped := fmt.Errorf("%w: STOP_SENDING", ErrGroupStopped)
	broken := errors.New("stream broken")
	tests := []struct {
		name    string
		sizes   []int
		window  Window
		fail    map[string]error
		want    string
		wantErr error
	}{
		{name: "every group in order, each ended when it is finished",
			sizes: []int{3, 2}, want: "open 0@0 0.0 0.1 0.2 fin open 1@0 1.0 1.1 fin"},
		{name: "a start inside a group opens its stream at that frame",
			sizes: []int{2, 3, 1}, window: Window{Start: Location{1, 1}, HasStart: true},
			want: "open 1@1 1.1 1.2 fin open 2@0 2.0 fin"},
		{name: "a finite window ends after its end frame",
			sizes: []int{2, 3, 1}, window: Window{End: 1, EndFrame: 2, HasEnd: true, Finite: true},
			want: "open 0@0 0.0 0.1 fin open 1@0 1.0 1.1 fin", wantErr: ErrWindowDone},
		{name: "a finite window ending with a whole group ends once it is finished",
			sizes: []int{2, 2, 5}, window: Window{End: 1, HasEnd: true, Finite: true},
			want: "open 0@0 0.0 0.1 fin open 1@0 1.0 1.1 fin", wantErr: ErrWindowDone},
		{name: "an open-ended window skips what is past its end until the track ends",
			sizes: []int{2, 3, 1}, window: Window{End: 1, EndFrame: 1, HasEnd: true},
			want: "open 0@0 0.0 0.1 fin open 1@0 1.0 fin"},
		{name: "a group the subscriber stopped is skipped to the next group",
			sizes: []int{3, 1}, fail: map[string]error{"0.1": stopped},
			want: "open 0@0 0.0 0.1 reset open 1@0 1.0 fin"},
		{name: "a group whose stream could not start is skipped too",
			sizes: []int{2, 1}, fail: map[string]error{"open 0@0": stopped},
			want: "open 0@0 open 1@0 1.0 fin"},
		{name: "any other failure ends the subscription",
			sizes: []int{3, 1}, fail: map[string]error{"0.1": broken},
			want: "open 0@0 0.0 0.1 reset", wantErr: broken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := model.NewTrack("v")
			cons := tr.Subscribe(time.Hour)
			defer cons.Close()
			writeGroups(t, tr, tt.sizes, false)
			tr.Close(nil)
			sink := &logSink{fail: tt.fail}
			_, err := Serve(context.Background(), tr, cons, tt.window, &Encoder{}, sink, nil)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got := sink.String(); got != tt.want {
				t.Fatalf("sink saw\n  %s\nwant\n  %s", got, tt.want)
			}
		})
	}
}

func TestServeReportsTheLastGroupOpenedAndTheTracksEnd(t *testing.T) {
	tr := model.NewTrack("v")
	cons := tr.Subscribe(time.Hour)
	defer cons.Close()
	writeGroups(t, tr, []int{1, 1, 1}, false)
	ended := errors.New("publisher gone")
	tr.Close(ended)
	res, err := Serve(context.Background(), tr, cons, Window{Start: Location{Group: 1}, HasStart: true}, &Encoder{}, &logSink{}, nil)
	if err != nil || !res.Opened || res.Last != 2 || !errors.Is(res.EndErr, ended) {
		t.Fatalf("Serve = %+v, %v", res, err)
	}
}

// When the subscription's context ends, the open group is cut if the
// session is ending and completed if the subscriber left.
func TestServeCutsTheOpenGroupOnlyWhenTheSessionEnds(t *testing.T) {
	for _, ending := range []bool{true, false} {
		t.Run(fmt.Sprint("session ending ", ending), func(t *testing.T) {
			tr := model.NewTrack("v")
			cons := tr.Subscribe(time.Hour)
			defer cons.Close()
			writeGroups(t, tr, []int{2}, true)
			ctx, cancel := context.WithCancel(context.Background())
			sink := &logSink{wrote: make(chan struct{}, 8)}
			done := make(chan error, 1)
			go func() {
				_, err := Serve(ctx, tr, cons, Window{}, &Encoder{}, sink, func() bool { return ending })
				done <- err
			}()
			<-sink.wrote
			<-sink.wrote
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v", err)
			}
			want := "open 0@0 0.0 0.1 fin"
			if ending {
				want = "open 0@0 0.0 0.1 cut"
			}
			if got := sink.String(); got != want {
				t.Fatalf("sink saw %q, want %q", got, want)
			}
		})
	}
}

// A group still being written is sent as it grows, and its stream ends
// the moment the group is finished, not when the next one begins.
func TestServeEndsAGroupsStreamWhenTheGroupIsFinished(t *testing.T) {
	tr := model.NewTrack("v")
	cons := tr.Subscribe(time.Hour)
	defer cons.Close()
	g, _ := tr.AppendGroup()
	g.WriteFrame(model.Frame{Timestamp: 0, Payload: []byte{1}})
	sink := &logSink{wrote: make(chan struct{}, 8)}
	done := make(chan error, 1)
	go func() {
		_, err := Serve(context.Background(), tr, cons, Window{}, &Encoder{}, sink, nil)
		done <- err
	}()
	<-sink.wrote
	g.WriteFrame(model.Frame{Timestamp: 1, Payload: []byte{1}})
	<-sink.wrote
	g.Close(nil)
	deadline := time.Now().Add(10 * time.Second)
	for sink.String() != "open 0@0 0.0 0.1 fin" {
		if time.Now().After(deadline) {
			t.Fatalf("sink saw %q, the group's end not sent", sink.String())
		}
		time.Sleep(time.Millisecond)
	}
	tr.Close(nil)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A restarted producer's groups count from its own start: the window's
// start, which counted the old timeline's groups, no longer filters them.
func TestServeDropsTheStartAtANewTimeline(t *testing.T) {
	tr := model.NewTrack("v")
	cons := tr.Subscribe(time.Hour)
	defer cons.Close()
	writeGroups(t, tr, []int{1, 1, 1}, false)
	sink := &logSink{wrote: make(chan struct{}, 8)}
	done := make(chan error, 1)
	go func() {
		_, err := Serve(context.Background(), tr, cons, Window{Start: Location{Group: 2}, HasStart: true}, &Encoder{}, sink, nil)
		done <- err
	}()
	<-sink.wrote // group 2's frame
	tr.Discontinuity()
	g, _ := tr.AppendGroup() // group 0 of the new timeline
	g.WriteFrame(model.Frame{Timestamp: 3000, Payload: []byte{1}})
	g.Close(nil)
	tr.Close(nil)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, want := sink.String(), "open 2@0 2.0 fin open 0@0 3.0 fin"; got != want {
		t.Fatalf("sink saw %q, want %q", got, want)
	}
}

func TestServeGroupHandsOverTheAskedFramesAsTheGroupGrows(t *testing.T) {
	tests := []struct {
		name     string
		frames   int
		finished bool
		from, to uint64
		want     []uint64
		wantErr  error
	}{
		{name: "a whole group", frames: 4, finished: true, want: []uint64{0, 1, 2, 3}},
		{name: "from a frame on", frames: 4, finished: true, from: 2, want: []uint64{2, 3}},
		{name: "up to a frame", frames: 4, finished: true, to: 2, want: []uint64{0, 1}},
		{name: "a range inside a group still being written ends at its end", frames: 4, from: 1, to: 3, want: []uint64{1, 2}},
		{name: "a start the finished group does not reach", frames: 2, finished: true, from: 3, wantErr: ErrNotHeld},
		{name: "a start just past the finished group's end is served empty", frames: 2, finished: true, from: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := model.NewTrack("v")
			g, _ := tr.AppendGroup()
			for i := range tt.frames {
				g.WriteFrame(model.Frame{Timestamp: int64(i), Payload: []byte{1}})
			}
			if tt.finished {
				g.Close(nil)
			}
			var got []uint64
			err := ServeGroup(context.Background(), g, model.NewReadySet(), tt.from, tt.to, &Encoder{}, func(o Object, index uint64, _ bool) error {
				if o.Micros != int64(index) {
					t.Errorf("frame %d handed over as index %d", o.Micros, index)
				}
				got = append(got, index)
				return nil
			})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("frames %v, want %v", got, tt.want)
			}
		})
	}
}

func TestServeGroupWaitsForTheRestOfAGroupAndReportsItsFailure(t *testing.T) {
	tr := model.NewTrack("v")
	cons := tr.Subscribe(time.Hour)
	defer cons.Close()
	rs := model.NewReadySet()
	cons.Watch(rs)
	g, _ := tr.AppendGroup()
	g.WriteFrame(model.Frame{Timestamp: 0, Payload: []byte{1}})
	handed := make(chan uint64, 4)
	done := make(chan error, 1)
	go func() {
		done <- ServeGroup(context.Background(), g, rs, 0, 0, &Encoder{}, func(_ Object, index uint64, _ bool) error {
			handed <- index
			return nil
		})
	}()
	if i := <-handed; i != 0 {
		t.Fatalf("first frame handed as %d", i)
	}
	g.WriteFrame(model.Frame{Timestamp: 1, Payload: []byte{1}})
	if i := <-handed; i != 1 {
		t.Fatalf("second frame handed as %d", i)
	}
	cut := errors.New("publisher gone")
	g.Close(cut)
	if err := <-done; !errors.Is(err, ErrGroupFailed) || !errors.Is(err, cut) {
		t.Fatalf("err = %v, want ErrGroupFailed wrapping the group's error", err)
	}
}

func TestOldestUnexpiredStopsAtTheFirstExpiredGroup(t *testing.T) {
	tr := model.NewTrack("v")
	// Groups 0-4, one frame each, 100 ms apart.
	for i := range 5 {
		g, _ := tr.AppendGroup()
		g.WriteFrame(model.Frame{Timestamp: int64(i) * 100_000, Payload: []byte{1}})
		g.Close(nil)
	}
	for _, tc := range []struct {
		floor, maxAge, want uint64
	}{
		// Group n's age is the newest frame (400 ms) minus group n+1's
		// first: group 1 is 200 ms old, group 0 300 ms.
		{0, 0, 4}, {0, 250, 1}, {0, 200, 2}, {0, 3_600_000, 0}, {3, 3_600_000, 3},
	} {
		if got, ok := OldestUnexpired(tr, tc.floor, tc.maxAge); !ok || got != tc.want {
			t.Errorf("floor %d, max age %d ms: %d %v, want %d", tc.floor, tc.maxAge, got, ok, tc.want)
		}
	}
	if _, ok := OldestUnexpired(tr, 5, 0); ok {
		t.Error("a floor above the latest group has a start")
	}
}

func TestPublicationsTellFollowersEveryChangeAfterTheirSnapshot(t *testing.T) {
	p := NewPublications()
	a := model.NewBroadcast("a")
	if !p.Add("/a/", a) || p.Add("a", model.NewBroadcast("a")) {
		t.Fatal("a path is published once")
	}
	var snapshot []string
	var changes []string
	stop := p.Follow(func(paths []string) { snapshot = paths }, func(path string, active bool) {
		changes = append(changes, fmt.Sprintf("%s %v", path, active))
	})
	p.Add("b", model.NewBroadcast("b"))
	p.Remove("a", model.NewBroadcast("a")) // not the one published: kept
	p.Remove("a", nil)
	stop()
	p.Add("c", model.NewBroadcast("c"))
	if !slices.Equal(snapshot, []string{"a"}) || !slices.Equal(changes, []string{"b true", "a false"}) {
		t.Fatalf("snapshot %v, changes %v", snapshot, changes)
	}
	if paths, _ := p.Paths(); !slices.Equal(paths, []string{"b", "c"}) {
		t.Fatalf("paths %v", paths)
	}
	if p.Followers() != 0 {
		t.Fatal("a stopped follower still follows")
	}
}

func TestPublicationsNameWhyARequestFindsNoTrack(t *testing.T) {
	p := NewPublications()
	b := model.NewBroadcast("cam")
	b.CreateTrack("video")
	p.Add("cam", b)
	if tr, _, err := p.Track("cam", "video"); err != nil || tr == nil {
		t.Fatalf("published track: %v", err)
	}
	b.Close(nil) // an ended broadcast makes no new track
	if _, _, err := p.Track("cam", "audio"); !errors.Is(err, ErrNoTrack) {
		t.Fatalf("unknown track: %v", err)
	}
	if _, _, err := p.Track("other", "video"); !errors.Is(err, ErrNoBroadcast) {
		t.Fatalf("unknown broadcast: %v", err)
	}
	p.CountServing("/cam", "video", 1)
	p.CountServing("cam", "video", 1)
	if p.Serving("cam", "video") != 2 || p.ServingAll() != 2 {
		t.Fatal("served subscriptions not counted by track")
	}
	p.CountServing("cam", "video", -2)
	if p.Serving("cam", "video") != 0 || p.ServingAll() != 0 {
		t.Fatal("ended subscriptions still counted")
	}
}
