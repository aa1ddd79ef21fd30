package subscribe

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/lite/litesub"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/moq/transport"
)

// Session is one moq-lite session, dialled (Dial, reconnecting) or accepted
// (Server.Accept). Its methods are safe for concurrent use.
type Session struct {
	// uniOrder is the group-stream order of the current connection: a
	// drain asks it whether streams accepted are still making their
	// groups.
	uniOrder atomic.Pointer[session.StreamOrder]
	opts     Options
	// remoteCfg is what opts say to the subscribed tracks.
	remoteCfg session.RemoteConfig
	log       *slog.Logger
	path      string // session root, normalized
	dial      func(ctx context.Context) (conn, error)
	role      Role
	hopID     uint64

	// compat is what is known of the server's support for optional
	// requests (compat.go); a dialled session shares it with every
	// session to the same host:port.
	compat *serverCompat

	ctx        context.Context
	cancel     context.CancelFunc
	reconnects atomic.Int64
	// giveUpTest, when not 0, replaces Reconnect.GiveUp (tests).
	giveUpTest atomic.Int64
	lostGroups atomic.Uint64 // see LostGroups
	wg         sync.WaitGroup
	done       chan struct{}
	doneOnce   sync.Once

	mu      sync.Mutex
	closing bool // Close was called: start runs nothing
	cur     conn
	gen     uint64
	changed chan struct{} // closed when cur changes
	err     error
	// lite is the moq-lite subscriber's state across connections: the
	// subscriptions its group streams are routed to.
	lite    litesub.Session
	remotes map[string]*remoteBroadcast
	// feeds are the announcement feeds running, which remote broadcasts
	// follow (see Session.Broadcast).
	feeds map[*Announcements]struct{}
	// containers holds the container kind of tracks learnt from catalogs:
	// broadcast path -> track -> kind.
	containers map[string]map[string]string
	// cmafInits holds the container (init) of cmaf tracks learnt from
	// catalogs: broadcast path -> track -> container.
	cmafInits map[string]map[string]*catalog.Container
	// renditions holds the catalog's renditions: broadcast path -> track
	// -> rendition (their packaging's details, cmaf.go).
	renditions map[string]map[string]catalog.Rendition

	// pub is the session's publishing role (publisher.go).
	pub *publisher

	// version is the version of the latest connection (Version).
	version atomic.Pointer[wire.Version]

	peerSetup chan struct{} // closed when the first peer SETUP arrived
	setupOnce sync.Once

	// target is what a dialled session dials: the Dial URL, or the new
	// session URI of a GOAWAY (ietfGoAway). movedAway says the current
	// connection ends because of a GOAWAY: the next one is dialled at
	// once.
	target    atomic.Pointer[transport.Target]
	movedAway atomic.Bool
	// nextConn is the connection a moq-lite GOAWAY dialled before the
	// old one closes (make before break); goawayFrom the connection whose
	// GOAWAY was read (a second one is a violation). Under mu.
	nextConn   conn
	goawayFrom conn

	// Accepted sessions: the query of the client's SETUP Path (where a
	// raw QUIC client's ?jwt= is) and the Role it declared, under mu;
	// auth is what its token grants once admitted (auth.go), and
	// authRequired says the server checks tokens.
	setupQuery   string
	peerRole     uint64
	peerRoleSet  bool
	auth         *sessionAuth
	authRequired bool
	remote       string // the peer's address (accepted sessions)
}

func newSession(opts Options, path string) *Session {
	opts.fill()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{
		opts:       opts,
		log:        opts.Logger,
		path:       normPath(path),
		role:       opts.Role,
		compat:     &serverCompat{},
		hopID:      randomID(),
		ctx:        ctx,
		cancel:     cancel,
		done:       make(chan struct{}),
		changed:    make(chan struct{}),
		remotes:    map[string]*remoteBroadcast{},
		containers: map[string]map[string]string{},
		peerSetup:  make(chan struct{}),
	}
	s.remoteCfg = session.RemoteConfig{
		RequestTimeout: opts.RequestTimeout, DrainGrace: opts.drainGrace, ReconnectMin: opts.Reconnect.Min,
		ReconnectMax: opts.Reconnect.Max, ResumeGrace: opts.resumeGrace, Objects: opts.Objects,
	}
	s.lite = litesub.Session{Log: s.log, RequestTimeout: opts.RequestTimeout, MaxLatency: opts.MaxLatency, ResetCode: resetCode}
	s.pub = newPublisher(s)
	return s
}

