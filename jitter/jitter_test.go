package jitter

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/moq-export/moq-export/mux"
)

const ms = int64(1000) // microseconds

func frame(track int, tsMs int64, key bool) mux.Frame {
	return mux.Frame{TrackID: track, Timestamp: tsMs * ms, Keyframe: key}
}

// flushAll flushes b to the end.
func flushAll(b *Buffer) []Item {
	var out []Item
	for it, ok := b.Flush(); ok; it, ok = b.Flush() {
		out = append(out, it)
	}
	return out
}

// inOrderCount checks that items leave in non-decreasing timestamp order
// and returns how many are of track id.
func inOrderCount(t *testing.T, items []Item, id int) int {
	t.Helper()
	n, last := 0, int64(math.MinInt64)
	for _, it := range items {
		if it.Frame.Timestamp < last {
			t.Fatalf("timestamps went back: %d after %d", it.Frame.Timestamp, last)
		}
		last = it.Frame.Timestamp
		if it.Frame.TrackID == id {
			n++
		}
	}
	return n
}

// drain pops everything that may leave now.
func drain(b *Buffer) []Item {
	var out []Item
	for {
		it, ok := b.Pop()
		if !ok {
			return out
		}
		out = append(out, it)
	}
}

func timestamps(items []Item) []int64 {
	out := make([]int64, len(items))
	for i, it := range items {
		out[i] = it.Frame.Timestamp / ms
	}
	return out
}

// fakeClock is a settable wall clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// newFileBuffer returns a Buffer as a file recording has it (Delay
// 500 ms, MaxDelay 5 s, MediaTimeOnly) on a fake clock set at start, with
// video track 1 and audio track 2.
func newFileBuffer(start time.Time) (*Buffer, *fakeClock) {
	clock := &fakeClock{t: start}
	b := New(Options{Delay: 500 * time.Millisecond, MaxDelay: 5 * time.Second, MediaTimeOnly: true, Now: clock.now})
	b.AddTrack(1, mux.Video)
	b.AddTrack(2, mux.Audio)
	return b, clock
}

func TestFramesOfSeveralTracksLeaveInTimestampOrder(t *testing.T) {
	b := New(Options{Delay: time.Second})
	b.AddTrack(1, mux.Video)
	b.AddTrack(2, mux.Audio)
	// Video arrives in bursts ahead of audio.
	for _, f := range []mux.Frame{frame(1, 0, true), frame(1, 33, false), frame(1, 66, false), frame(2, 0, true), frame(2, 20, true), frame(2, 40, true), frame(2, 60, true), frame(2, 80, true)} {
		if err := b.Push(f); err != nil {
			t.Fatal(err)
		}
	}
	got := timestamps(drain(b))
	want := []int64{0, 0, 20, 33, 40, 60, 66}
	if len(got) != len(want) {
		t.Fatalf("released %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("released %v, want %v", got, want)
		}
	}
	// 80 waits: video may still produce something between 66 and 80.
	if b.Stats().Buffered != 1 {
		t.Fatalf("buffered %d, want 1", b.Stats().Buffered)
	}
}

func TestBFramesKeepDecodeOrderWithinTrack(t *testing.T) {
	b := New(Options{Delay: time.Second})
	b.AddTrack(1, mux.Video)
	b.AddTrack(2, mux.Audio)
	// Decode order I0 P100 B33 B66 P200; audio every 25 ms.
	for _, f := range []mux.Frame{frame(1, 0, true), frame(1, 100, false), frame(1, 33, false), frame(1, 66, false), frame(1, 200, false)} {
		b.Push(f)
	}
	for ts := int64(0); ts <= 250; ts += 25 {
		b.Push(frame(2, ts, true))
	}
	var video []int64
	for _, it := range drain(b) {
		if it.Frame.TrackID == 1 {
			video = append(video, it.Frame.Timestamp/ms)
		}
	}
	want := []int64{0, 100, 33, 66, 200}
	for i := range want {
		if i >= len(video) || video[i] != want[i] {
			t.Fatalf("video order %v, want %v", video, want)
		}
	}
}

func TestLaggingTrackHoldsOutputAtMostDelay(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	b := New(Options{Delay: 500 * time.Millisecond, Now: clock.now})
	b.AddTrack(1, mux.Video)
	b.AddTrack(2, mux.Audio) // never sends
	for ts := int64(0); ts < 500; ts += 20 {
		b.Push(frame(1, ts, ts == 0))
		if got := drain(b); len(got) != 0 {
			t.Fatalf("at media time %d ms released %v while the audio track lags less than the delay", ts, timestamps(got))
		}
	}
	// Media time reaches the delay: the silent track stops holding output.
	b.Push(frame(1, 500, false))
	got := drain(b)
	if len(got) != 26 || got[0].Frame.Timestamp != 0 || got[25].Frame.Timestamp != 500*ms {
		t.Fatalf("released %v, want 0..500 ms", timestamps(got))
	}
	if b.Stats().Idled != 1 {
		t.Fatalf("idled %d, want 1", b.Stats().Idled)
	}
	// The idle track no longer holds anything back.
	b.Push(frame(1, 520, false))
	if got := drain(b); len(got) != 1 {
		t.Fatalf("released %v after the lagging track went idle, want [520]", timestamps(got))
	}
}

func TestStalledOutputLeavesAfterDelayOfWallTime(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	b := New(Options{Delay: 500 * time.Millisecond, Now: clock.now})
	b.AddTrack(1, mux.Video)
	b.AddTrack(2, mux.Audio)
	b.Push(frame(1, 0, true))
	b.Push(frame(1, 33, false))
	if got := drain(b); len(got) != 0 {
		t.Fatalf("released %v before any bound was reached", timestamps(got))
	}
	deadline, ok := b.Deadline()
	if !ok || !deadline.Equal(clock.t.Add(500*time.Millisecond)) {
		t.Fatalf("deadline %v %v, want now+500ms", deadline, ok)
	}
	clock.t = clock.t.Add(499 * time.Millisecond)
	if got := drain(b); len(got) != 0 {
		t.Fatalf("released %v before the wall-clock bound", timestamps(got))
	}
	clock.t = clock.t.Add(time.Millisecond)
	if got := drain(b); len(got) != 2 {
		t.Fatalf("released %v at the wall-clock bound, want both frames", timestamps(got))
	}
}

