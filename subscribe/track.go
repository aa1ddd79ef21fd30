package subscribe

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moq-export/moq-export/internal/cmaf"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe/internal/container"
)

// remoteTrack is one subscribed track; it survives reconnects.
type remoteTrack struct {
	rb    *remoteBroadcast
	name  string
	track *model.Track
	kind  string
	// cmafInit is the init of a cmaf track, set before it subscribes.
	cmafInit *cmaf.Init

	// groupBytes is the payload size of the last group read to its end:
	// how big the next group's slab starts (readGroup).
	groupBytes atomic.Int64

	// live is set once TRACK_INFO arrived: from then on the track resumes
	// after reconnects. Owned by the run goroutine.
	live bool

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
	holding     bool
	holdGen     uint64 // counts hold calls, so a late release spares a newer hold
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
// says.
func (rt *remoteTrack) run() {
	s := rt.rb.s
	log := s.log.With("broadcast", rt.rb.path, "track", rt.name)
	if rt.kind == "" {
		k, err := rt.rb.kindOf(rt.name)
		if err != nil {
			rt.track.Close(closeReason(err))
			return
		}
		if !decodable(k) {
			log.Warn("moq: unsupported container, track skipped", "container", k)
			rt.track.Close(fmt.Errorf("track %q: %w: %q", rt.name, ErrUnsupportedContainer, k))
			return
		}
		rt.kind = k
	}
	if rt.kind == container.CMAF {
		if err := rt.openCMAF(); err != nil {
			log.Warn("moq: cmaf track skipped", "err", err)
			rt.track.Close(err)
			return
		}
	}
	var gen uint64
	var refusedSince time.Time
	for {
		c, g, err := s.waitConn(rt.rb.ctx, gen)
		if err != nil {
			rt.track.Close(closeReason(err))
			return
		}
		gen = g
		err = rt.attempt(c)
		st := retryState{
			live: rt.live, broadcastDone: rt.rb.ctx.Err() != nil, connGone: err != nil && connGone(c, err),
			resumeWindow: rt.resumeWindow(), retryWait: s.opts.Reconnect.Min, announceWait: s.opts.Reconnect.Max,
		}
		switch refused := errors.Is(err, ErrRefused); {
		case refused && rt.live:
			if refusedSince.IsZero() {
				refusedSince = time.Now()
			}
			st.refusedFor = time.Since(refusedSince)
		case !refused:
			// The window counts one run of refusals, not the track's life.
			refusedSince = time.Time{}
		}
		action, wait := retryPolicy(err, st)
		switch action {
		case retryEnd:
			switch {
			case err == nil:
				log.Debug("moq: track ended")
			case st.broadcastDone:
				err = closeReason(context.Cause(rt.rb.ctx))
			case !st.live || !errors.Is(err, ErrRefused): // not the end of a resume window
				log.Warn("moq: subscription failed", "err", err)
			}
			rt.track.Close(err)
			return
		case retryNextConn:
			if rt.live {
				// The export waits for the groups missed meanwhile.
				rt.hold()
			}
			continue
		case retryOnAnnounce:
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
		case retryNow:
			if wait > 0 {
				log.Debug("moq: resubscribe refused, retrying", "err", err)
				if !sleepCtx(rt.rb.ctx, wait) {
					continue
				}
			}
		}
		gen = 0 // the same connection is fine
	}
}

// attempt runs one subscription on c, cancelled by a restart or the loss of
// c.
func (rt *remoteTrack) attempt(c conn) error {
	ctx, cancel := context.WithCancelCause(rt.rb.ctx)
	stop := context.AfterFunc(c.Context(), func() { cancel(connCause(c)) })
	rt.mu.Lock()
	rt.cancelAttempt = cancel
	rt.mu.Unlock()
	err := rt.subscribe(ctx, c)
	stop()
	cancel(nil)
	return err
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