// randomID returns a random id in [1, 2^53), safe for JavaScript peers.
func randomID() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.BigEndian.Uint64(b[:])%(1<<53-1) + 1
}

// Dial connects to rawURL (moql://, moqt://, https:// or http://; see the
// package doc) and returns a session that reconnects by itself until Close.
// ctx bounds only the first connection.
func Dial(ctx context.Context, rawURL string, opts Options) (*Session, error) {
	return dial(ctx, rawURL, opts, nil)
}

// dial is Dial; wrap, when set, wraps every transport connection (tests use
// it to inject transport behaviour).
func dial(ctx context.Context, rawURL string, opts Options, wrap func(conn) conn) (*Session, error) {
	t, err := transport.ParseTarget(rawURL)
	if err != nil {
		return nil, err
	}
	versions, err := versionList(opts.Versions)
	if err != nil {
		return nil, err
	}
	s := newSession(opts, rootPath(t))
	// A pinned certificate tells servers at one address apart (a test's
	// servers reuse ports).
	s.compat = compatFor(t.HostPort + "#" + strings.ReplaceAll(strings.ToLower(opts.TLSFingerprint), ":", ""))
	s.log = s.log.With("url", t.Redacted())
	s.pub.setLogger(s.log)
	s.lite.Log = s.log
	s.target.Store(t)
	s.dial = func(ctx context.Context) (conn, error) {
		t := s.target.Load()
		d := &dialer{opts: &s.opts, target: t, versions: versions}
		c, err := d.dial(ctx)
		if err != nil {
			return nil, err
		}
		if wrap != nil {
			c = wrap(c)
		}
		if v, ok := ietfVersionOf(c); ok {
			ic, err := s.ietfDial(ctx, c, v, t)
			if err == nil || !s.compat.learnSetup(err, s.log) {
				return ic, err
			}
			// Once more, in the layout just learnt.
			if c, err = d.dial(ctx); err != nil {
				return nil, err
			}
			if wrap != nil {
				c = wrap(c)
			}
			if v, ok = ietfVersionOf(c); !ok {
				c.Close(CodeCancel, "")
				return nil, fmt.Errorf("moq: %s: the server changed its protocol", t.HostPort)
			}
			return s.ietfDial(ctx, c, v, t)
		}
		if !c.WebTransport() {
			// The root (and token) ride in SETUP on raw QUIC only.
			return &setupPathConn{conn: c, path: t.SetupPath}, nil
		}
		return c, nil
	}
	c, err := s.dial(ctx)
	if err != nil {
		s.cancel()
		if refused, ok := refusedDialing(err); ok {
			return nil, refused
		}
		return nil, err
	}
	s.log.Debug("moq: connected", "version", connVersion(c).Name)
	s.start(c)
	return s, nil
}

// setupPathConn marks a raw QUIC client connection with its SETUP Path.
type setupPathConn struct {
	conn
	path string
}

// family: moq-lite, on the marked connection (whose SETUP carries path).
func (c *setupPathConn) family() family { return newLiteFamily(c) }

// start runs the session on its first connection.
func (s *Session) start(c conn) {
	s.version.Store(connVersion(c))
	// A server registers a session before it starts it, so a Server.Close
	// can reach Close first: then the connection is closed here instead,
	// and Close's wg.Wait never runs beside this Add.
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		c.Close(CodeCancel, "")
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		s.run(c)
	}()
}