func TestLateFramePolicies(t *testing.T) {
	tests := []struct {
		name        string
		policy      LatePolicy
		wantVideo   []int64 // video timestamps released after the late burst
		wantLate    int64
		wantDropped int64
	}{
		// The late P-frame at 40 is dropped, so is the B-frame that depends
		// on it; video resumes at the next keyframe.
		{"drop", LateDrop, []int64{2000}, 1, 2},
		// Both are late: the B-frame's order key is its reference's.
		{"pass", LatePass, []int64{40, 20, 2000}, 2, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := New(Options{Delay: 500 * time.Millisecond, Late: tc.policy})
			b.AddTrack(1, mux.Video)
			b.AddTrack(2, mux.Audio)
			b.Push(frame(1, 0, true))
			for ts := int64(0); ts <= 1500; ts += 20 {
				b.Push(frame(2, ts, true))
			}
			drain(b) // video idled; audio ran ahead to 1500
			b.Push(frame(1, 40, false))
			b.Push(frame(1, 20, false))
			b.Push(frame(1, 2000, true))
			b.Push(frame(2, 2000, true))
			var video []int64
			for _, it := range drain(b) {
				if it.Frame.TrackID == 1 {
					video = append(video, it.Frame.Timestamp/ms)
					if it.Late != (it.Frame.Timestamp < 2000*ms) {
						t.Errorf("frame %d: Late=%v", it.Frame.Timestamp/ms, it.Late)
					}
				}
			}
			if len(video) != len(tc.wantVideo) {
				t.Fatalf("video after late burst %v, want %v", video, tc.wantVideo)
			}
			for i := range video {
				if video[i] != tc.wantVideo[i] {
					t.Fatalf("video after late burst %v, want %v", video, tc.wantVideo)
				}
			}
			st := b.Stats()
			if st.Late != tc.wantLate || st.Dropped != tc.wantDropped {
				t.Fatalf("stats %+v, want late=%d dropped=%d", st, tc.wantLate, tc.wantDropped)
			}
		})
	}
}

func TestDiscontinuityShiftsBackwardJumpAndIsReported(t *testing.T) {
	b := New(Options{Delay: time.Second})
	b.AddTrack(1, mux.Audio)
	for ts := int64(0); ts <= 100; ts += 20 {
		b.Push(frame(1, ts, true))
	}
	b.PushDiscontinuity(1)
	b.Push(frame(1, 0, true)) // publisher restarted its clock
	b.Push(frame(1, 20, true))
	got := drain(b)
	if len(got) != 8 {
		t.Fatalf("released %d items, want 8", len(got))
	}
	if !got[6].Frame.Discontinuity || got[5].Frame.Discontinuity || got[7].Frame.Discontinuity {
		t.Fatalf("discontinuity flags wrong: %+v", got)
	}
	// One frame (20 ms) after the last one: the frame at 100 lasts until
	// 120, and no time is written twice.
	if got[6].Frame.Timestamp != 120*ms || got[7].Frame.Timestamp != 140*ms {
		t.Fatalf("after the rewind got %v, want 120, 140", timestamps(got[6:]))
	}
	// A forward jump is kept.
	b.PushDiscontinuity(1)
	b.Push(frame(1, 5000, true))
	if got := drain(b); len(got) != 1 || got[0].Frame.Timestamp != 5120*ms || !got[0].Frame.Discontinuity {
		t.Fatalf("forward jump released %+v, want 5120 ms with Discontinuity", got)
	}
}

const video, audio = 1, 2

// secondBeforeARestart returns a Buffer of a video and an audio track that
// took 1 s of media (video every 40 ms, keyframes every 200, audio every
// 20 ms; the video group at 1000 was cut after its keyframe), and what
// left it.
func secondBeforeARestart() (*Buffer, []Item) {
	b := New(Options{Delay: time.Second})
	b.AddTrack(video, mux.Video)
	b.AddTrack(audio, mux.Audio)
	var got []Item
	for ts := int64(0); ts <= 1000; ts += 20 {
		if ts%40 == 0 {
			b.Push(frame(video, ts, ts%200 == 0))
		}
		b.Push(frame(audio, ts, true))
		got = append(got, drain(b)...)
	}
	return b, got
}

// After a restart, audio comes back from its newest group, video from its
// keyframe up to a GOP earlier: whichever arrives first, the new timeline
// starts with the earliest of them, and no video is dropped.
func TestRestartOffsetFollowsTheEarliestTrackOfTheNewClock(t *testing.T) {
	b, got := secondBeforeARestart()
	b.PushDiscontinuity(video)
	b.PushDiscontinuity(audio)
	// Audio first, from 900 ms of the new clock; then video from its
	// keyframe at 100 ms.
	b.Push(frame(audio, 900, true))
	b.Push(frame(audio, 920, true))
	for ts := int64(100); ts <= 1000; ts += 40 {
		b.Push(frame(video, ts, ts == 100))
	}
	got = append(got, flushAll(b)...)
	inOrderCount(t, got, video)
	first := map[int]int64{}
	n := map[int]int{}
	for _, it := range got {
		if it.Frame.Discontinuity {
			first[it.Frame.TrackID] = it.Frame.Timestamp
		}
		n[it.Frame.TrackID]++
	}
	if first[video] != 1040*ms || first[audio] != 1840*ms {
		t.Fatalf("restarts at video %d ms, audio %d ms; want 1040 and 1840 (800 ms apart, as published)", first[video]/ms, first[audio]/ms)
	}
	if st := b.Stats(); st.Dropped != 0 || n[video] != 26+23 {
		t.Fatalf("stats %+v, %d video frames: want nothing dropped, 49 video frames", st, n[video])
	}
}

