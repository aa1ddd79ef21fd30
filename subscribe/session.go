package subscribe

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/moq/transport"
	"github.com/moq-export/moq-export/internal/moq/transport/alpn"
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
	// dialled: the session was dialled (it reconnects); else accepted.
	dialled bool
	role    Role
	hopID   uint64
	// links are the session's connections, each as the family that
	// speaks on it (the seam, session.Proto): the current one, the next,
	// and the reconnect loop (the core's).
	links session.Links[session.Proto]

	// serverKey names the server a dialled session dialled (host:port and
	// pinned certificate): what is known of it (its support for optional
	// requests, Session.server) is shared by every session to it.
	serverKey string

	ctx    context.Context
	cancel context.CancelFunc
	// giveUpTest, when not 0, replaces Reconnect.GiveUp (tests).
	giveUpTest atomic.Int64
	lostGroups atomic.Uint64 // see LostGroups
	wg         sync.WaitGroup
	done       chan struct{}
	doneOnce   sync.Once

	mu      sync.Mutex
	remotes map[string]*remoteBroadcast
	// feeds are the announcement feeds running, which remote broadcasts
	// follow (see Session.Broadcast).
	feeds map[*Announcements]struct{}
	// learnt is what the broadcasts' catalogs said of their renditions
	// (cmaf.go).
	learnt renditions

	// pub is the session's publishing role (publisher.go).
	pub *publisher

	// version names the version of the latest connection (Version).
	version atomic.Pointer[string]

	// target is what a dialled session dials: the Dial URL, or the new
	// session URI of a GOAWAY.
	target atomic.Pointer[transport.Target]
	// Accepted sessions: what the client's SETUP said (its Path, with the
	// query where a raw QUIC client's ?jwt= is, and the Role it
	// declared), under mu; helloed is closed once it arrived. auth is
	// what its token grants once admitted (auth.go), and authRequired
	// says the server checks tokens.
	peer         session.Hello
	helloed      chan struct{}
	helloOnce    sync.Once
	auth         *sessionAuth
	authRequired bool
	remote       string // the peer's address (accepted sessions)
}

func newSession(opts Options, path string) *Session {
	opts.fill()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{
		opts:    opts,
		log:     opts.Logger,
		path:    normPath(path),
		role:    opts.Role,
		hopID:   randomID(),
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
		remotes: map[string]*remoteBroadcast{},
		helloed: make(chan struct{}),
	}
	s.remoteCfg = session.RemoteConfig{
		RequestTimeout: opts.RequestTimeout, DrainGrace: opts.drainGrace, ReconnectMin: opts.Reconnect.Min,
		ReconnectMax: opts.Reconnect.Max, ResumeGrace: opts.resumeGrace, Objects: opts.Objects,
	}
	s.links = session.Links[session.Proto]{
		Log: s.log, IdleTimeout: opts.IdleTimeout, BackoffFrom: opts.backoffFrom, Closed: ErrClosed,
		Backoff: session.Backoff{Min: opts.Reconnect.Min, Max: opts.Reconnect.Max, GiveUp: opts.Reconnect.GiveUp, Disabled: opts.Reconnect.Disabled},
		GiveUp:  s.giveUp, Serve: s.serveConn, Finish: s.finish, Go: s.wg.Go,
		Target: func() string { return s.target.Load().Redacted() },
		Refused: func(f session.Proto, cause error) (error, bool) {
			r, ok := refusedBy(cause, f.Codes())
			return s.refused(r, ok, cause)
		},
		RefusedDial: func(err error) (error, bool) { r, ok := refusedDialing(err); return s.refused(r, ok, err) },
		Learn: func(f session.Proto, cause error) bool {
			ce, ok := errors.AsType[*CloseError](cause)
			return ok && ce.Remote && f.Learn(s.log)
		},
		Probe: s.watchReach,
		Reconnected: func(f session.Proto) {
			s.setVersion(f)
			s.log.Info("moq: reconnected", "version", f.VersionName())
		},
	}
	s.pub = newPublisher(s)
	return s
}

// refused logs a refusal of the session (r, when ok), which it ends with.
func (s *Session) refused(r *RefusedError, ok bool, err error) (error, bool) {
	if !ok {
		return nil, false
	}
	s.log.Warn("moq: the peer refused the session; not reconnecting", "reason", r.Why, "err", err)
	return r, true
}