// run serves connections until the session ends.
//
// A connection the peer closed with a refusal that retrying cannot fix
// (refusedBy: a refused token, a protocol violation, no common version, a
// refused path) ends the session with a *RefusedError. A connection that
// ended sooner than the idle timeout after its SETUP (a server that takes
// the session and drops it at once) counts as a failed attempt, as a
// failed dial does: the backoff keeps growing over such a run of
// failures, and GiveUp counts from its first one, so that a server that
// closes every session right after SETUP is not redialled in a tight
// loop forever.
func (s *Session) run(c conn) {
	var st retryRun
	for {
		began := time.Now()
		s.serveConn(c)
		cause := connCause(c)
		if s.ctx.Err() != nil {
			s.finish(ErrClosed)
			return
		}
		if s.dial != nil {
			if refused, ok := refusedBy(cause, c.family().ietfCodes()); ok {
				s.log.Warn("moq: the peer refused the session; not reconnecting", "reason", refused.Why, "err", cause)
				s.finish(refused)
				return
			}
		}
		if s.dial == nil || s.opts.Reconnect.Disabled {
			s.finish(cause)
			return
		}
		moved := s.movedAway.Swap(false)
		// The first reconnect follows at once when the connection lasted
		// at least the idle timeout (as one lost to it always has), or
		// after GOAWAY; one that failed sooner is a failed attempt.
		atOnce := moved || time.Since(began) >= s.opts.IdleTimeout
		learnt := false
		if !atOnce {
			if ce, ok := errors.AsType[*CloseError](cause); ok && ce.Remote {
				learnt = c.family().learnCompat(s.compat, s.log)
			}
		}
		switch {
		case atOnce:
			st = retryRun{}
		case learnt:
			// The server refused a request the next connection will not
			// make: not a failure, though not at once either (a lesson is
			// learnt once, so this cannot loop).
			st = retryRun{}
		default:
			st.fail(began)
		}
		delay := st.delay(s.opts.Reconnect, atOnce)
		if moved {
			s.log.Info("moq: moving the session after GOAWAY", "to", s.target.Load().Redacted())
		} else {
			s.log.Warn("moq: connection lost, reconnecting", "err", cause, "lasted", time.Since(began).Round(time.Millisecond),
				"failed_in_a_row", st.failures, "retry_in", delay.Round(time.Millisecond))
		}
		if giveUp := s.giveUp(); st.failures > 0 && giveUp > 0 && time.Since(st.since) > giveUp {
			s.finish(fmt.Errorf("moq: gave up reconnecting after %v: every session ended within %v of its start: %w", giveUp, s.opts.IdleTimeout, cause))
			return
		}
		if nc := s.takeNextConn(); moved && nc != nil {
			c = nc
		} else {
			if nc != nil {
				nc.Close(0, "")
			}
			c = s.redial(&st, delay)
			if c == nil {
				return
			}
		}
		s.reconnects.Add(1)
		s.version.Store(connVersion(c))
		s.log.Info("moq: reconnected", "version", connVersion(c).Name)
	}
}

// retryRun is a run of failed attempts in a row: dials that failed and
// connections that ended right after their SETUP.
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
	return reconnectDelay(b, max(r.failures-1, 0), false)
}

// giveUp is Options.Reconnect.GiveUp, or what a test set instead.
func (s *Session) giveUp() time.Duration {
	if d := s.giveUpTest.Load(); d != 0 {
		return time.Duration(d)
	}
	return s.opts.Reconnect.GiveUp
}

// Reconnects returns how many times the session reconnected after losing
// its connection. Safe for concurrent use.
func (s *Session) Reconnects() int64 { return s.reconnects.Load() }

// reconnectDelay is the wait before reconnect attempt n (from 0): none for
// the first one when at once is set, then a jittered exponential backoff,
// a random value in [d/2, d] with d = min(Min*2^k, Max).
func reconnectDelay(b Backoff, attempt int, atOnce bool) time.Duration {
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
	return d/2 + time.Duration(mrand.Int64N(int64(d/2)+1))
}

