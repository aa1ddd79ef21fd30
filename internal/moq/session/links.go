package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// A session's connections, one at a time: the one served now (which the
// tracks wait for, WaitConn), the one a GOAWAY dialled ahead of the old
// one's end (make before break), and the loop that replaces a lost one
// (Run). A dialled session reconnects until it is closed, refused or gives
// up; an accepted one ends with its connection. Nothing here knows a
// protocol: what a connection's end means (a refusal, a lesson about the
// server) is the session's to say, through Links' hooks.

// Link is one connection of a session as its loop sees it.
type Link interface {
	// Context is done when the connection is gone.
	Context() context.Context
	// Cause is why the connection is gone (nil while it is not).
	Cause() error
	// Close closes the connection with an application code and reason.
	Close(code uint64, reason string)
}

// Backoff paces the redials of a session: the first attempt after the
// loss of a connection that lasted is made at once; then the delay before
// attempt n is a random value in [d/2, d] with d = min(Min*2^n, Max).
type Backoff struct {
	Min, Max time.Duration
	// GiveUp ends the session when no connection succeeded for this long
	// (0: never).
	GiveUp time.Duration
	// Disabled: the session ends with its first connection.
	Disabled bool
}

// Delay is the wait before reconnect attempt n (from 0): none for the
// first one when atOnce is set, then the jittered exponential backoff.
func (b Backoff) Delay(attempt int, atOnce bool) time.Duration {
	if atOnce {
		if attempt == 0 {
			return 0
		}
		attempt--
	}
	d := b.Min << min(attempt, 20)
	if d > b.Max || d <= 0 {
		d = b.Max
	}
	return Jitter(d)
}

// Jitter returns a random wait in [d/2, d] (d >= 0): what the reconnect
// backoff and the facade's reach probes wait, so that sessions that lost
// one relay at once spread out.
func Jitter(d time.Duration) time.Duration {
	return d/2 + time.Duration(mrand.Int64N(int64(d/2)+1))
}

// Links are a session's connections of type L (the facade's connection
// with its family). Its exported fields are set once, before Start.
type Links[L Link] struct {
	Log     *slog.Logger
	Backoff Backoff
	// GiveUp is Backoff.GiveUp, or what a test sets instead (nil: the
	// Backoff's).
	GiveUp func() time.Duration
	// IdleTimeout: a connection that lasted this long was not a failed
	// attempt (the next dial goes at once).
	IdleTimeout time.Duration
	// BackoffFrom (tests): a failed redial counts as at least this many
	// failures in a row.
	BackoffFrom int
	// Closed is the error a session closed by its owner ends with.
	Closed error

	// Dial connects once (nil: an accepted session, which ends with its
	// connection).
	Dial func(ctx context.Context) (L, error)
	// Serve serves l until it is gone.
	Serve func(l L)
	// Refused reports whether l's end (cause) is a refusal that another
	// attempt cannot change, and the error the session ends with (it
	// says so in the log); RefusedDial the same of a failed dial.
	Refused     func(l L, cause error) (error, bool)
	RefusedDial func(err error) (error, bool)
	// Learn is told of a connection that ended sooner than the idle
	// timeout: it reports whether the session learnt what the next
	// connection does differently (not a failure then).
	Learn func(l L, cause error) bool
	// Probe watches the peer while a redial run lasts (nil: no probing):
	// back receives each time the peer answers after a silence; stop ends
	// the probes.
	Probe func(ctx context.Context) (back <-chan struct{}, stop func())
	// Reconnected is told of each connection after the first.
	Reconnected func(l L)
	// Target names where the session dials, for logs.
	Target func() string
	// Finish ends the session for good with err (nil: closed by its
	// owner); it calls End.
	Finish func(err error)
	// Go runs f as one of the session's goroutines.
	Go func(f func())

	mu      sync.Mutex
	cur     L
	has     bool
	gen     uint64
	changed chan struct{} // closed and replaced when cur changes or the session ends
	err     error         // why the session ended (nil while it runs)
	closing bool          // Shut was called: Start serves nothing
	// next is the connection a GOAWAY dialled before the old one closes.
	next    L
	hasNext bool
	// moved: the current connection ends because of a GOAWAY; the next
	// one goes at once.
	moved      atomic.Bool
	reconnects atomic.Int64
}