// A restarted publisher starts every track's clock afresh: the tracks
// rewind together, by one shared offset, so audio and video stay in sync,
// and none writes a time it already wrote (the cut group's keyframe at the
// newest time stays the newest, the new timeline starts a frame after it).
func TestPublisherRestartRewindsEveryTrackByOneOffset(t *testing.T) {
	b, got := secondBeforeARestart()
	// The new publisher's clock: audio starts 60 ms before the video's
	// first keyframe (at 100 ms: far behind the old clock); video arrives
	// first and sets the offset, audio moves it to start at its 40 ms.
	b.PushDiscontinuity(video)
	b.PushDiscontinuity(audio)
	b.Push(frame(video, 100, true))
	for ts := int64(40); ts <= 300; ts += 20 {
		b.Push(frame(audio, ts, true))
		if ts > 100 && ts%40 == 20 {
			b.Push(frame(video, ts, false))
		}
	}
	got = append(got, flushAll(b)...)
	inOrderCount(t, got, video)
	last := map[int]int64{}
	first := map[int]int64{}
	for _, it := range got {
		f := it.Frame
		if prev, ok := last[f.TrackID]; ok && f.Timestamp <= prev {
			t.Fatalf("track %d wrote %d ms after %d ms", f.TrackID, f.Timestamp/ms, prev/ms)
		}
		last[f.TrackID] = f.Timestamp
		if f.Discontinuity {
			if _, ok := first[f.TrackID]; ok {
				t.Fatalf("track %d: two discontinuities", f.TrackID)
			}
			first[f.TrackID] = f.Timestamp
		}
	}
	// The new timeline starts 40 ms (the longest frame) after the newest
	// key, 1000, with its earliest frame (audio at 40 ms); video keeps its
	// 60 ms lead-in.
	if first[audio] != 1040*ms || first[video] != 1100*ms {
		t.Fatalf("restarts at audio %d ms, video %d ms; want 1040 and 1100", first[audio]/ms, first[video]/ms)
	}
	if st := b.Stats(); st.Late != 0 || st.Dropped != 0 {
		t.Fatalf("stats %+v, want nothing late or dropped", st)
	}

	// The publisher restarts again with the same clock: a new rewind, after
	// everything written (both ended at 300 -> 1300), not the old offset.
	b.PushDiscontinuity(audio)
	b.PushDiscontinuity(video)
	b.Push(frame(audio, 100, true))
	b.Push(frame(video, 100, true))
	again := flushAll(b)
	if len(again) != 2 || again[0].Frame.Timestamp != 1340*ms || again[1].Frame.Timestamp != 1340*ms {
		t.Fatalf("second restart released %v, want audio and video at 1340", timestamps(again))
	}

	// A third restart whose video has left before the audio comes back
	// earlier in the new clock: the offset cannot move any more, so the
	// audio that would go before its last frame (1340) is dropped, counted.
	b.PushDiscontinuity(video)
	b.PushDiscontinuity(audio)
	b.Push(frame(video, 50, true)) // -> 1380
	third := flushAll(b)
	b.Push(frame(audio, 0, true))  // -> 1330: dropped
	b.Push(frame(audio, 10, true)) // -> 1340: dropped
	b.Push(frame(audio, 60, true)) // -> 1390
	third = append(third, flushAll(b)...)
	if ts := timestamps(third); len(ts) != 2 || ts[0] != 1380 || ts[1] != 1390 || !third[1].Frame.Discontinuity {
		t.Fatalf("third restart released %v, want video 1380 then audio 1390 with its discontinuity", ts)
	}
	if st := b.Stats(); st.Late != 2 || st.Dropped != 2 {
		t.Fatalf("stats %+v, want the 2 overlapping audio frames late and dropped", st)
	}
}

func TestEndedTrackStopsHoldingOutput(t *testing.T) {
	b := New(Options{Delay: time.Hour})
	b.AddTrack(1, mux.Video)
	b.AddTrack(2, mux.Audio)
	b.Push(frame(1, 0, true))
	if len(drain(b)) != 0 {
		t.Fatal("released before the audio track said anything")
	}
	b.EndTrack(2)
	if got := drain(b); len(got) != 1 {
		t.Fatalf("released %v after the audio track ended, want [0]", timestamps(got))
	}
}

func TestFlushReleasesEverythingInOrder(t *testing.T) {
	b := New(Options{Delay: time.Hour})
	b.AddTrack(1, mux.Video)
	b.AddTrack(2, mux.Audio)
	b.Push(frame(1, 10, true))
	b.Push(frame(1, 30, false))
	b.Push(frame(2, 20, true))
	got := flushAll(b)
	if ts := timestamps(got); len(ts) != 3 || ts[0] != 10 || ts[1] != 20 || ts[2] != 30 {
		t.Fatalf("flushed %v, want 10 20 30", ts)
	}
}