// redial dials after delay, and again with the backoff of the run st
// (which every failed dial lengthens) until a dial succeeds; meanwhile the
// peer is probed, and its answer after a silence cuts the wait short (see
// reach.go). GiveUp counts from the run's first failure, or from now. It
// returns nil when the session ended (Close, a refusal or give-up).
func (s *Session) redial(st *retryRun, delay time.Duration) conn {
	b := s.opts.Reconnect
	start := time.Now()
	if st.failures > 0 {
		start = st.since
	}
	w := s.watchReach()
	defer w.close()
	for attempt := 0; ; attempt++ {
		t := time.NewTimer(delay)
		select {
		case <-s.ctx.Done():
			t.Stop()
			s.finish(ErrClosed)
			return nil
		case <-t.C:
		case <-w.back:
			t.Stop()
		}
		began := time.Now()
		c, back, err := s.dialWatched(w)
		if err == nil {
			return c
		}
		if back && s.ctx.Err() == nil {
			// Begun while the peer was silent: not a failure, and the
			// next one goes at once.
			delay = 0
			continue
		}
		if refused, ok := refusedDialing(err); ok {
			s.log.Warn("moq: the peer refused the session; not reconnecting", "reason", refused.Why, "err", err)
			s.finish(refused)
			return nil
		}
		st.fail(began)
		st.failures = max(st.failures, s.opts.backoffFrom)
		delay = st.delay(b, false)
		s.log.Warn("moq: reconnect failed", "attempt", attempt+1, "err", err, "failed_in_a_row", st.failures, "retry_in", delay.Round(time.Millisecond))
		if s.ctx.Err() != nil {
			s.finish(ErrClosed)
			return nil
		}
		if giveUp := s.giveUp(); giveUp > 0 && time.Since(start) > giveUp {
			s.finish(fmt.Errorf("moq: gave up reconnecting after %v: %w", giveUp, err))
			return nil
		}
	}
}

// finish ends the session for good with err.
func (s *Session) finish(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	if s.err == nil {
		s.err = ErrClosed
	}
	err = s.err
	remotes := make([]*remoteBroadcast, 0, len(s.remotes))
	for _, rb := range s.remotes {
		remotes = append(remotes, rb)
	}
	s.mu.Unlock()
	s.cancel()
	// After the cancel: a GOAWAY's dial that lands later sees it and
	// closes its connection itself.
	if nc := s.takeNextConn(); nc != nil {
		nc.Close(0, "")
	}
	for _, rb := range remotes {
		rb.close(err)
	}
	// Close and the connection loop can both get here: a check of done
	// followed by close(done) is not atomic.
	s.doneOnce.Do(func() { close(s.done) })
}

// serveConn installs c as the current connection, serves its incoming
// streams and returns when it is gone.
func (s *Session) serveConn(c conn) {
	s.mu.Lock()
	s.cur = c
	s.gen++
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()

	c.family().serveConn(s)

	s.mu.Lock()
	if s.cur == c {
		s.cur = nil
		close(s.changed)
		s.changed = make(chan struct{})
	}
	s.mu.Unlock()
}

// serveLite serves a moq-lite connection until it is gone: package
// litesub reads the peer's streams, SETUP and GOAWAY go to the session.
func (s *Session) serveLite(l liteFamily) {
	c := l.c
	ctx := c.Context()
	s.logNegotiated(c)
	peer := &litesub.Peer{
		Setup: s.readSetup, Client: s.dial != nil, Pub: s.pub.lite,
		GoAway: func(uri string) error { return s.liteGoAway(c, uri) },
	}
	var loops []func()
	if connVersion(c).SetupStream {
		loops = append(loops, func() { litesub.SendSetup(ctx, l.C, s.ourSetup(c), s.log) })
	}
	if str := c.SessionStream(); str != nil {
		loops = append(loops, func() { litesub.ServeSessionStream(ctx, l.C, str, s.log) })
	}
	s.serveLoops(c, CodeCancel,
		func(str recvStream, t session.OrderTicket) { l.HandleUni(str, t, peer) },
		func(str bidiStream) { l.HandleBidi(ctx, str, peer) }, loops...)
}

// serveLoops serves connection c of either family until it is gone: the
// uni streams the peer opens (in acceptance order, which a drain asks),
// its bidi streams, and the family's own loops (its SETUP or control
// stream, announcing what we publish). When the session ends first, c is
// closed with code.
func (s *Session) serveLoops(c conn, code uint64, uni func(recvStream, session.OrderTicket), bidi func(bidiStream), loops ...func()) {
	ctx := c.Context()
	var wg sync.WaitGroup
	for _, loop := range loops {
		wg.Go(loop)
	}
	order := &session.StreamOrder{}
	s.uniOrder.Store(order)
	wg.Go(func() { session.AcceptStreams(ctx, c.AcceptUni, order, uni) })
	wg.Go(func() {
		session.AcceptStreams(ctx, c.AcceptBidi, nil, func(str bidiStream, _ session.OrderTicket) { bidi(str) })
	})
	select {
	case <-ctx.Done():
	case <-s.ctx.Done():
		c.Close(code, "")
	}
	wg.Wait()
}

