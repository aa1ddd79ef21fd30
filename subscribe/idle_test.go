package subscribe

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/moq/settle"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
)

// TestFinishedGroupEndsAtTheSubscriberWithoutTheNextOne: the publisher
// FINs a group's stream as soon as its model group is finished, not when
// the next group begins: the subscriber's group is complete (and its
// reader of the stream gone) while the broadcast pauses, with every frame.
// A paused broadcast's recorder otherwise holds a reader per track.
func TestFinishedGroupEndsAtTheSubscriberWithoutTheNextOne(t *testing.T) {
	versions := []string{"lite-05", "lite-04", "lite-03", "lite-02"}
	groups := []struct {
		name   string
		frames int
	}{{"one frame", 1}, {"a GOP", 30}}
	for _, ver := range versions {
		for _, gr := range groups {
			t.Run(ver+"/"+gr.name, func(t *testing.T) {
				st := subscribeTrack(t, Options{Versions: []string{ver}}, "v")
				ctx, pt, tr, cons := st.ctx, st.pub, st.track, st.cons
				g, _ := pt.AppendGroup()
				for i := range gr.frames {
					// The legacy container: a varint timestamp, then the payload.
					g.WriteFrame(model.Frame{Timestamp: int64(i) * 33_000, Payload: []byte{0, byte(i), 1, 2, 3}})
				}
				g.Close(nil)
				waitFor(t, "the group finished at the subscriber", func() bool {
					sg := tr.NewestGroup()
					if sg == nil {
						return false
					}
					_, finished, _ := sg.Frames(0)
					return finished
				})
				frames, _, err := tr.NewestGroup().Frames(0)
				if err != nil || len(frames) != gr.frames {
					t.Fatalf("%d frames (%v), want %d", len(frames), err, gr.frames)
				}
				evs, err := readEvents(ctx, cons, func(evs []model.Event) bool { return frameCount(evs) >= gr.frames })
				if err != nil || frameCount(evs) != gr.frames {
					t.Fatalf("%d frames read (%v), want %d", frameCount(evs), err, gr.frames)
				}
			})
		}
	}
}

// TestReleaseReadDropsWhatTheRecorderRead: with Options.ReleaseRead a
// remote media track keeps no payload its consumer has read, also of the
// group a paused publisher leaves open; catalog tracks, and every track
// without the option, keep theirs.
func TestReleaseReadDropsWhatTheRecorderRead(t *testing.T) {
	cases := []struct {
		name     string
		release  bool
		track    string
		wantKept int // of 3 frames read
	}{
		{"media, released", true, "v", 0},
		{"catalog, kept", true, "catalog.json", 3},
		{"media, option off", false, "v", 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := subscribeTrack(t, Options{ReleaseRead: tc.release}, tc.track)
			ctx, pt, tr, cons := st.ctx, st.pub, st.track, st.cons
			g, _ := pt.AppendGroup() // left open: the publisher pauses
			for i := range 3 {
				g.WriteFrame(model.Frame{Timestamp: int64(i) * 33_000, Payload: []byte{0, byte(i), 1, 2, 3}})
			}
			evs, err := readEvents(ctx, cons, func(evs []model.Event) bool { return frameCount(evs) >= 3 })
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				if ev.Kind == model.EventFrame && len(ev.Frame.Payload) == 0 {
					t.Fatalf("frame read without its payload: %+v", ev)
				}
			}
			frames, _, _ := tr.NewestGroup().Frames(0)
			kept := 0
			for _, f := range frames {
				if f.Payload != nil {
					kept++
				}
			}
			if len(frames) != 3 || kept != tc.wantKept {
				t.Fatalf("%d frames held, %d with their payload; want 3, %d", len(frames), kept, tc.wantKept)
			}
		})
	}
}

// TestIdleSubscriptionParksOnAShallowGoroutine: once subscribed, a track
// whose publisher sends nothing waits for its next response on a goroutine
// that did nothing but the wait (the core's run.wait over liteSubscription.Wait,
// or ietfSubscription.Wait for moq-transport), and no goroutine
// of the setup (the track's run, its attempt, SUBSCRIBE) is left waiting
// with the stack it grew. When the publisher ends the track, the parked
// subscription goes on and ends it.
func TestIdleSubscriptionParksOnAShallowGoroutine(t *testing.T) {
	for _, ver := range []string{"lite-05", "lite-04", "lite-03", "lite-02", "moq-transport-14", "moq-transport-17"} {
		t.Run(ver, func(t *testing.T) {
			st := subscribeTrack(t, Options{Versions: []string{ver}}, "v")
			ctx, pt, cons := st.ctx, st.pub, st.cons
			waitFor(t, "one parked wait and no setup goroutine waiting", func() bool {
				parked, setup := subscriptionGoroutines()
				return parked == 1 && setup == 0
			})
			pt.Close(nil)
			evs, err := readEvents(ctx, cons, func(evs []model.Event) bool {
				return len(evs) > 0 && evs[len(evs)-1].Kind == model.EventEnd
			})
			if err != nil {
				t.Fatal(err)
			}
			if end := evs[len(evs)-1]; end.Err != nil {
				t.Fatalf("track ended with %v, want a clean end", end.Err)
			}
		})
	}
}

