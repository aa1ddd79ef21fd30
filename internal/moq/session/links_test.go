package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestReconnectDelayIsZeroFirstAfterASteadyConnectionThenBacksOff(t *testing.T) {
	b := Backoff{Min: 100 * time.Millisecond, Max: time.Second}
	for _, tc := range []struct {
		name     string
		attempt  int
		atOnce   bool
		min, max time.Duration
	}{
		{"first after a steady connection", 0, true, 0, 0},
		{"second after a steady connection", 1, true, 50 * time.Millisecond, 100 * time.Millisecond},
		{"third after a steady connection", 2, true, 100 * time.Millisecond, 200 * time.Millisecond},
		{"first after a short-lived connection", 0, false, 50 * time.Millisecond, 100 * time.Millisecond},
		{"capped", 30, true, 500 * time.Millisecond, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 100 {
				if d := b.Delay(tc.attempt, tc.atOnce); d < tc.min || d > tc.max {
					t.Fatalf("delay %v, want within [%v, %v]", d, tc.min, tc.max)
				}
			}
		})
	}
}

// TestJitterWaitsBetweenHalfTheIntervalAndAllOfIt: the one jitter both
// the reconnect backoff and the reach probes wait stays in [d/2, d] and
// spreads over it (sessions that lost one relay do not redial or probe in
// step).
func TestJitterWaitsBetweenHalfTheIntervalAndAllOfIt(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 3, time.Second, 10 * time.Second} {
		lo, hi := d, time.Duration(0)
		for range 1000 {
			j := Jitter(d)
			if j < d/2 || j > d {
				t.Fatalf("Jitter(%v) = %v, want within [%v, %v]", d, j, d/2, d)
			}
			lo, hi = min(lo, j), max(hi, j)
		}
		if d >= time.Second && (lo > d/2+d/20 || hi < d-d/20) {
			t.Errorf("Jitter(%v) spread over [%v, %v] in 1000 draws, want about [%v, %v]", d, lo, hi, d/2, d)
		}
	}
}

// link is a connection for the loop's tests.
type link struct {
	ctx    context.Context
	cancel context.CancelFunc
	closed atomic.Int32
}

func newLink() *link {
	ctx, cancel := context.WithCancel(context.Background())
	return &link{ctx: ctx, cancel: cancel}
}

func (l *link) Context() context.Context { return l.ctx }
func (l *link) Cause() error             { return context.Cause(l.ctx) }
func (l *link) Close(uint64, string)     { l.closed.Add(1); l.cancel() }

// testLinks are the links of an accepted session (no Dial): it ends with
// its connection.
func testLinks(wg *sync.WaitGroup) *Links[*link] {
	k := &Links[*link]{Log: slog.New(slog.DiscardHandler), Closed: errors.New("closed"), Go: wg.Go}
	k.Serve = func(l *link) { <-l.ctx.Done() }
	k.Finish = func(err error) { k.End(err) }
	return k
}

func TestAConnectionStartedAfterShutIsClosedAndNeverServed(t *testing.T) {
	var wg sync.WaitGroup
	k := testLinks(&wg)
	k.Shut()
	l := newLink()
	if k.Start(context.Background(), l) {
		t.Fatal("Start after Shut served the connection")
	}
	if l.closed.Load() != 1 {
		t.Fatalf("the connection was closed %d times, want 1", l.closed.Load())
	}
	wg.Wait()
}