// TestNothingLostOrDuplicatedWhenTracksKeepUp checks, over random arrival
// orders, that every frame leaves exactly once, each track in its own order,
// and the order keys never decrease.
func TestNothingLostOrDuplicatedWhenTracksKeepUp(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 42))
		nTracks := 1 + rng.IntN(6)
		b := New(Options{Delay: 500 * time.Millisecond, Now: (&fakeClock{t: time.Unix(0, 0)}).now})
		type gen struct {
			frames []mux.Frame
			next   int
		}
		gens := make([]*gen, nTracks)
		total := 0
		for id := range nTracks {
			b.AddTrack(id, mux.Kind(1+rng.IntN(2)))
			g := &gen{}
			step := int64(10 + rng.IntN(40))
			ts := int64(rng.IntN(30))
			for i := range 20 + rng.IntN(40) {
				pts := ts
				if i%4 == 1 { // a reference frame presented after two B-frames
					pts += 2 * step
				} else if i%4 == 2 || i%4 == 3 {
					pts -= step
				}
				g.frames = append(g.frames, mux.Frame{TrackID: id, Timestamp: pts * ms, Keyframe: i%8 == 0, Payload: []byte{byte(id), byte(i)}})
				ts += step
			}
			gens[id] = g
			total += len(g.frames)
		}
		var out []Item
		for pushed := 0; pushed < total; {
			// Pick a track at random, but only among those within 200 ms
			// of the slowest: every track keeps up within the delay.
			slowest := int64(1 << 62)
			for _, g := range gens {
				if g.next < len(g.frames) {
					slowest = min(slowest, g.frames[g.next].Timestamp)
				}
			}
			var ready []*gen
			for _, g := range gens {
				if g.next < len(g.frames) && g.frames[g.next].Timestamp <= slowest+200*ms {
					ready = append(ready, g)
				}
			}
			g := ready[rng.IntN(len(ready))]
			if err := b.Push(g.frames[g.next]); err != nil {
				t.Fatal(err)
			}
			g.next++
			pushed++
			if g.next == len(g.frames) {
				b.EndTrack(g.frames[0].TrackID)
			}
			out = append(out, drain(b)...)
		}
		out = append(out, flushAll(b)...)
		if len(out) != total {
			t.Fatalf("seed %d: %d frames out, %d in (stats %+v)", seed, len(out), total, b.Stats())
		}
		nextIdx := make([]int, nTracks)
		lastKey := make([]int64, nTracks)
		globalKey := int64(-1 << 62)
		for _, it := range out {
			id := it.Frame.TrackID
			if want := gens[id].frames[nextIdx[id]]; it.Frame.Payload[1] != want.Payload[1] {
				t.Fatalf("seed %d: track %d out of order", seed, id)
			}
			nextIdx[id]++
			key := max(it.Frame.Timestamp, lastKey[id])
			lastKey[id] = key
			if key < globalKey {
				t.Fatalf("seed %d: order key went back from %d to %d", seed, globalKey, key)
			}
			globalKey = key
		}
		if st := b.Stats(); st.Late != 0 || st.Dropped != 0 {
			t.Fatalf("seed %d: late/dropped with tracks keeping up: %+v", seed, st)
		}
	}
}

func TestTrackWithUnreadDataIsNeverDeclaredIdle(t *testing.T) {
	unread := map[int]bool{2: true}
	b := New(Options{Delay: 500 * time.Millisecond, Pending: func(id int) bool { return unread[id] }})
	b.AddTrack(1, mux.Video)
	b.AddTrack(2, mux.Audio)
	// The reader drained the video backlog first: two seconds of it.
	for ts := int64(0); ts <= 2000; ts += 40 {
		b.Push(frame(1, ts, ts == 0))
	}
	if got := drain(b); len(got) != 0 {
		t.Fatalf("released %v while the audio track had unread data", timestamps(got))
	}
	// Now it reads the audio backlog: everything interleaves, nothing late.
	unread[2] = false
	for ts := int64(0); ts <= 2000; ts += 20 {
		b.Push(frame(2, ts, true))
	}
	got := drain(b)
	if st := b.Stats(); st.Late != 0 || st.Dropped != 0 || st.Idled != 0 || len(got) != 51+101 {
		t.Fatalf("stats %+v, released %d", st, len(got))
	}
}

// TestOutputHeldOnlyByPendingTracksHasNoDeadline: while only a track with
// unread data (or one its producer holds) keeps the output back, no
// wall-clock deadline applies: the producer wakes the reader, which would
// otherwise poll in a loop once the deadline passed.
func TestOutputHeldOnlyByPendingTracksHasNoDeadline(t *testing.T) {
	now := time.Unix(0, 0)
	unread := map[int]bool{2: true}
	b := New(Options{Delay: 500 * time.Millisecond, Now: func() time.Time { return now },
		Pending: func(id int) bool { return unread[id] }})
	b.AddTrack(1, mux.Video)
	b.AddTrack(2, mux.Audio)
	b.Push(frame(1, 0, true))
	if _, ok := b.Pop(); ok {
		t.Fatal("released while the audio track lags")
	}
	if _, ok := b.Deadline(); !ok {
		t.Fatal("no deadline while blocked")
	}
	now = now.Add(time.Second)
	if _, ok := b.Pop(); ok {
		t.Fatal("released while the audio track has unread data")
	}
	if d, ok := b.Deadline(); ok {
		t.Fatalf("deadline %v while only a pending track blocks", d)
	}
	unread[2] = false
	b.Push(frame(2, 0, true))
	if got := drain(b); len(got) != 2 {
		t.Fatalf("released %d frames, want 2", len(got))
	}
}

// TestMediaTimeOnlyWaitsThroughSilence: with MediaTimeOnly a silent track
// holds the output however long nothing flows, so frames it delivers late
// in wall time (after a reconnect) are not late.
func TestMediaTimeOnlyWaitsThroughSilence(t *testing.T) {
	now := time.Unix(0, 0)
	b := New(Options{Delay: 500 * time.Millisecond, MediaTimeOnly: true, Now: func() time.Time { return now }})
	b.AddTrack(1, mux.Video)
	b.AddTrack(2, mux.Audio)
	b.Push(frame(1, 0, true))
	b.Push(frame(2, 0, true))
	b.Push(frame(1, 40, false))
	drain(b)
	now = now.Add(time.Minute)
	if got := drain(b); len(got) != 0 {
		t.Fatalf("released %v while the audio track was silent", timestamps(got))
	}
	if _, ok := b.Deadline(); ok {
		t.Fatal("a wall-clock deadline with MediaTimeOnly")
	}
	b.Push(frame(2, 20, true))
	b.Push(frame(2, 40, true))
	b.Push(frame(1, 80, false))
	b.Push(frame(2, 60, true))
	b.Push(frame(2, 80, true))
	drain(b)
	if st := b.Stats(); st.Late != 0 || st.Dropped != 0 || st.Idled != 0 {
		t.Fatalf("stats %+v", st)
	}
	// The media-time bound still applies.
	for ts := int64(120); ts <= 1000; ts += 40 {
		b.Push(frame(1, ts, false))
	}
	if got := drain(b); len(got) == 0 {
		t.Fatal("the media-time bound released nothing")
	}
}

