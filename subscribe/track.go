package subscribe

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/model"
)

// remoteTrack is one subscribed track; it survives reconnects.
type remoteTrack struct {
	rb    *remoteBroadcast
	name  string
	track *model.Track
	kind  string
	// pack decodes the track's payloads (package hang), set before it
	// subscribes.
	pack hang.Track

	// groupBytes is the payload size of the last group read to its end:
	// how big the next group's slab starts (readGroup).
	groupBytes atomic.Int64

	// live is set once TRACK_INFO arrived: from then on the track resumes
	// after reconnects. live, gen and refusedSince are owned by the run
	// (which may move between goroutines, see run).
	live bool
	// gen is the connection generation the next attempt waits past (0:
	// the current connection is fine).
	gen uint64
	// refusedSince starts the current run of refused resubscriptions.
	refusedSince time.Time
	// exit ends the run: it is called once, when the track has ended.
	exit func()

	mu            sync.Mutex
	cancelAttempt context.CancelCauseFunc // cancels the current subscription
	// The connection and timescale of the current subscription (conn nil
	// between subscriptions), for backfill; subGen counts subscriptions.
	conn      conn
	timescale uint64
	subGen    uint64
	// After a lost connection (resume.go): the groups it cut short, those
	// of them the resumed subscription delivers again, and whether the
	// model track is held.
	interrupted map[uint64]*model.Group
	adoptable   map[uint64]*model.Group
	// cutBefore are the cut groups a resumed subscription completes on
	// its live stream; newer groups wait for them (waitCutGroups).
	cutBefore []*model.Group
	holding   bool
	// verified is the cut group a resumed lite-06 subscription asked to
	// continue (floorOfCut), when verifiedOK: resume trusts it.
	verified   uint64
	verifiedOK bool
	holdGen    uint64 // counts hold calls, so a late release spares a newer hold
}

var errRestart = errors.New("moq: broadcast restarted")

func (rt *remoteTrack) restart() {
	rt.mu.Lock()
	if rt.cancelAttempt != nil {
		rt.cancelAttempt(errRestart)
	}
	rt.mu.Unlock()
}

// resumeWindow bounds how long a track that was live keeps retrying
// refusals after a reconnect or restart (the publisher may not be back on
// the relay yet).
func (rt *remoteTrack) resumeWindow() time.Duration {
	return 2*rt.rb.s.opts.Reconnect.Max + rt.rb.s.opts.resumeGrace
}

// run subscribes the track until it ends, resubscribing as retryPolicy
// says, then calls rt.exit.
//
// The run is one thread of control but not always one goroutine: a
// subscription that waits for its publisher's next response parks
// (session.Subscribe parks it), and the goroutine that the response wakes goes
// on with the run, to its end or to the next park. An idle recording's
// track then costs one shallow goroutine, not one that went deep.
func (rt *remoteTrack) run() {
	if !rt.prepare() {
		rt.exit()
		return
	}
	rt.loop(nil, nil)
}

// prepare learns the track's container (and a cmaf track's init); false
// closes the track.
func (rt *remoteTrack) prepare() bool {
	log := rt.rb.s.log
	if rt.kind == "" {
		k, err := rt.rb.kindOf(rt.name)
		if err != nil {
			rt.track.Close(closeReason(err))
			return false
		}
		if !hang.Decodable(k) {
			log.Warn("moq: unsupported container, track skipped", "broadcast", rt.rb.path, "track", rt.name, "container", k)
			rt.track.Close(fmt.Errorf("track %q: %w: %q", rt.name, ErrUnsupportedContainer, k))
			return false
		}
		rt.kind = k
	}
	pack, err := rt.packaging()
	if err != nil {
		log.Warn("moq: "+rt.kind+" track skipped", "broadcast", rt.rb.path, "track", rt.name, "err", err)
		rt.track.Close(err)
		return false
	}
	rt.pack = pack
	return true
}

