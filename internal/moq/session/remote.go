package session

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/model"
)

// The subscriber's tracks: a Remote is one subscribed track of a peer's
// broadcast, which outlives its subscriptions and the connections they
// run on. Its run subscribes it on the session's current connection
// through that connection's Family, and after each attempt the retry
// policy (Retry) says what comes next; a lost connection is waited out and
// the gap it left filled (remote_resume.go). The session that owns the track is
// its RemoteHost; the family that speaks on a connection is its Family.

var (
	// ErrRefused means the peer refused a TRACK or SUBSCRIBE request: it
	// said so (an error reply, a reset of the request, a FIN without an
	// answer). (Package subscribe names it as its own ErrRefused.)
	ErrRefused = errors.New("moq: request refused")
	// ErrTimeout means a request got no answer within the request timeout
	// on a connection that stayed up: the peer said nothing, neither yes
	// nor no. A request whose connection was lost meanwhile (a blackhole
	// times a request out before QUIC finds the peer silent) is not one:
	// it is made again on the next connection (LostWith). (Package
	// subscribe names it as its own ErrTimeout.)
	ErrTimeout = errors.New("moq: request timed out")
	// ErrProtocol means the peer broke the protocol (a malformed message,
	// an unexpected stream). (Package subscribe names it as its own.)
	ErrProtocol = errors.New("moq: protocol violation")
	// ErrRestart ends a subscription attempt whose broadcast restarted
	// (Remote.Restart): the track subscribes again at once.
	ErrRestart = errors.New("moq: broadcast restarted")
	// ErrStopped is the cause a broadcast's owner closing it gives: its
	// tracks end without an error.
	ErrStopped = errors.New("moq: stopped")
)

// Family is the protocol family that speaks on one connection, as the
// subscriber core sees it: moq-lite and moq-transport each implement it,
// and nothing in the core tells them apart otherwise. Values of one
// connection compare equal.
type Family interface {
	// Context is done when the connection is gone.
	Context() context.Context
	// Cause is why the connection is gone (nil while it is not).
	Cause() error
	// Gone reports whether err, from an operation on the connection,
	// says that the connection is gone (rather than one stream); Loss
	// returns why (its cause once known, err until then).
	Gone(err error) bool
	Loss(err error) error
	// Silence is how long the connection takes, as it stands now, to
	// find that its peer went silent (keep-alive, idle timeout and
	// QUIC's floor on it): a connection still up that long after a
	// request timed out was not lost with it (LostWith).
	Silence() time.Duration
	// NewSubscription is one subscription attempt of t in the family's
	// wire (Subscribe runs it).
	NewSubscription(ctx context.Context, t *Remote) SubscriptionWire
	// OpenFetch sends a FETCH of r for t in the family's wire and returns
	// its answer once the peer took it (a refusal: ErrNoFetch); what
	// names the request in errors. Fetch reads the reply.
	OpenFetch(ctx context.Context, t *Remote, timescale uint64, r FetchRange, what string) (FetchReply, error)
	// SessionEndingReset reports whether a group stream's reset says the
	// peer is closing or draining its session (the group is cut, and a
	// resumed subscription completes it).
	SessionEndingReset(err error) bool
	// RetryReset is what err's stream reset means to the retry policy
	// (ResetUnknown where the family's codes carry nothing it reads).
	RetryReset(err error) Reset
	// FrameRanges reports whether FETCH and SUBSCRIBE name frame ranges
	// (lite-06), GroupRanges whether one FETCH names a range of groups
	// (moq-transport), Fetches whether the version has FETCH at all.
	FrameRanges() bool
	GroupRanges() bool
	Fetches() bool
	// SpanSubscribes reports whether a SUBSCRIBE can ask for a span of
	// past groups (moq-lite-05+: Group Start and End, SUBSCRIBE_START
	// naming the first one it delivers; moq-transport: an absolute
	// range, ended by PUBLISH_DONE): what a resume asks of a peer that
	// serves no FETCH (subscribeSpan).
	SpanSubscribes() bool
	// VersionName names the connection's version, for log lines.
	VersionName() string
}

// SubscriptionWire is one subscription attempt in a family's wire, with
// the track's side of it (AttemptTrack, which the wire embeds): what
// Subscribe runs.
type SubscriptionWire interface {
	Track[*Sub]
	Wire[*Sub]
}