func TestWaitConnGetsEachNewConnectionAndThenTheSessionsEnd(t *testing.T) {
	var wg sync.WaitGroup
	k := testLinks(&wg)
	l := newLink()
	if !k.Start(context.Background(), l) {
		t.Fatal("Start refused")
	}
	got, gen, err := k.WaitConn(context.Background(), 0)
	if err != nil || got != l || gen == 0 {
		t.Fatalf("WaitConn = %v, %d, %v; want the connection started", got, gen, err)
	}
	// The same generation again waits for the next connection: an
	// accepted session has none, so it gets the session's end.
	ended := make(chan error, 1)
	go func() {
		_, _, err := k.WaitConn(context.Background(), gen)
		ended <- err
	}()
	// The session ends, then its connection: the other way round, the
	// loop's Finish would end it with the connection's own cause first
	// whenever this goroutine is not scheduled between the two (suite26
	// saw "context canceled" under load).
	cause := errors.New("peer gone")
	k.End(cause)
	l.cancel()
	select {
	case err := <-ended:
		if !errors.Is(err, cause) {
			t.Fatalf("WaitConn after the end: %v, want %v", err, cause)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitConn outlived the session")
	}
	wg.Wait()
	if err := k.End(errors.New("later")); !errors.Is(err, cause) {
		t.Fatalf("a later End replaced the first error: %v", err)
	}
}

// TestADialInFlightWhenThePeerAnswersAgainIsTakenWhenItConnects: a
// publisher restarting on its port answers the redial's waiting handshake
// and the probe at the same moment. The dial in flight is not abandoned
// when the probe's answer comes: a second dial starts beside it, and the
// first to connect is taken. The server here is the reference's test
// publisher, which accepts one session: the first dial's. Cancelling that
// dial as its handshake completed (the loop did) left the server holding
// a session nobody spoke on, every later dial failed, and the recording
// never resumed.
func TestADialInFlightWhenThePeerAnswersAgainIsTakenWhenItConnects(t *testing.T) {
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer wg.Wait()
	defer cancel()
	back := make(chan struct{}, 1)
	dialling, release := make(chan struct{}), make(chan struct{})
	reconnected := make(chan *link, 1)
	accepted := newLink()
	var dials atomic.Int32
	k := &Links[*link]{Log: slog.New(slog.DiscardHandler), Closed: errors.New("closed"), Go: wg.Go,
		Backoff: Backoff{Min: 10 * time.Millisecond, Max: 20 * time.Millisecond},
		Serve:   func(l *link) { <-l.ctx.Done() },
		Refused: func(*link, error) (error, bool) { return nil, false }, RefusedDial: func(error) (error, bool) { return nil, false },
		Learn:       func(*link, error) bool { return false },
		Probe:       func(context.Context) (<-chan struct{}, func()) { return back, func() {} },
		Reconnected: func(l *link) { reconnected <- l },
		Target:      func() string { return "publisher" },
	}
	k.Finish = func(err error) { k.End(err) }
	k.Dial = func(ctx context.Context) (*link, error) {
		if dials.Add(1) > 1 {
			return nil, errors.New("the publisher accepts no more sessions")
		}
		close(dialling)
		select {
		case <-release:
			return accepted, nil
		case <-ctx.Done():
			return nil, errors.New("dial abandoned as the publisher accepted its session")
		}
	}
	first := newLink()
	if !k.Start(ctx, first) {
		t.Fatal("Start refused")
	}
	first.cancel() // lost: the redial goes at once
	<-dialling
	back <- struct{}{} // the probe's answer
	for dials.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	close(release) // the first dial's handshake completes
	select {
	case l := <-reconnected:
		if l != accepted {
			t.Fatalf("reconnected on %p, want the session the publisher accepted", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no reconnect after %d dials: the dial the publisher accepted was abandoned", dials.Load())
	}
	accepted.cancel()
}

// idleTimeout is a connection's loss to its idle timeout, as a net.Error
// says it (quic-go's IdleTimeoutError).
type idleTimeout struct{}

func (idleTimeout) Error() string   { return "timeout: no recent network activity" }
func (idleTimeout) Timeout() bool   { return true }
func (idleTimeout) Temporary() bool { return false }

// TestAConnectionLostToTheIdleTimeoutIsRedialledAtOnceHoweverSoonItEnded:
// a connection lost to its idle timeout went silent that long after it
// last heard its peer, so it is no failed attempt even when the loop saw
// it end sooner than the timeout after its start (a process stalled
// between the handshake and the loop's clock). It was taken for one, and
// the redial waited out the backoff: TestVanishedPeerIsFoundByTheIdle-
// TimeoutAndRedialledAtOnce (subscribe) then got no SUBSCRIBE under load.
// A connection that ended as soon for another cause still backs off.
func TestAConnectionLostToTheIdleTimeoutIsRedialledAtOnceHoweverSoonItEnded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cause  error
		atOnce bool
	}{
		{"idle timeout", fmt.Errorf("moq: %w", idleTimeout{}), true},
		{"closed by the peer", errors.New("closed by the peer"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var wg sync.WaitGroup
			ctx, cancel := context.WithCancel(context.Background())
			defer wg.Wait()
			defer cancel()
			dialled := make(chan *link, 1)
			k := &Links[*link]{Log: slog.New(slog.DiscardHandler), Closed: errors.New("closed"), Go: wg.Go,
				Backoff: Backoff{Min: time.Hour, Max: time.Hour}, IdleTimeout: time.Hour,
				Serve:   func(l *link) { <-l.ctx.Done() },
				Refused: func(*link, error) (error, bool) { return nil, false }, RefusedDial: func(error) (error, bool) { return nil, false },
				Learn:       func(*link, error) bool { return false },
				Reconnected: func(*link) {},
				Target:      func() string { return "publisher" },
			}
			k.Finish = func(err error) { k.End(err) }
			k.Dial = func(context.Context) (*link, error) {
				l := newLink()
				dialled <- l
				return l, nil
			}
			lctx, lose := context.WithCancelCause(context.Background())
			first := &link{ctx: lctx, cancel: func() { lose(nil) }}
			if !k.Start(ctx, first) {
				t.Fatal("Start refused")
			}
			lose(tc.cause) // at once, far sooner than the idle timeout
			select {
			case l := <-dialled:
				if !tc.atOnce {
					t.Fatalf("redialled at once after a connection %s ended at once", tc.name)
				}
				l.cancel()
			case <-time.After(2 * time.Second):
				if tc.atOnce {
					t.Fatal("no redial: the connection lost to its idle timeout was taken for a failed attempt")
				}
			}
			cancel()
		})
	}
}