func (k *Links[L]) changedLocked() {
	if k.changed != nil {
		close(k.changed)
	}
	k.changed = make(chan struct{})
}

// Start serves first, and what replaces it, until the session ends, on
// one of the session's goroutines (run by Go). It reports false when the
// session is shut already: first is closed then.
func (k *Links[L]) Start(ctx context.Context, first L) bool {
	k.mu.Lock()
	if k.closing {
		k.mu.Unlock()
		first.Close(0, "")
		return false
	}
	// Under mu: a Shut that follows waits for its session's goroutines,
	// and must not meet this one being added.
	k.Go(func() { k.run(ctx, first) })
	k.mu.Unlock()
	return true
}

// Shut marks the session closing (Start serves nothing from now on) and
// returns its current connection.
func (k *Links[L]) Shut() (L, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closing = true
	return k.cur, k.has
}

// End records err as why the session ended (the first one wins; nil is
// Closed), wakes whoever waits for a connection, closes the connection a
// GOAWAY dialled ahead, and returns the error recorded.
func (k *Links[L]) End(err error) error {
	k.mu.Lock()
	if k.err == nil {
		k.err = err
	}
	if k.err == nil {
		k.err = k.Closed
	}
	err = k.err
	k.changedLocked()
	next, hasNext := k.next, k.hasNext
	var zero L
	k.next, k.hasNext = zero, false
	k.mu.Unlock()
	if hasNext {
		next.Close(0, "")
	}
	return err
}

// Err is why the session ended (nil while it runs).
func (k *Links[L]) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// Current returns the connection served now.
func (k *Links[L]) Current() (L, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cur, k.has
}

// Reconnects is how many times the session reconnected.
func (k *Links[L]) Reconnects() int64 { return k.reconnects.Load() }

// WaitConn returns the current connection once its generation differs
// from prev, waiting for a (re)connect; the session's end is an error.
func (k *Links[L]) WaitConn(ctx context.Context, prev uint64) (L, uint64, error) {
	for {
		k.mu.Lock()
		if k.changed == nil {
			k.changed = make(chan struct{})
		}
		c, has, gen, ch, err := k.cur, k.has, k.gen, k.changed, k.err
		k.mu.Unlock()
		var zero L
		if err != nil {
			return zero, 0, err
		}
		if has && gen != prev && c.Context().Err() == nil {
			return c, gen, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return zero, 0, context.Cause(ctx)
		}
	}
}

// serve installs c as the current connection, serves it and returns when
// it is gone.
func (k *Links[L]) serve(c L) {
	k.mu.Lock()
	k.cur, k.has = c, true
	k.gen++
	gen := k.gen
	k.changedLocked()
	k.mu.Unlock()

	k.Serve(c)

	k.mu.Lock()
	if k.gen == gen && k.has {
		var zero L
		k.cur, k.has = zero, false
		k.changedLocked()
	}
	k.mu.Unlock()
}

// MoveAway handles the peer's GOAWAY on c: the next connection is dialled
// now, while c still delivers (make before break), and c is closed once
// that dial is done and grace has passed; the loop then serves the new
// connection at once. ctx is the session's.
func (k *Links[L]) MoveAway(ctx context.Context, c L, grace time.Duration) {
	k.moved.Store(true)
	k.Go(func() {
		wait := time.NewTimer(grace)
		defer wait.Stop()
		if !k.Backoff.Disabled {
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			nc, err := k.Dial(dctx)
			cancel()
			if err != nil {
				k.Log.Warn("moq: dialling the session GOAWAY names failed; reconnecting after the old one ends", "err", err)
			} else {
				k.mu.Lock()
				if k.closing || k.err != nil || ctx.Err() != nil {
					k.mu.Unlock()
					nc.Close(0, "")
				} else {
					old, hadOld := k.next, k.hasNext
					k.next, k.hasNext = nc, true
					k.mu.Unlock()
					if hadOld {
						old.Close(0, "")
					}
				}
			}
		}
		select {
		case <-wait.C:
		case <-c.Context().Done():
		}
		c.Close(0, "going away")
	})
}