// waitConn returns the current connection once it differs from generation
// prev, waiting for a (re)connect.
func (s *Session) waitConn(ctx context.Context, prev uint64) (conn, uint64, error) {
	for {
		s.mu.Lock()
		c, gen, ch, err := s.cur, s.gen, s.changed, s.err
		s.mu.Unlock()
		if err != nil {
			return nil, 0, err
		}
		if c != nil && gen != prev && c.Context().Err() == nil {
			return c, gen, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, 0, context.Cause(ctx)
		case <-s.done:
		}
	}
}

// ourSetup is what our moq-lite SETUP on c says: a raw QUIC client's
// root (and token), the role a client declares.
func (s *Session) ourSetup(c conn) litesub.Setup {
	var m litesub.Setup
	if pc, ok := c.(*setupPathConn); ok {
		m.Path, m.HasPath = pc.path, true
	}
	if s.dial != nil {
		m.HasRole = true
		switch s.role {
		case RolePublisher:
			m.Role = wire.RolePublisher
		case RoleBoth:
			m.Role = wire.RoleBoth
		default:
			m.Role = wire.RoleSubscriber
		}
	}
	return m
}

// readSetup takes the peer's moq-lite SETUP: an accepted session's root
// and query (raw QUIC) and the Role the client declared.
func (s *Session) readSetup(m litesub.Setup) {
	if s.dial == nil {
		s.mu.Lock()
		if m.HasPath {
			path, query := splitPathQuery(m.Path)
			s.path, s.setupQuery = normPath(path), query
		}
		if m.HasRole {
			s.peerRole, s.peerRoleSet = m.Role, true
		}
		s.mu.Unlock()
	}
	s.setupOnce.Do(func() { close(s.peerSetup) })
}

// Path returns the session root as the client requested it: the URL path
// for a dialled session, the SETUP Path or CONNECT path for an accepted one
// (without query, normalized without slashes at the ends).
func (s *Session) Path() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.path
}

// Done is closed when the session is over for good.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err returns why the session ended (nil while running; ErrClosed after
// Close).
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the session (code 0), its subscriptions (their tracks end with
// ErrClosed) and its publications, and waits for its goroutines.
func (s *Session) Close() error {
	s.mu.Lock()
	s.closing = true
	c := s.cur
	s.mu.Unlock()
	s.cancel()
	if c != nil {
		c.Close(CodeCancel, "")
	}
	s.finish(ErrClosed)
	s.wg.Wait()
	return nil
}

// resetStream abandons both directions of str with code.
func resetStream(str bidiStream, code uint64) {
	str.CancelRead(code)
	str.CancelWrite(code)
}

// protocolErr marks what either wire codec rejects (malformed bytes, a
// length beyond its limits) as ErrProtocol; other errors pass unchanged.
func protocolErr(err error) error {
	if errors.Is(err, wire.ErrDecode) || errors.Is(err, wire.ErrTooLarge) || errors.Is(err, ietf.ErrDecode) || errors.Is(err, ietf.ErrTooLarge) {
		return fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	return err
}

// connGone reports whether c is gone, judging by its context and by err,
// the error of an operation on c. quic-go and webtransport-go fail the
// streams of a closed connection before they cancel its context, so a
// stream error can be the first sign of the loss: checking the context
// alone would take a lost connection for a failed stream.
func connGone(c conn, err error) bool { return c.Context().Err() != nil || isConnErr(err) }

// connLoss returns why c is gone: the context's cause once it is there,
// otherwise err (the stream error that reported the loss first).
func connLoss(c conn, err error) error {
	if cause := connCause(c); cause != nil {
		return cause
	}
	return err
}

var errStopped = session.ErrStopped