// TestMaxDelayLetsATrackThatKeepsLaggingRejoin: video arrives a constant
// 1.2 s behind audio (each video frame is pushed with the audio frames
// 1.2 s later). With a fixed 500 ms delay every video frame after the
// first stretch is late, to the end; with MaxDelay the delay grows on the
// first late frame and video is dropped only until the output waits for it.
func TestMaxDelayLetsATrackThatKeepsLaggingRejoin(t *testing.T) {
	const lagMs, endMs = 1200, 20000
	tests := []struct {
		name        string
		maxDelay    time.Duration
		minVideoOut int // video frames released, of the 627 pushed
		maxVideoOut int
		minDelay    time.Duration // the delay at the end
		maxDelayEnd time.Duration
	}{
		{name: "fixed delay", maxDelay: 0, minVideoOut: 0, maxVideoOut: 30, minDelay: 500 * time.Millisecond, maxDelayEnd: 500 * time.Millisecond},
		{name: "grows to the lag", maxDelay: 5 * time.Second, minVideoOut: 627 - 110, maxVideoOut: 627, minDelay: lagMs * time.Millisecond, maxDelayEnd: (lagMs + 600) * time.Millisecond},
		{name: "capped below the lag", maxDelay: time.Second, minVideoOut: 0, maxVideoOut: 60, minDelay: time.Second, maxDelayEnd: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(Options{Delay: 500 * time.Millisecond, MaxDelay: tt.maxDelay, MediaTimeOnly: true})
			b.AddTrack(1, mux.Video)
			b.AddTrack(2, mux.Audio)
			var out []Item
			nextVideo := int64(0)
			for audio := int64(0); audio < endMs; audio += 20 {
				if err := b.Push(frame(2, audio, true)); err != nil {
					t.Fatal(err)
				}
				// Video frames 30 ms apart, a keyframe every 3 s, pushed
				// lagMs after their time.
				for nextVideo+lagMs <= audio && nextVideo < endMs {
					if err := b.Push(frame(1, nextVideo, nextVideo%1000 == 0)); err != nil {
						t.Fatal(err)
					}
					nextVideo += 30
				}
				out = append(out, drain(b)...)
			}
			out = append(out, flushAll(b)...)
			video := inOrderCount(t, out, 1)
			pushed := int(nextVideo / 30)
			t.Logf("%d of %d video frames released, delay %v", video, pushed, b.Stats().Delay)
			if video < tt.minVideoOut || video > tt.maxVideoOut {
				t.Errorf("%d of %d video frames released, want %d..%d (stats %+v)", video, pushed, tt.minVideoOut, tt.maxVideoOut, b.Stats())
			}
			if d := b.Stats().Delay; d < tt.minDelay || d > tt.maxDelayEnd {
				t.Errorf("delay %v, want %v..%v", d, tt.minDelay, tt.maxDelayEnd)
			}
		})
	}
}

// TestMaxDelayWaitsForATrackThatFallsBehind: video falls behind audio
// little by little (a link that queues the bigger frames), up to 1.5 s,
// while it keeps delivering. With MaxDelay the output waits for it and
// loses nothing; with a fixed delay it is declared idle once it is 500 ms
// behind and loses the rest of a GOP at least.
func TestMaxDelayWaitsForATrackThatFallsBehind(t *testing.T) {
	for _, tt := range []struct {
		name     string
		maxDelay time.Duration
		wantLoss bool
	}{
		{name: "fixed delay", maxDelay: 0, wantLoss: true},
		{name: "max delay", maxDelay: 5 * time.Second, wantLoss: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Unix(0, 0)}
			b := New(Options{Delay: 500 * time.Millisecond, MaxDelay: tt.maxDelay, MediaTimeOnly: true, Now: clock.now})
			b.AddTrack(1, mux.Video)
			b.AddTrack(2, mux.Audio)
			var out []Item
			pushed, nextVideo := 0, int64(0)
			for audio := int64(0); audio < 20000; audio += 20 {
				clock.t = time.Unix(0, 0).Add(time.Duration(audio) * time.Millisecond)
				if err := b.Push(frame(2, audio, true)); err != nil {
					t.Fatal(err)
				}
				lag := min(1500, audio/4)
				for nextVideo+lag <= audio {
					if err := b.Push(frame(1, nextVideo, nextVideo%990 == 0)); err != nil {
						t.Fatal(err)
					}
					pushed++
					nextVideo += 30
				}
				out = append(out, drain(b)...)
			}
			out = append(out, flushAll(b)...)
			video := inOrderCount(t, out, 1)
			st := b.Stats()
			t.Logf("%d of %d video frames released, delay %v, stats %+v", video, pushed, st.Delay, st)
			if lost := video < pushed; lost != tt.wantLoss {
				t.Fatalf("%d of %d video frames released, want loss %v", video, pushed, tt.wantLoss)
			}
			if !tt.wantLoss && (st.Delay < 1500*time.Millisecond || st.Delay > 2100*time.Millisecond) {
				t.Fatalf("delay %v, want about the lag plus 500ms", st.Delay)
			}
		})
	}
}

// TestMaxDelayDoesNotGrowForASilentTrack: a track that stops (a paused
// rendition) does not make the delay grow: only lagging tracks that still
// deliver do. A file (MediaTimeOnly) waits for it up to MaxDelay of media
// time all the same, then declares it idle, once; the rest leaves.
func TestMaxDelayDoesNotGrowForASilentTrack(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	b := New(Options{Delay: 500 * time.Millisecond, MaxDelay: 5 * time.Second, MediaTimeOnly: true, Now: clock.now})
	b.AddTrack(1, mux.Video)
	b.AddTrack(2, mux.Audio)
	released, idledAt := 0, int64(-1)
	for audio := int64(0); audio < 10000; audio += 20 {
		clock.t = time.Unix(0, 0).Add(time.Duration(audio) * time.Millisecond)
		if err := b.Push(frame(2, audio, true)); err != nil {
			t.Fatal(err)
		}
		if audio < 2000 && audio%40 == 0 { // video until 2 s, then silent
			if err := b.Push(frame(1, audio, audio == 0)); err != nil {
				t.Fatal(err)
			}
		}
		released += len(drain(b))
		if idledAt < 0 && b.Stats().Idled > 0 {
			idledAt = audio
		}
	}
	st := b.Stats()
	if st.Delay != 500*time.Millisecond || st.Idled != 1 {
		t.Fatalf("delay %v, idled %d: want 500ms, 1 (stats %+v)", st.Delay, st.Idled, st)
	}
	// The video's last frame is at 1960 ms; the audio's of 1980 ms is the
	// first it holds back: idle once the audio is 5 s past that, and
	// everything has left since.
	if idledAt != 1980+5000 || released != 500+50 {
		t.Fatalf("idled at %d ms, %d frames released: want 6980 ms, 550", idledAt, released)
	}
}