// RemoteConfig is what a session's options say to its tracks.
type RemoteConfig struct {
	// RequestTimeout bounds one request's answer.
	RequestTimeout time.Duration
	// DrainGrace bounds the wait for group streams after the publisher
	// ended a subscription.
	DrainGrace time.Duration
	// ReconnectMin and ReconnectMax are the reconnect backoff's bounds:
	// the pause between refused resubscriptions, the longest wait for an
	// announcement.
	ReconnectMin, ReconnectMax time.Duration
	// ResumeGrace is the part of a live track's resume window that does
	// not depend on the backoff.
	ResumeGrace time.Duration
	// Objects keeps the payloads as received (hang.Decoder.Verbatim).
	Objects bool
}

// RemoteHost is what a track needs of the session and the broadcast it
// belongs to.
type RemoteHost interface {
	// Logger is the session's.
	Logger() *slog.Logger
	// Config is the session's, fixed.
	Config() *RemoteConfig
	// Context is the broadcast's: done when it ends (its cause says
	// why: ErrStopped when its owner closed it).
	Context() context.Context
	// Activated is closed by the broadcast's next active announcement.
	Activated() <-chan struct{}
	// WaitConn returns the session's current connection once its
	// generation differs from prev (0: any), waiting for a (re)connect.
	WaitConn(ctx context.Context, prev uint64) (Family, uint64, error)
	// PendingStreams counts the streams the current connection accepted
	// and did not make into groups yet.
	PendingStreams() int
	// AddLost counts n groups lost to a connection outage.
	AddLost(n uint64)
	// Go runs f on a goroutine the session waits for when it closes.
	Go(f func())
}

// Remote is one subscribed track; it survives reconnects. Set its fields,
// then Run it once.
type Remote struct {
	Host RemoteHost
	// Broadcast is the broadcast's path, Name the track's.
	Broadcast, Name string
	Track           *model.Track
	// Pack decodes the track's payloads (package hang), set before Run.
	Pack hang.Track
	// Exit is called once, when the track has ended.
	Exit func()

	// GroupBytes is the payload size of the last group read to its end:
	// how big the next group's slab starts.
	GroupBytes atomic.Int64

	// live is set once the publisher accepted the track: from then on
	// the track resumes after reconnects. live, gen and refusedSince are
	// owned by the run (which may move between goroutines, see Run).
	live bool
	// gen is the connection generation the next attempt waits past (0:
	// the current connection is fine).
	gen uint64
	// refusedSince starts the current run of refused resubscriptions.
	refusedSince time.Time

	mu            sync.Mutex
	cancelAttempt context.CancelCauseFunc // cancels the current subscription
	// The connection and timescale of the current subscription (conn nil
	// between subscriptions), for backfill; subGen counts subscriptions.
	conn      Family
	timescale uint64
	subGen    uint64
	// After a lost connection (remote_resume.go): the groups it cut short, those
	// of them the resumed subscription delivers again, and whether the
	// model track is held.
	interrupted map[uint64]*model.Group
	adoptable   map[uint64]*model.Group
	// cutBefore are the cut groups a resumed subscription completes on
	// its live stream; newer groups wait for them (WaitCutGroups).
	cutBefore []*model.Group
	holding   bool
	// verified is the cut group a resumed lite-06 subscription asked to
	// continue (FloorOfCut), when verifiedOK: resume trusts it.
	verified   uint64
	verifiedOK bool
	holdGen    uint64 // counts hold calls, so a late release spares a newer hold
	// heldAt is when the current hold began: the loss noticed.
	heldAt time.Time
	// fillPending: the loss of the connection cut the gap fill, and the
	// groups from fillFrom on that the track lacks are still to fetch
	// (the next resume does); the track stays held until then.
	fillPending bool
	fillFrom    uint64
	// start is the first group the track's subscription named, when
	// startKnown (the track's own start: a resume of a track that
	// received nothing fills from there).
	start      uint64
	startKnown bool
	// span is set on the track of a span subscription (remote_span.go).
	span *span
}

// Restart ends the current subscription attempt (the broadcast
// restarted): the track subscribes again.
func (t *Remote) Restart() {
	t.mu.Lock()
	if t.cancelAttempt != nil {
		t.cancelAttempt(ErrRestart)
	}
	t.mu.Unlock()
}