// setLogger makes log the session's logger.
func (s *Session) setLogger(log *slog.Logger) {
	s.log, s.links.Log = log, log
	s.pub.setLogger(log)
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
	s.serverKey = t.HostPort + "#" + strings.ReplaceAll(strings.ToLower(opts.TLSFingerprint), ":", "")
	s.setLogger(s.log.With("url", t.Redacted()))
	s.target.Store(t)
	s.dialled = true
	s.links.Dial = func(ctx context.Context) (session.Proto, error) {
		t := s.target.Load()
		d := &dialer{opts: &s.opts, target: t, versions: versions}
		// first is the family of the first connection made (known).
		var first alpn.Family
		known := false
		// relaid: dialled again in the layout learnt; stretched: dialled
		// again with a longer idle timeout (stretch). Each once.
		relaid, stretched := false, false
		stretch := func(took time.Duration, err error) bool {
			if stretched || !transport.IdleTimedOut(err) || ctx.Err() != nil {
				return false
			}
			stretched = true
			d.minIdle = stretchedIdle(took, s.opts.IdleTimeout)
			s.log.Info("moq: the idle timeout cut the exchange after the handshake; dialling once more with a longer one",
				"handshake", took.Round(time.Millisecond), "idle_timeout", d.minIdle.Round(time.Millisecond), "err", err)
			return true
		}
		for {
			nc, err := d.dial(ctx)
			if err != nil {
				if hd, ok := errors.AsType[*transport.HandshakeDoneError](err); ok && stretch(hd.Took, err) {
					continue
				}
				return nil, err
			}
			var c conn = nc
			if wrap != nil {
				c = wrap(c)
			}
			if known && nc.choice.Family != first {
				c.Close(CodeCancel, "")
				return nil, fmt.Errorf("moq: %s: the server changed its protocol", t.HostPort)
			}
			first, known = nc.choice.Family, true
			p, redial, err := s.open(ctx, c, nc.choice, t, versions)
			switch {
			case err == nil:
				return p, nil
			case redial && !relaid:
				relaid = true // once more, in the layout just learnt
			case stretch(nc.handshake, err):
			default:
				return nil, err
			}
		}
	}
	c, err := s.links.Dial(ctx)
	if err != nil {
		s.cancel()
		if refused, ok := refusedDialing(err); ok {
			return nil, refused
		}
		return nil, err
	}
	s.log.Debug("moq: connected", "version", c.VersionName())
	s.start(c)
	return s, nil
}

// start runs the session on its first connection f, and what replaces
// it, until the session ends. A server registers a session before it
// starts it, so a Server.Close can reach Close first: then f is closed
// here instead.
func (s *Session) start(f session.Proto) {
	s.setVersion(f)
	s.links.Start(s.ctx, f)
}

// setVersion makes f's version the session's (Version).
func (s *Session) setVersion(f session.Proto) {
	name := f.VersionName()
	s.version.Store(&name)
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
func (s *Session) Reconnects() int64 { return s.links.Reconnects() }

// finish ends the session for good with err.
func (s *Session) finish(err error) {
	// Before the remotes are taken: a broadcast made later sees the end
	// (Session.Broadcast) and closes itself. The connection a GOAWAY
	// dialled ahead is closed here too; one that lands later sees the end
	// and closes itself.
	err = s.links.End(err)
	s.mu.Lock()
	remotes := make([]*remoteBroadcast, 0, len(s.remotes))
	for _, rb := range s.remotes {
		remotes = append(remotes, rb)
	}
	s.mu.Unlock()
	s.cancel()
	for _, rb := range remotes {
		rb.close(err)
	}
	// Close and the connection loop can both get here: a check of done
	// followed by close(done) is not atomic.
	s.doneOnce.Do(func() { close(s.done) })
}

// serveConn serves f, the current connection, until it is gone: the
// family reads its streams; what the peer's SETUP and GOAWAY say comes
// back here.
func (s *Session) serveConn(f session.Proto) {
	f.Serve(&session.ProtoHost{
		Ctx: s.ctx, Log: s.log, Order: s.streamOrder(), Client: s.dialled,
		Hello: s.hello, MoveAway: s.moveAway,
	})
}

// streamOrder starts the group-stream order of a connection about to be
// served: the current one, which a drain asks (PendingStreams).
func (s *Session) streamOrder() *session.StreamOrder {
	order := &session.StreamOrder{}
	s.uniOrder.Store(order)
	return order
}

// hello takes what the peer's SETUP says: an accepted session's root
// and query (raw QUIC) and the Role the client declared.
func (s *Session) hello(m session.Hello) {
	if !s.dialled {
		s.mu.Lock()
		if m.HasPath {
			path, _ := splitPathQuery(m.Path)
			s.path = normPath(path)
			s.peer.Path, s.peer.HasPath = m.Path, true
		}
		if m.HasRole {
			s.peer.Role, s.peer.HasRole = m.Role, true
		}
		s.mu.Unlock()
	}
	s.helloOnce.Do(func() { close(s.helloed) })
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
func (s *Session) Err() error { return s.links.Err() }

// Close ends the session (code 0), its subscriptions (their tracks end with
// ErrClosed) and its publications, and waits for its goroutines.
func (s *Session) Close() error {
	f, ok := s.links.Shut()
	s.cancel()
	if ok {
		f.Close(CodeCancel, "")
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

var errStopped = session.ErrStopped