// TestQueueOfALeadingTrackStaysBounded: a track that always has frames
// buffered (it runs 100 ms ahead of the other) never empties its queue;
// the queue's memory stays that of the frames it holds, not of every
// frame it ever held, and every frame still leaves in order.
func TestQueueOfALeadingTrackStaysBounded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lead  int64 // ms the video runs ahead of the audio
		delay time.Duration
	}{
		{"video 100 ms ahead", 100, 500 * time.Millisecond},
		{"video 400 ms ahead", 400, 500 * time.Millisecond},
		{"video 2 s ahead, within a 3 s delay", 2000, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New(Options{Delay: tc.delay, MediaTimeOnly: true})
			b.AddTrack(0, mux.Video)
			b.AddTrack(1, mux.Audio)
			var out []Item
			const frames = 20000
			most := 0
			for i := range int64(frames) {
				if err := b.Push(frame(0, i*33+tc.lead, true)); err != nil {
					t.Fatal(err)
				}
				if err := b.Push(frame(1, i*33, true)); err != nil {
					t.Fatal(err)
				}
				for it, ok := b.Pop(); ok; it, ok = b.Pop() {
					out = append(out, it)
				}
				most = max(most, b.tracks[0].buffered())
			}
			// A queue grows only while more than half of it is live: its
			// capacity stays within about 4 times the frames it holds.
			if c := cap(b.tracks[0].queue); c > 4*most+16 {
				t.Fatalf("video queue capacity %d for at most %d frames buffered", c, most)
			}
			out = append(out, flushAll(b)...)
			if n := inOrderCount(t, out, 0); n != frames {
				t.Fatalf("%d video frames out, want %d", n, frames)
			}
			if n := inOrderCount(t, out, 1); n != frames {
				t.Fatalf("%d audio frames out, want %d", n, frames)
			}
		})
	}
}

// TestQueueLetsABurstsRoomGo: the room a burst of frames made in a
// track's queue is let go once frames that need less of it follow (a
// recording that then waits for media keeps none of it), while bursts
// that come back alike and queues that stay small keep their room
// (steady media allocates nothing).
func TestQueueLetsABurstsRoomGo(t *testing.T) {
	for _, tc := range []struct {
		name    string
		steps   [][2]int // frames pushed, then popped
		maxRoom int      // the queue's capacity after the steps
		minRoom int
	}{
		{name: "a burst, then a small cycle", steps: [][2]int{{64, 64}, {2, 2}}, maxRoom: 4},
		{name: "a burst, then small cycles, one frame left", steps: [][2]int{{64, 64}, {2, 2}, {3, 2}}, maxRoom: 4},
		{name: "a burst drained to one, after small cycles", steps: [][2]int{{2, 2}, {64, 63}}, minRoom: 64},
		{name: "bursts alike keep their room", steps: [][2]int{{64, 64}, {60, 60}, {64, 64}}, minRoom: 64},
		{name: "a small queue keeps its room", steps: [][2]int{{12, 12}, {12, 11}}, minRoom: 12, maxRoom: 32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr track
			pushed, popped := 0, 0
			for _, st := range tc.steps {
				for range st[0] {
					tr.push(entry{key: int64(pushed)})
					pushed++
				}
				for range st[1] {
					if e := tr.pop(); e.key != int64(popped) {
						t.Fatalf("popped key %d, want %d", e.key, popped)
					}
					popped++
				}
			}
			c := cap(tr.queue)
			if tc.maxRoom > 0 && c > tc.maxRoom || c < tc.minRoom {
				t.Fatalf("capacity %d with %d buffered, want %d to %d", c, tr.buffered(), tc.minRoom, tc.maxRoom)
			}
			for ; popped < pushed; popped++ {
				if e := tr.pop(); e.key != int64(popped) {
					t.Fatalf("popped key %d after the steps, want %d", e.key, popped)
				}
			}
		})
	}
}

// TestQueueOfRepeatedBurstsAllocatesOnce: a queue whose bursts come back
// alike reuses its room.
func TestQueueOfRepeatedBurstsAllocatesOnce(t *testing.T) {
	var tr track
	burst := func() {
		for i := range 40 {
			tr.push(entry{key: int64(i)})
		}
		for range 40 {
			tr.pop()
		}
	}
	burst()
	if n := testing.AllocsPerRun(20, burst); n != 0 {
		t.Fatalf("%v allocations per burst after the first", n)
	}
}