// Current returns the connection and timescale of the track's current
// subscription (nil between subscriptions) and the subscription's count.
func (t *Remote) Current() (c Family, timescale, gen uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conn, t.timescale, t.subGen
}

// Logger is the session's logger with the broadcast and track.
func (t *Remote) logger() *slog.Logger {
	return t.Host.Logger().With("broadcast", t.Broadcast, "track", t.Name)
}

// resumeWindow bounds how long a track that was live keeps retrying
// refusals after a reconnect or restart (the publisher may not be back on
// the relay yet).
func (t *Remote) resumeWindow() time.Duration {
	cfg := t.Host.Config()
	return 2*cfg.ReconnectMax + cfg.ResumeGrace
}

// Run subscribes the track until it ends, resubscribing as the retry
// policy says, then calls Exit.
//
// The run is one thread of control but not always one goroutine: a
// subscription that waits for its publisher's next response parks
// (Subscribe parks it), and the goroutine that the response wakes goes
// on with the run, to its end or to the next park. An idle recording's
// track then costs one shallow goroutine, not one that went deep.
func (t *Remote) Run() { t.loop(nil, nil) }

// loop runs subscription attempts until the track ends. ended, when
// set, is the attempt on c that just ended with err: the retry policy
// decides first. loop returns early when an attempt parks; that attempt's
// end calls it again.
func (t *Remote) loop(c Family, ended *error) {
	for {
		if ended != nil && !t.retry(c, *ended) {
			t.Exit()
			return
		}
		nc, g, err := t.Host.WaitConn(t.Host.Context(), t.gen)
		if err != nil {
			t.Track.Close(CloseReason(err))
			t.Exit()
			return
		}
		t.gen, c = g, nc
		err, parked := t.attempt(c)
		if parked {
			return
		}
		ended = &err
	}
}

// AttemptOf reads how one subscription attempt ended (err nil: the
// publisher ended the track cleanly) into the retry policy's terms;
// reset is what the family read of its reset code.
func AttemptOf(err error, reset Reset) Attempt {
	return Attempt{Clean: err == nil, Restart: errors.Is(err, ErrRestart), Refused: errors.Is(err, ErrRefused),
		TimedOut: errors.Is(err, ErrTimeout), Reset: reset}
}

// unanswered reports whether err ended an attempt that the peer refused or
// did not answer (on a connection that stayed up): a run of those is
// retried within a live track's resume window.
func unanswered(err error) bool { return errors.Is(err, ErrRefused) || errors.Is(err, ErrTimeout) }

// retry applies the retry policy to the attempt on c that ended with
// err, waiting as it says; false: the track is closed and its run ends.
func (t *Remote) retry(c Family, err error) bool {
	ctx := t.Host.Context()
	cfg := t.Host.Config()
	st := TrackState{
		Live: t.live, BroadcastDone: ctx.Err() != nil, ConnGone: err != nil && c.Gone(err),
		ResumeWindow: t.resumeWindow(), RetryWait: cfg.ReconnectMin, AnnounceWait: cfg.ReconnectMax,
	}
	switch refused := unanswered(err) && !st.ConnGone; {
	case refused:
		// 0 for the first refusal of a run (the policy tells it apart).
		if t.refusedSince.IsZero() {
			t.refusedSince = time.Now()
		} else {
			st.RefusedFor = max(time.Since(t.refusedSince), time.Nanosecond)
		}
	case !refused:
		// The window counts one run of refusals, not the track's life.
		t.refusedSince = time.Time{}
	}
	log := t.logger()
	attempt := AttemptOf(err, c.RetryReset(err))
	action, wait := Retry(attempt, st)
	if action == RetryEnd && attempt.TimedOut && !st.ConnGone && !st.BroadcastDone && LostWith(ctx, c, err) {
		// The request went into a blackhole with its connection (before
		// the track would end on it: a live track's retry on the same
		// connection finds the loss by itself, without the wait).
		log.Debug("moq: a request that timed out went with its connection: made again on the next one", "err", err)
		st.ConnGone, t.refusedSince = true, time.Time{}
		action, wait = Retry(attempt, st)
	}
	switch action {
	case RetryEnd:
		switch {
		case err == nil:
			log.Debug("moq: track ended")
		case st.BroadcastDone:
			err = CloseReason(context.Cause(ctx))
		case !st.Live || !unanswered(err): // not the end of a resume window
			log.Warn("moq: subscription failed", "err", err)
		}
		t.Track.Close(err)
		return false
	case RetryNextConn:
		if t.live {
			// The export waits for the groups missed meanwhile.
			t.hold()
		}
		return true // t.gen stays: the next connection
	case RetryOnAnnounce:
		log.Debug("moq: broadcast not routable yet, waiting for its announcement")
		ch := t.Host.Activated()
		tm := time.NewTimer(wait)
		select {
		case <-ch:
		case <-tm.C:
		case <-ctx.Done():
		}
		tm.Stop()
	case RetryNow:
		if wait > 0 {
			log.Debug("moq: resubscribe refused, retrying", "err", err)
			if !sleepCtx(ctx, wait) {
				return true // the broadcast is done: the next attempt says so
			}
		}
	}
	t.gen = 0 // the same connection is fine
	return true
}