// loop runs subscription attempts until the track ends. ended, when
// set, is the attempt on c that just ended with err: the retry policy
// decides first. loop returns early when an attempt parks; that attempt's
// end calls it again.
func (rt *remoteTrack) loop(c conn, ended *error) {
	s := rt.rb.s
	for {
		if ended != nil && !rt.retry(c, *ended) {
			rt.exit()
			return
		}
		nc, g, err := s.waitConn(rt.rb.ctx, rt.gen)
		if err != nil {
			rt.track.Close(closeReason(err))
			rt.exit()
			return
		}
		rt.gen, c = g, nc
		err, parked := rt.attempt(c)
		if parked {
			return
		}
		ended = &err
	}
}

// retry applies the retry policy to the attempt on c that ended with
// err, waiting as it says; false: the track is closed and its run ends.
func (rt *remoteTrack) retry(c conn, err error) bool {
	s := rt.rb.s
	st := retryState{
		live: rt.live, broadcastDone: rt.rb.ctx.Err() != nil, connGone: err != nil && connGone(c, err),
		resumeWindow: rt.resumeWindow(), retryWait: s.opts.Reconnect.Min, announceWait: s.opts.Reconnect.Max,
		renumbered: c != nil && connVersion(c).FrameRange,
	}
	st.ietf = c != nil && c.family().ietfCodes()
	switch refused := errors.Is(err, ErrRefused); {
	case refused:
		// 0 for the first refusal of a run (the policy tells it apart).
		if rt.refusedSince.IsZero() {
			rt.refusedSince = time.Now()
		} else {
			st.refusedFor = max(time.Since(rt.refusedSince), time.Nanosecond)
		}
	case !refused:
		// The window counts one run of refusals, not the track's life.
		rt.refusedSince = time.Time{}
	}
	log := s.log.With("broadcast", rt.rb.path, "track", rt.name)
	action, wait := retryPolicy(err, st)
	switch action {
	case session.RetryEnd:
		switch {
		case err == nil:
			log.Debug("moq: track ended")
		case st.broadcastDone:
			err = closeReason(context.Cause(rt.rb.ctx))
		case !st.live || !errors.Is(err, ErrRefused): // not the end of a resume window
			log.Warn("moq: subscription failed", "err", err)
		}
		rt.track.Close(err)
		return false
	case session.RetryNextConn:
		if rt.live {
			// The export waits for the groups missed meanwhile.
			rt.hold()
		}
		return true // rt.gen stays: the next connection
	case session.RetryOnAnnounce:
		log.Debug("moq: broadcast not routable yet, waiting for its announcement")
		rt.rb.mu.Lock()
		ch := rt.rb.activated
		rt.rb.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-ch:
		case <-t.C:
		case <-rt.rb.ctx.Done():
		}
		t.Stop()
	case session.RetryNow:
		if wait > 0 {
			log.Debug("moq: resubscribe refused, retrying", "err", err)
			if !sleepCtx(rt.rb.ctx, wait) {
				return true // the broadcast is done: the next attempt says so
			}
		}
	}
	rt.gen = 0 // the same connection is fine
	return true
}

// attempt runs one subscription on c, cancelled by a restart or the loss of
// c. parked: the subscription waits for a response on a parked goroutine,
// and its end goes on with the track's loop.
func (rt *remoteTrack) attempt(c conn) (err error, parked bool) {
	ctx, cancel := context.WithCancelCause(rt.rb.ctx)
	stop := context.AfterFunc(c.Context(), func() { cancel(connCause(c)) })
	rt.mu.Lock()
	rt.cancelAttempt = cancel
	rt.mu.Unlock()
	err, parked = rt.subscribe(ctx, cancel, c, func(err error) {
		stop()
		cancel(nil)
		rt.loop(c, &err)
	})
	if !parked {
		stop()
		cancel(nil)
	}
	return err, parked
}

func isResetCode(err error, code uint64) bool {
	re, ok := errors.AsType[*ResetError](err)
	return ok && re.Code == code
}

func closeReason(err error) error {
	if errors.Is(err, errStopped) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
