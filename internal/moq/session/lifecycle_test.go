package session

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeSub is the family-facing subscription of the lifecycle tests.
type fakeSub struct {
	Subscription
	w *fakeWire
}

func (s *fakeSub) Logger() *slog.Logger                     { return slog.New(slog.DiscardHandler) }
func (s *fakeSub) Names() (string, string)                  { return "b", "video" }
func (s *fakeSub) Timeouts() (time.Duration, time.Duration) { return time.Second, time.Second }
func (s *fakeSub) PendingStreams() int                      { return 0 }
func (s *fakeSub) Unroute()                                 { s.w.Unroute(s) }

// fakeWire is a family's wire and track side that plays events and
// records what the lifecycle asked of it.
type fakeWire struct {
	mu        sync.Mutex
	live      bool
	acceptErr error
	events    []Event
	nextErr   error // returned once the events are used up, when set
	cut       bool  // the error leaves the group streams cut
	sub       *fakeSub
	calls     []string
	released  chan struct{}
	ready     chan struct{} // Wait returns once it is signalled
}

func (w *fakeWire) call(c string) {
	w.mu.Lock()
	w.calls = append(w.calls, c)
	w.mu.Unlock()
}

func (w *fakeWire) GoLive() bool { was := w.live; w.live = true; return was }
func (w *fakeWire) NewSubscription(ctx context.Context, cancel context.CancelCauseFunc, timescale uint64, waits Settler) (*fakeSub, *Subscription) {
	s := &fakeSub{w: w}
	s.Timescale, s.Ctx, s.Cancel, s.Host, s.Waits = timescale, ctx, cancel, s, waits
	s.Init()
	w.sub = s
	return s, &s.Subscription
}
func (w *fakeWire) Attach(uint64) func()                   { w.call("attach"); return func() { w.call("detach") } }
func (w *fakeWire) Start(first uint64)                     { w.call("start") }
func (w *fakeWire) Resume(context.Context, uint64, uint64) { w.call("resume") }
func (w *fakeWire) ReleaseAtLive(uint64, func() bool)      { w.call("release at live") }
func (w *fakeWire) NewTimeline()                           { w.call("new timeline") }
func (w *fakeWire) Gone(error) bool                        { return w.cut }
func (w *fakeWire) Loss(err error) error                   { return err }
func (w *fakeWire) Cut(error) bool                         { return w.cut }
func (w *fakeWire) Logger() *slog.Logger                   { return slog.New(slog.DiscardHandler) }
func (w *fakeWire) Names() (string, string)                { return "b", "video" }

func (w *fakeWire) Accept(context.Context) (uint64, bool, error)  { return 1000, false, w.acceptErr }
func (w *fakeWire) Route(*fakeSub) error                          { w.call("route"); return nil }
func (w *fakeWire) Unroute(*fakeSub)                              { w.call("unroute") }
func (w *fakeWire) Request(context.Context, *fakeSub, bool) error { return nil }
func (w *fakeWire) Ready() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.events) > 0 || w.nextErr != nil
}
func (w *fakeWire) Next() (Event, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.events) == 0 {
		err := w.nextErr
		w.nextErr = nil
		return Event{}, err
	}
	ev := w.events[0]
	w.events = w.events[1:]
	return ev, nil
}
func (w *fakeWire) Failed(err error, _ bool) error { return err }
func (w *fakeWire) Cancel()                        { w.call("cancel") }
func (w *fakeWire) Release(error, bool)            { w.call("release"); close(w.released) }
func (w *fakeWire) Wait() bool                     { <-w.ready; return false }
func (w *fakeWire) Resettle(bool) bool             { return false }
func (w *fakeWire) Wake()                          {}

// The publisher's end, bounded so that the drain does not wait for
// silence: it announced the end group, the first group named.
var endAt5 = []Event{{Kind: EventEnd, Group: 5}, {Kind: EventDone}}

func TestASubscriptionStartsItsTrackAsThePublisherSaysAndUndoesItAllAtTheEnd(t *testing.T) {
	lost := errors.New("connection lost")
	for _, tc := range []struct {
		name      string
		live      bool // the track was live before: a resumed subscription
		acceptErr error
		events    []Event
		nextErr   error
		cut       bool
		wantErr   error
		wantCalls []string
		wantLost  bool // the subscription's context ends as a lost connection
	}{
		{name: "a named start on a new track starts it there, the publisher's end is clean",
			events:    append([]Event{{Kind: EventStart, Start: StartNamed, Group: 5}}, endAt5...),
			wantCalls: []string{"route", "attach", "start", "unroute", "release", "detach", "unroute"}},
		{name: "a named start on a resumed track fills the gap first",
			live:      true,
			events:    append([]Event{{Kind: EventStart, Start: StartNamed, Group: 5}}, endAt5...),
			wantCalls: []string{"route", "attach", "resume", "release at live", "unroute", "release", "detach", "unroute"}},
		{name: "an unnamed start on a resumed track starts a new timeline",
			live:      true,
			events:    []Event{{Kind: EventStart, Start: StartUnnamed}, {Kind: EventDone, Err: lost}},
			wantErr:   lost,
			wantCalls: []string{"route", "attach", "new timeline", "release at live", "unroute", "release", "detach", "unroute"}},
		{name: "a refusal before the track was accepted ends the attempt without a subscription",
			acceptErr: lost, wantErr: lost, wantCalls: []string{"release"}},
		{name: "a lost connection leaves the group streams cut for the resumed subscription",
			events:  []Event{{Kind: EventStart, Start: StartAck}},
			nextErr: lost, cut: true, wantErr: lost, wantLost: true,
			wantCalls: []string{"route", "attach", "release", "detach", "unroute"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			w := &fakeWire{live: tc.live, acceptErr: tc.acceptErr, events: tc.events, nextErr: tc.nextErr, cut: tc.cut,
				released: make(chan struct{}), ready: make(chan struct{})}
			err, parked := Subscribe(ctx, cancel, w, w, func(error) { t.Error("a subscription that never parked handed its end over") })
			if parked || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("Subscribe: %v (parked %v), want %v", err, parked, tc.wantErr)
			}
			if !slices.Equal(w.calls, tc.wantCalls) {
				t.Fatalf("calls %q, want %q", w.calls, tc.wantCalls)
			}
			if got := errors.Is(context.Cause(ctx), ErrConnLost); got != tc.wantLost {
				t.Fatalf("the attempt ended with %v: lost %v, want %v", context.Cause(ctx), got, tc.wantLost)
			}
		})
	}
}

func TestAnIdleSubscriptionParksAndTheMessageThatWakesItEndsIt(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	w := &fakeWire{events: []Event{{Kind: EventStart, Start: StartNamed, Group: 5}},
		released: make(chan struct{}), ready: make(chan struct{})}
	ended := make(chan error, 1)
	err, parked := Subscribe(ctx, cancel, w, w, func(err error) { ended <- err })
	if err != nil || !parked {
		t.Fatalf("Subscribe: %v (parked %v), want parked", err, parked)
	}
	select {
	case <-w.released:
		t.Fatal("the parked subscription was released before its end")
	default:
	}
	w.mu.Lock()
	w.events = append(w.events, endAt5...)
	w.mu.Unlock()
	close(w.ready)
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("the woken subscription ended with %v, want a clean end", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the woken subscription never ended")
	}
}