// attempt runs one subscription on c, cancelled by a restart or the loss of
// c. parked: the subscription waits for a response on a parked goroutine,
// and its end goes on with the track's loop.
func (t *Remote) attempt(c Family) (err error, parked bool) {
	ctx, cancel := context.WithCancelCause(t.Host.Context())
	stop := context.AfterFunc(c.Context(), func() { cancel(c.Cause()) })
	t.mu.Lock()
	t.cancelAttempt = cancel
	t.mu.Unlock()
	w := c.NewSubscription(ctx, t)
	err, parked = Subscribe(ctx, cancel, w, w, func(err error) {
		stop()
		cancel(nil)
		t.loop(c, &err)
	})
	if !parked {
		stop()
		cancel(nil)
	}
	return err, parked
}

// attach records c and timescale as the track's current subscription
// (backfills FETCH on it) and returns the detach to defer.
func (t *Remote) attach(c Family, timescale uint64) (detach func()) {
	t.mu.Lock()
	t.conn, t.timescale = c, timescale
	t.subGen++
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		t.conn = nil
		t.mu.Unlock()
	}
}

// CloseReason is the error a track closes with when its run ends with
// err: none when its broadcast's owner stopped it or it was cancelled.
func CloseReason(err error) error {
	if errors.Is(err, ErrStopped) || errors.Is(err, context.Canceled) {
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

// AttemptTrack is the track's side of one subscription attempt (R on C),
// as the core's lifecycle sees it (Track); both families' wires embed it.
type AttemptTrack struct {
	R *Remote
	C Family
}

func (a AttemptTrack) GoLive() bool {
	was := a.R.live
	a.R.live = true
	return was
}

func (a AttemptTrack) NewSubscription(ctx context.Context, cancel context.CancelCauseFunc, timescale uint64, waits Settler) (*Sub, *Subscription) {
	sub := &Sub{Remote: a.R}
	sub.Timescale, sub.Ctx, sub.Cancel, sub.Host, sub.Waits = timescale, ctx, cancel, sub, waits
	sub.Init()
	return sub, &sub.Subscription
}

func (a AttemptTrack) Attach(timescale uint64) func() { return a.R.attach(a.C, timescale) }
func (a AttemptTrack) Start(first uint64) {
	a.R.setStart(first)
	if s := a.R.span; s != nil {
		s.started(first)
	}
}
func (a AttemptTrack) Resume(ctx context.Context, timescale, first uint64) {
	a.R.resume(ctx, a.C, timescale, first)
}
func (a AttemptTrack) ReleaseAtLive(first uint64, burstDone func() bool) {
	a.R.releaseAtLive(first, burstDone)
}
func (a AttemptTrack) NewTimeline()            { a.R.newTimeline() }
func (a AttemptTrack) Gone(err error) bool     { return a.C.Gone(err) }
func (a AttemptTrack) Loss(err error) error    { return a.C.Loss(err) }
func (a AttemptTrack) Cut(err error) bool      { return a.C.Gone(err) || a.C.SessionEndingReset(err) }
func (a AttemptTrack) Logger() *slog.Logger    { return a.R.Host.Logger() }
func (a AttemptTrack) Names() (string, string) { return a.R.Broadcast, a.R.Name }

// Priority is a track's subscriber priority, the hang default: catalog
// 100, audio 80, video 60. Without the catalog's kind at hand, media
// tracks get 60.
func Priority(name string) uint8 {
	if catalog.IsTrackName(name) {
		return 100
	}
	return 60
}