// subscribed is a track published on a loopback session and subscribed
// to from the other end.
type subscribed struct {
	ctx    context.Context // the test's, 20 s
	client *Session        // the subscriber
	pub    *model.Track    // the published track
	track  *model.Track    // the subscriber's track
	cons   *model.Consumer // the subscriber's consumer of it
}

// subscribeTrack publishes track name of broadcast "live" and subscribes
// to it with opts (its certificate pin, logger and, unless set, a legacy
// container filled in), returning once the publisher serves the
// subscription. Everything ends with the test.
func subscribeTrack(t *testing.T, opts Options, name string) subscribed {
	t.Helper()
	srv, pin := startServer(t, "127.0.0.1:0")
	t.Cleanup(func() { srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	opts.TLSFingerprint, opts.Logger = pin, testLogger(t)
	if opts.container == nil {
		opts.container = func(string, string) string { return "legacy" }
	}
	client, peer := dialAndAccept(t, ctx, srv, "moql://"+srv.Addr().String()+"/", opts)
	t.Cleanup(func() { client.Close() })
	pb := model.NewBroadcast("live")
	pt := pb.CreateTrack(name)
	if err := peer.Publish(pb); err != nil {
		t.Fatal(err)
	}
	tr, err := client.Broadcast("live").Track(name)
	if err != nil {
		t.Fatal(err)
	}
	cons := tr.Subscribe(0)
	waitFor(t, "the subscription", func() bool { return peer.pub.servingTrack("live", name) == 1 })
	return subscribed{ctx: ctx, client: client, pub: pt, track: tr, cons: cons}
}

// subscriptionGoroutines counts the goroutines parked in a subscription's
// wait with nothing of the setup below, and those inside a track's run.
// The frames of a parked subscription's goroutine (session.Subscribe's
// run, whatever its family): the wait, and the wake that goes on.
const (
	parkedWaitFrame = "session.(*run[...]).wait("
	wokenFrame      = "session.(*run[...]).woken("
)

func subscriptionGoroutines() (parked, setup int) {
	for _, g := range mediatest.Goroutines() {
		switch {
		case strings.Contains(g, "(*remoteBroadcast).run(") || strings.Contains(g, "session.(*Remote).attempt("):
			setup++
		case strings.Contains(g, parkedWaitFrame):
			parked++
		}
	}
	return parked, setup
}

// TestSettleParksTheWaitsAfresh: Session.settle ends each parked wait's
// goroutine and parks the wait on a new one, returning once it did; the
// subscription goes on as if nothing happened (its next group and its end
// arrive), also when settle races the end or a restart of the track (whose
// wake must not be lost to the deadline settle clears).
func TestSettleParksTheWaitsAfresh(t *testing.T) {
	for _, ver := range []string{"lite-05", "moq-transport-14", "moq-transport-17"} {
		for _, tc := range []string{"alone", "racing the end", "racing a restart"} {
			t.Run(ver+"/"+tc, func(t *testing.T) { settleCase(t, ver, tc) })
		}
	}
}

func settleCase(t *testing.T, ver, tc string) {
	st := subscribeTrack(t, Options{Versions: []string{ver}}, "v")
	ctx, client, pt, cons := st.ctx, st.client, st.pub, st.cons
	var before string
	waitFor(t, "the parked wait", func() bool {
		ids := parkedWaits()
		if len(ids) == 1 {
			before = ids[0]
		}
		return len(ids) == 1
	})
	client.mu.Lock()
	rt := client.remotes["live"].tracks["v"]
	client.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() {
		if !settle.Session(ctx, client) {
			t.Error("internal/moq/settle does not know a *Session")
		}
	})
	switch tc {
	case "racing the end":
		pt.Close(nil)
	case "racing a restart":
		rt.Restart()
	}
	wg.Wait()
	switch tc {
	case "alone":
		// The new goroutine may not have run yet: wait for it.
		waitFor(t, "the wait parked on a new goroutine", func() bool {
			after := parkedWaits()
			return len(after) == 1 && after[0] != before
		})
	case "racing a restart":
		waitFor(t, "the track subscribed again", func() bool {
			c, _, gen := rt.Current()
			return gen == 2 && c != nil
		})
		waitFor(t, "the new subscription's wait", func() bool { return len(parkedWaits()) == 1 })
	}
	want := 0
	if tc != "racing the end" {
		g, _ := pt.AppendGroup()
		g.WriteFrame(model.Frame{Timestamp: 0, Payload: []byte{0, 1, 2, 3}})
		g.Close(nil)
		pt.Close(nil)
		want = 1
	}
	evs, err := readEvents(ctx, cons, func(evs []model.Event) bool {
		return len(evs) > 0 && evs[len(evs)-1].Kind == model.EventEnd
	})
	if err != nil {
		t.Fatal(err)
	}
	if end := evs[len(evs)-1]; end.Err != nil {
		t.Fatalf("track ended with %v after settle, want a clean end", end.Err)
	}
	if frameCount(evs) != want {
		t.Fatalf("%d frames after settle, want %d", frameCount(evs), want)
	}
}

// parkedWaits returns the goroutine IDs of the waits parked in a
// subscription's wait.
func parkedWaits() []string {
	var ids []string
	for _, g := range mediatest.Goroutines() {
		if strings.Contains(g, parkedWaitFrame) && !strings.Contains(g, wokenFrame) {
			ids = append(ids, strings.Fields(g)[1])
		}
	}
	return ids
}