// takeNext returns the connection a GOAWAY dialled ahead, if any.
func (k *Links[L]) takeNext() (L, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	nc, ok := k.next, k.hasNext
	var zero L
	k.next, k.hasNext = zero, false
	return nc, ok
}

// giveUp is the session's give-up time.
func (k *Links[L]) giveUp() time.Duration {
	if k.GiveUp != nil {
		return k.GiveUp()
	}
	return k.Backoff.GiveUp
}

// run serves connections until the session ends.
//
// A connection the peer closed with a refusal that retrying cannot fix
// (Refused) ends the session with the refusal's error. A connection that
// ended sooner than the idle timeout after its start (a server that takes
// the session and drops it at once) counts as a failed attempt, as a
// failed dial does: the backoff keeps growing over such a run of
// failures, and GiveUp counts from its first one, so that a server that
// closes every session right after SETUP is not redialled in a tight loop
// forever.
func (k *Links[L]) run(ctx context.Context, c L) {
	var st retryRun
	for {
		began := time.Now()
		k.serve(c)
		cause := c.Cause()
		if ctx.Err() != nil {
			k.Finish(nil)
			return
		}
		if k.Dial != nil {
			if refused, ok := k.Refused(c, cause); ok {
				k.Finish(refused)
				return
			}
		}
		if k.Dial == nil || k.Backoff.Disabled {
			k.Finish(cause)
			return
		}
		moved := k.moved.Swap(false)
		// The first reconnect follows at once when the connection lasted
		// at least the idle timeout, or was lost to it, or after GOAWAY;
		// one that failed sooner is a failed attempt.
		atOnce := moved || time.Since(began) >= k.IdleTimeout || idleTimedOut(cause)
		switch {
		case atOnce:
			st = retryRun{}
		case k.Learn(c, cause):
			// The server refused a request the next connection will not
			// make: not a failure, though not at once either (a lesson is
			// learnt once, so this cannot loop).
			st = retryRun{}
		default:
			st.fail(began)
		}
		delay := st.delay(k.Backoff, atOnce)
		if moved {
			k.Log.Info("moq: moving the session after GOAWAY", "to", k.Target())
		} else {
			k.Log.Warn("moq: connection lost, reconnecting", "err", cause, "lasted", time.Since(began).Round(time.Millisecond),
				"failed_in_a_row", st.failures, "retry_in", delay.Round(time.Millisecond))
		}
		if giveUp := k.giveUp(); st.failures > 0 && giveUp > 0 && time.Since(st.since) > giveUp {
			k.Finish(fmt.Errorf("moq: gave up reconnecting after %v: every session ended within %v of its start: %w", giveUp, k.IdleTimeout, cause))
			return
		}
		if nc, ok := k.takeNext(); moved && ok {
			c = nc
		} else {
			if ok {
				nc.Close(0, "")
			}
			var dialled bool
			if c, dialled = k.redial(ctx, &st, delay); !dialled {
				return
			}
		}
		k.reconnects.Add(1)
		k.Reconnected(c)
	}
}

// idleTimedOut reports whether a connection was lost to its idle timeout.
// Such a connection went silent for the whole timeout after it last heard
// its peer, so it was no failed attempt, even when it ended sooner than
// the timeout after began: the loop starts that clock after Reconnected
// (the resubscriptions), which a stalled process runs late. Under -race at
// load ~30 a redialled connection was lost so, taken for a failed attempt,
// and the next dial waited out the backoff.
func idleTimedOut(cause error) bool {
	var ne net.Error
	return errors.As(cause, &ne) && ne.Timeout()
}

