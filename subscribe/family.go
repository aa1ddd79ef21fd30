package subscribe

import (
	"context"
	"log/slog"
	"time"

	"github.com/moq-export/moq-export/internal/moq/ietf/ietfsub"
	"github.com/moq-export/moq-export/internal/moq/lite/litesub"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
)

// family is the seam between the session code that both protocol families
// share and what a family does its own way on the wire. Its subscriber
// half is the session core's (session.Family: subscribing a track,
// FETCH, reading a reset's meaning for the retry policy); the rest is the
// session's: serving the connection, following announcements, GOAWAY,
// the codes the session's close reads in. moq-lite implements it as
// liteFamily, IETF moq-transport as *ietfConn. A session holds each of its
// connections as the family that negotiated it, made whole for that
// session when the connection is (Session.newLite, newIETFConn): nothing
// tells the two apart by their type; a new family is a new
// implementation, not a new branch at each call site.
type family interface {
	session.Family
	// Close closes the connection with an application code and reason.
	Close(code uint64, reason string)
	// Version is the protocol version the connection negotiated.
	Version() *wire.Version
	// Routed are the subscriptions whose group streams the connection
	// routes now (the core's session.Routes, by the family's key).
	Routed() []*session.Sub
	// serveConn runs the connection's streams for s until it ends.
	serveConn(s *Session)
	// followAnnouncements runs one announce stream for a.
	followAnnouncements(a *Announcements) error
	// goAway asks the peer to move to uri (a server's GOAWAY).
	goAway(s *Session, uri string) error
	// ietfCodes says the connection's close and reset codes are
	// moq-transport's registry, not moq-lite's.
	ietfCodes() bool
	// unauthorizedCode is the close code of a refused token.
	unauthorizedCode() uint64
	// learnCompat records what a server that closed the session right
	// after a request showed it does not support; true when something new
	// was learnt.
	learnCompat(c *ietfsub.Server, log *slog.Logger) bool
}

// liteFamily is moq-lite on a connection: package litesub's (the
// subscriber's wire, the core's seam), with what the session does on it.
type liteFamily struct {
	litesub.Conn
	c conn
	// setupPath is the root (and token) a raw QUIC client's SETUP
	// carries (nil: none, on WebTransport and accepted connections).
	setupPath *string
}

// newLite is moq-lite on c for s, which dialled it (setupPath: the SETUP
// Path of a raw QUIC client) or accepted it (nil).
func (s *Session) newLite(c conn, setupPath *string) liteFamily {
	cfg := &litesub.Config{Log: s.log, RequestTimeout: s.opts.RequestTimeout, MaxLatency: s.opts.MaxLatency}
	return liteFamily{Conn: litesub.NewConn(cfg, coreConn{c}, c.Version()), c: c, setupPath: setupPath}
}

func (l liteFamily) Close(code uint64, reason string)           { l.c.Close(code, reason) }
func (l liteFamily) Version() *wire.Version                     { return l.V }
func (l liteFamily) serveConn(s *Session)                       { s.serveLite(l) }
func (l liteFamily) followAnnouncements(a *Announcements) error { return l.Follow(liteFeed{a}) }
func (l liteFamily) goAway(s *Session, uri string) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.RequestTimeout)
	defer cancel()
	return l.SendGoAway(ctx, uri)
}
func (l liteFamily) ietfCodes() bool          { return false }
func (l liteFamily) unauthorizedCode() uint64 { return CodeUnauthorized }
func (l liteFamily) learnCompat(*ietfsub.Server, *slog.Logger) bool {
	return false
}

// moq-transport's side of the seam (its implementations are in ietf*.go).

func (ic *ietfConn) serveConn(s *Session)                       { s.serveIETF(ic) }
func (ic *ietfConn) followAnnouncements(a *Announcements) error { return a.followIETF(ic) }
func (ic *ietfConn) goAway(_ *Session, uri string) error        { return ic.ss.SendGoAway(uri) }
func (ic *ietfConn) ietfCodes() bool                            { return true }
func (ic *ietfConn) unauthorizedCode() uint64                   { return ietfsub.CodeUnauthorized }
func (ic *ietfConn) learnCompat(c *ietfsub.Server, log *slog.Logger) bool {
	return c.Learn(ic.ss, log)
}

// Routed: moq-transport subscriptions are routed by track alias.
func (ic *ietfConn) Routed() []*session.Sub { return ic.ss.Routed() }

// NewSubscription and OpenFetch are package ietfsub's.
func (ic *ietfConn) NewSubscription(ctx context.Context, rt *session.Remote) session.SubscriptionWire {
	return ic.ss.NewSubscription(ctx, ic, rt)
}
func (ic *ietfConn) OpenFetch(ctx context.Context, rt *session.Remote, timescale uint64, r session.FetchRange, what string) (session.FetchReply, error) {
	return ic.ss.OpenFetch(ctx, rt, timescale, r, what)
}

func (ic *ietfConn) Cause() error           { return markIETF(transportCause(ic.conn), true) }
func (ic *ietfConn) Gone(err error) bool    { return connGone(ic, err) }
func (ic *ietfConn) Silence() time.Duration { return ic.conn.Silence() }
func (ic *ietfConn) Loss(err error) error   { return connLoss(ic, err) }
func (ic *ietfConn) FrameRanges() bool      { return false }
func (ic *ietfConn) GroupRanges() bool      { return true }
func (ic *ietfConn) Fetches() bool          { return true }
func (ic *ietfConn) VersionName() string    { return ic.Version().Name }

// RetryReset: moq-transport's codes carry nothing the policy reads.
func (ic *ietfConn) RetryReset(error) session.Reset { return session.ResetUnknown }

// SessionEndingReset: moq-transport names no reset code for a closing
// session; its end arrives as the session's close.
func (ic *ietfConn) SessionEndingReset(error) bool { return false }