func TestATextTrackHoldsTheOutputOnlyForItsSlack(t *testing.T) {
	t.Parallel()
	for _, mediaOnly := range []bool{false, true} {
		clock := &fakeClock{t: time.Unix(0, 0)}
		b := New(Options{Delay: 500 * time.Millisecond, MaxDelay: 5 * time.Second, MediaTimeOnly: mediaOnly, Now: clock.now})
		b.AddTrack(1, mux.Video)
		b.AddTrack(2, mux.Text)
		// A silent text track holds video for 500 ms of media, no more
		// (the Delay, up to 1 s), not for the MaxDelay a media track may
		// grow it to.
		for ts := int64(0); ts <= 520; ts += 20 {
			b.Push(frame(1, ts, ts == 0))
		}
		if got := timestamps(drain(b)); len(got) != 2 || got[1] != 20 {
			t.Fatalf("media only %v: released %v, want 0 and 20 (500 ms before the newest)", mediaOnly, got)
		}
		// A cue of 60 ms that comes after the video of its time, within
		// the slack, leaves in order.
		b.Push(frame(2, 60, true))
		for ts := int64(540); ts <= 1200; ts += 20 {
			b.Push(frame(1, ts, false))
		}
		got := drain(b)
		if ts := timestamps(got); len(ts) < 4 || ts[0] != 40 || ts[1] != 60 || ts[2] != 60 || got[2].Frame.TrackID != 2 {
			t.Fatalf("media only %v: released %v, want video 40, video 60, then the cue at 60 (ties go to the lower track) ...", mediaOnly, ts)
		}
		// A cue past the slack is late, counted and passed on at once
		// (a subtitle a moment late beats none), not dropped; it grows no
		// delay.
		b.Push(frame(2, 100, true))
		if got := drain(b); len(got) != 1 || !got[0].Late || got[0].Frame.Timestamp != 100*ms || b.Stats().Late != 1 || b.Stats().Dropped != 0 || b.Stats().Delay != 500*time.Millisecond {
			t.Fatalf("media only %v: late cue released %v, late %d, dropped %d, delay %v", mediaOnly, timestamps(got), b.Stats().Late, b.Stats().Dropped, b.Stats().Delay)
		}
		// Without media time moving, the wall clock ends the wait (a live
		// output), unless MediaTimeOnly (a file).
		b.Push(frame(1, 1220, false))
		if got := timestamps(drain(b)); len(got) != 1 || got[0] != 720 {
			t.Fatalf("media only %v: released %v, want 720 (500 ms before the newest)", mediaOnly, got)
		}
		clock.t = clock.t.Add(600 * time.Millisecond)
		if got := drain(b); (len(got) > 0) == mediaOnly {
			t.Fatalf("media only %v: after 600 ms of wall time released %v", mediaOnly, timestamps(got))
		}
		// The end flushes what the slack held.
		if got := flushAll(b); len(got) == 0 || got[len(got)-1].Frame.Timestamp != 1220*ms {
			t.Fatalf("media only %v: Flush released %v, want up to 1220", mediaOnly, timestamps(got))
		}
	}
}