// retryRun is a run of failed attempts in a row: dials that failed and
// connections that ended right after their start.
type retryRun struct {
	failures int
	since    time.Time // when the first of them began
}

func (r *retryRun) fail(began time.Time) {
	if r.failures == 0 {
		r.since = began
	}
	r.failures++
}

// delay is the wait before the next attempt: none after a connection that
// lasted (atOnce), then the backoff at the run's length.
func (r *retryRun) delay(b Backoff, atOnce bool) time.Duration {
	if atOnce && r.failures == 0 {
		return 0
	}
	return b.Delay(max(r.failures-1, 0), false)
}

// redial dials after delay, and again with the backoff of the run st
// (which every failed dial lengthens) until a dial succeeds; meanwhile the
// peer is probed, and its answer after a silence cuts the wait short.
// GiveUp counts from the run's first failure, or from now. It reports
// false when the session ended (closed, refused or given up).
func (k *Links[L]) redial(ctx context.Context, st *retryRun, delay time.Duration) (L, bool) {
	var zero L
	start := time.Now()
	if st.failures > 0 {
		start = st.since
	}
	var back <-chan struct{}
	if k.Probe != nil {
		var stop func()
		back, stop = k.Probe(ctx)
		defer stop()
	}
	for attempt := 0; ; attempt++ {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			k.Finish(nil)
			return zero, false
		case <-t.C:
		case <-back:
			t.Stop()
		}
		began := time.Now()
		c, err := k.dialWatched(ctx, back)
		if err == nil {
			return c, true
		}
		if refused, ok := k.RefusedDial(err); ok {
			k.Finish(refused)
			return zero, false
		}
		st.fail(began)
		st.failures = max(st.failures, k.BackoffFrom)
		delay = st.delay(k.Backoff, false)
		k.Log.Warn("moq: reconnect failed", "attempt", attempt+1, "err", err, "failed_in_a_row", st.failures, "retry_in", delay.Round(time.Millisecond))
		if ctx.Err() != nil {
			k.Finish(nil)
			return zero, false
		}
		if giveUp := k.giveUp(); giveUp > 0 && time.Since(start) > giveUp {
			k.Finish(fmt.Errorf("moq: gave up reconnecting after %v: %w", giveUp, err))
			return zero, false
		}
	}
}

// dialWatched dials; when the peer answers again after a silence (back)
// while that dial is in flight, a second dial starts at once (the first
// may be waiting out the long backoff its handshake packets took while
// nothing answered), and the first of the two to connect is taken; the
// other is cancelled, or closed should it connect too. The first dial is
// not cancelled when the peer answers: a server coming back answers the
// probe and the dial's waiting handshake packets at the same moment, and
// a dial cancelled as its handshake completes leaves the server a session
// nobody speaks on, until its idle timeout. A publisher that accepts one
// session (the reference's test publisher) then never served the recorder
// again (1 of 160 reference restarts at load 8-14).
func (k *Links[L]) dialWatched(ctx context.Context, back <-chan struct{}) (L, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		c   L
		err error
	}
	results := make(chan result, 2)
	dial := func() {
		dctx, cancelTimeout := context.WithTimeout(ctx, 10*time.Second)
		defer cancelTimeout()
		c, err := k.Dial(dctx)
		results <- result{c, err}
	}
	go dial()
	pending := 1
	for {
		select {
		case <-back:
			back = nil // one more dial at most
			pending++
			go dial()
		case r := <-results:
			pending--
			if r.err != nil && pending > 0 {
				continue // the other one may still connect
			}
			if pending > 0 {
				// Abandon the other; closed if it connected meanwhile.
				go func() {
					if o := <-results; o.err == nil {
						o.c.Close(0, "")
					}
				}()
			}
			return r.c, r.err
		}
	}
}