func TestAnEndLeavesRightAfterTheFrameItEndsOrNotAtAll(t *testing.T) {
	const end = -1 // an End item in want
	for _, tc := range []struct {
		name string
		push func(b *Buffer)
		want []int64 // ms of the items of track 1 as they leave; end marks an End item
		at   int64   // the End item's time, ms
	}{
		{"BehindABufferedFrame", func(b *Buffer) {
			b.Push(frame(1, 0, true))
			b.Push(frame(1, 33, false))
			b.PushEnd(1, 133*ms)
			b.Push(frame(1, 66, false))
		}, []int64{0, 33, end, 66}, 133},
		{"AfterAFrameThatLeftAlready", func(b *Buffer) {
			b.Push(frame(1, 0, true))
			b.Flush()
			b.PushEnd(1, 33*ms)
		}, []int64{end}, 33},
		{"NotAcrossADiscontinuity", func(b *Buffer) {
			b.Push(frame(1, 0, true))
			b.PushDiscontinuity(1)
			b.PushEnd(1, 33*ms)
		}, []int64{0}, 0},
		{"NotAfterADroppedFrame", func(b *Buffer) {
			b.AddTrack(2, mux.Audio)
			b.Push(frame(2, 500, true))
			b.Push(frame(1, 0, true))
			b.Flush()
			b.Flush()                   // the output is at 500 ms
			b.Push(frame(1, 100, true)) // late: dropped
			b.PushEnd(1, 133*ms)
		}, nil, 0},
		{"OnceAfterAFrame", func(b *Buffer) {
			b.Push(frame(1, 0, true))
			b.PushEnd(1, 33*ms)
			b.PushEnd(1, 66*ms)
		}, []int64{0, end}, 33},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New(Options{Delay: time.Second})
			b.AddTrack(1, mux.Video)
			tc.push(b)
			var got []int64
			for _, it := range flushAll(b) {
				if it.Frame.TrackID != 1 {
					continue
				}
				if it.End {
					got = append(got, end)
					if it.Frame.Timestamp != tc.at*ms {
						t.Errorf("the end at %d µs, want %d ms", it.Frame.Timestamp, tc.at)
					}
					continue
				}
				got = append(got, it.Frame.Timestamp/ms)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("items %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAFrameStillBufferedWhenItsEndComesCarriesItsDuration(t *testing.T) {
	for _, tc := range []struct {
		name string
		push func(b *Buffer)
		want []int64 // the Duration (ms) of track 1's frames as they leave
	}{
		{"TheEndBehindTheBufferedFrame", func(b *Buffer) {
			b.Push(frame(1, 0, true))
			b.Push(frame(1, 33, false))
			b.PushEnd(1, 133*ms)
			b.Push(frame(1, 166, true))
		}, []int64{0, 100, 0}},
		{"TheEndAfterTheFrameLeft", func(b *Buffer) {
			b.Push(frame(1, 0, true))
			b.Flush()
			b.PushEnd(1, 33*ms)
			b.Push(frame(1, 66, true))
		}, []int64{0}}, // frame 66 (frame 0 left before its end came)
		{"NoEnd", func(b *Buffer) {
			b.Push(frame(1, 0, true))
			b.Push(frame(1, 33, false))
		}, []int64{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New(Options{Delay: time.Second})
			b.AddTrack(1, mux.Video)
			var got []int64
			collect := func(items []Item) {
				for _, it := range items {
					if it.Frame.TrackID == 1 && !it.End {
						got = append(got, it.Frame.Duration/ms)
					}
				}
			}
			tc.push(b)
			collect(flushAll(b))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("durations %v, want %v", got, tc.want)
			}
		})
	}
}

// TestATrackThatWentQuietWithEveryOtherIsWaitedForAfterTheSilence: a
// network outage the connection survives (a blackhole shorter than the idle
// timeout) silences every track at once; then the frames it held back land
// in a burst, one track's before the other's. The track whose burst comes
// second lags, it is not silent: the output waits for it and nothing is
// late (after a 1.5 s blackhole the audio's burst ran 0.6 s past the
// video's last frame before the video's came, and the video was declared
// idle and lost a GOP as late). A track that had stopped before the outage
// is still silent after it.
func TestATrackThatWentQuietWithEveryOtherIsWaitedForAfterTheSilence(t *testing.T) {
	const (
		outage     = 1500 // ms
		videoStep  = 33
		audioStep  = 20
		outageFrom = 5000
		end        = 9000
	)
	for _, tc := range []struct {
		name string
		// videoUntil: the video's last frame before the outage (ms);
		// videoBack: whether it comes back after it.
		videoUntil int64
		videoBack  bool
		wantIdled  int64
	}{
		{name: "both tracks stop with the outage", videoUntil: outageFrom, videoBack: true},
		{name: "the video had stopped 2 s before it", videoUntil: outageFrom - 2000, wantIdled: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Unix(0, 0)
			b, clock := newFileBuffer(start)
			var out []Item
			pushed := map[int]int{}
			push := func(f mux.Frame) {
				t.Helper()
				if err := b.Push(f); err != nil {
					t.Fatal(err)
				}
				pushed[f.TrackID]++
				out = append(out, drain(b)...)
			}
			video, audio := int64(0), int64(0)
			live := func(upto int64) { // both tracks in real time up to upto ms
				for ; audio < upto; audio += audioStep {
					clock.t = start.Add(time.Duration(audio) * time.Millisecond)
					push(frame(2, audio, true))
					for ; video <= audio && (video < tc.videoUntil || video >= outageFrom && tc.videoBack); video += videoStep {
						push(frame(1, video, video%990 == 0))
					}
					if video >= tc.videoUntil && video < outageFrom {
						video = outageFrom // it stopped: skip to where it may come back
					}
				}
			}
			live(outageFrom)
			// The outage: nothing for 1.5 s of wall time.
			clock.t = start.Add((outageFrom + outage) * time.Millisecond)
			out = append(out, drain(b)...)
			// The burst: the audio the outage held back first, then the
			// video's, a millisecond apart.
			for ; audio < outageFrom+outage; audio += audioStep {
				clock.t = clock.t.Add(100 * time.Microsecond)
				push(frame(2, audio, true))
			}
			if tc.videoBack {
				for ; video < outageFrom+outage; video += videoStep {
					clock.t = clock.t.Add(100 * time.Microsecond)
					push(frame(1, video, video%990 == 0))
				}
			}
			live(end)
			idled := b.Stats().Idled // before the flush, which idles what waits
			out = append(out, flushAll(b)...)
			st := b.Stats()
			if n := inOrderCount(t, out, 1); n != pushed[1] || st.Late != 0 {
				t.Fatalf("%d of %d video frames left, %d late (stats %+v)", n, pushed[1], st.Late, st)
			}
			if n := inOrderCount(t, out, 2); n != pushed[2] {
				t.Fatalf("%d of %d audio frames left (stats %+v)", n, pushed[2], st)
			}
			if idled != tc.wantIdled {
				t.Fatalf("idled %d, want %d (stats %+v)", idled, tc.wantIdled, st)
			}
			if !tc.videoBack && st.Delay != 500*time.Millisecond {
				t.Fatalf("the delay grew to %v for a track that had stopped", st.Delay)
			}
		})
	}
}

// TestAFileWaitsForATrackWhoseFramesComeLateInWallTime: in a file
// (MediaTimeOnly, MaxDelay 5 s) the audio's frames reach the buffer late in
// wall time while the video's keep coming: the audio stalls alone for
// 1.5 s (or, after a stall of both, its burst lands 0.7 s after the
// video's), then everything it held comes at once. Nothing is late: a file
// waits up to MaxDelay for a track that has started. Before, a track that
// had pushed nothing for the delay (500 ms) of wall time was taken for a
// silent one and declared idle, and the audio that came then was dropped
// as late: a loaded recorder, whose audio (a stream per frame) fell 0.6 s
// behind its video (one stream), lost 27 frames of an MKV file
// ("aac: received 469, written 439, dropped late 27").
func TestAFileWaitsForATrackWhoseFramesComeLateInWallTime(t *testing.T) {
	const (
		videoStep = 33
		audioStep = 21
		stallFrom = 1300 // ms, on the publisher's clock and the wall's
		end       = 6000
	)
	for _, tc := range []struct {
		name string
		// bothStall: nothing at all reaches the buffer for stall ms;
		// else only the audio stalls. audioAfter: how long after the
		// stall's end the audio's burst lands (ms).
		bothStall         bool
		stall, audioAfter int64
	}{
		{name: "the audio stalls alone for 1.5 s", stall: 1500},
		{name: "the audio stalls alone for 4 s", stall: 4000},
		{name: "both stall for 1.5 s and the audio lands 0.7 s after the video", bothStall: true, stall: 1500, audioAfter: 700},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Unix(0, 0)
			b, clock := newFileBuffer(start)
			var out []Item
			pushed := map[int]int{}
			video, audio := int64(0), int64(0)
			// Every millisecond of wall time, each track delivers
			// what it holds up to then, as long as it may.
			for now := int64(0); now <= end; now++ {
				clock.t = start.Add(time.Duration(now) * time.Millisecond)
				stalled := now >= stallFrom && now < stallFrom+tc.stall
				videoFlows := !stalled || !tc.bothStall
				audioFlows := now < stallFrom || now >= stallFrom+tc.stall+tc.audioAfter
				for ; videoFlows && video <= now; video += videoStep {
					if err := b.Push(frame(1, video, video%(30*videoStep) == 0)); err != nil {
						t.Fatal(err)
					}
					pushed[1]++
				}
				for ; audioFlows && audio <= now; audio += audioStep {
					if err := b.Push(frame(2, audio, true)); err != nil {
						t.Fatal(err)
					}
					pushed[2]++
				}
				out = append(out, drain(b)...)
			}
			out = append(out, flushAll(b)...)
			st := b.Stats()
			if v, a := inOrderCount(t, out, 1), inOrderCount(t, out, 2); v != pushed[1] || a != pushed[2] || st.Late != 0 {
				t.Fatalf("%d of %d video and %d of %d audio frames left, %d late (stats %+v)", v, pushed[1], a, pushed[2], st.Late, st)
			}
		})
	}
}
