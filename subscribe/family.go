package subscribe

import (
	"context"
	"log/slog"

	"github.com/moq-export/moq-export/internal/moq/session"
)

// family is the seam between the session code that both protocol families
// share (tracks, retry and resume, announcements as a feed, the
// publisher's bookkeeping here; the subscription lifecycle, parking,
// FETCH replies and backfill in internal/moq/session) and what a family
// does its own way on the wire. moq-lite implements it as
// liteFamily, IETF moq-transport as *ietfConn. A connection carries the
// family that negotiated it (conn.family): nothing tells the two apart by
// their type; a new family is a new implementation, not a new branch at
// each call site.
type family interface {
	// serveConn runs the connection's streams for s until it ends.
	serveConn(s *Session)
	// newSubscription is one subscription of rt in the family's wire
	// (session.Subscribe runs it).
	newSubscription(ctx context.Context, rt *remoteTrack) subscriptionWire
	// openFetch sends a FETCH of r for rt in the family's wire and
	// returns its answer once the peer took it (a refusal: errNoFetch);
	// what names the request in errors. session.Fetch reads the reply.
	openFetch(ctx context.Context, rt *remoteTrack, timescale uint64, r session.FetchRange, what string) (session.FetchReply, error)
	// followAnnouncements runs one announce stream for a.
	followAnnouncements(a *Announcements) error
	// goAway asks the peer to move to uri (a server's GOAWAY).
	goAway(s *Session, uri string) error
	// ietfCodes says the connection's close and reset codes are
	// moq-transport's registry, not moq-lite's.
	ietfCodes() bool
	// transportConn is the connection under the family's session.
	transportConn() conn
	// sessionEndingReset reports whether a group stream's reset says the
	// peer is closing or draining the session (the group is cut, and a
	// resumed subscription completes it).
	sessionEndingReset(err error) bool
	// unauthorizedCode is the close code of a refused token.
	unauthorizedCode() uint64
	// learnCompat records what a server that closed the session right
	// after a request showed it does not support; true when something new
	// was learnt.
	learnCompat(c *serverCompat, log *slog.Logger) bool
	// routedSubs are the subscriptions the family routes itself (not in
	// Session.subs).
	routedSubs() []*subscription
}

// liteFamily is moq-lite on a connection.
type liteFamily struct{ c conn }

func (l liteFamily) serveConn(s *Session)                       { s.serveLite(l.c) }
func (l liteFamily) followAnnouncements(a *Announcements) error { return a.followLite(l.c) }
func (l liteFamily) goAway(s *Session, uri string) error        { return s.liteGoAway(l.c, uri) }
func (l liteFamily) ietfCodes() bool                            { return false }
func (l liteFamily) transportConn() conn                        { return l.c }
func (l liteFamily) sessionEndingReset(err error) bool {
	switch resetMeaningOf(err, connVersion(l.c).FrameRange) {
	case session.ResetSessionClosed, session.ResetGoingAway:
		return true
	}
	return false
}
func (l liteFamily) unauthorizedCode() uint64                     { return CodeUnauthorized }
func (l liteFamily) learnCompat(*serverCompat, *slog.Logger) bool { return false }
func (l liteFamily) routedSubs() []*subscription                  { return nil }

// moq-transport's side of the seam (its implementations are in ietf*.go).

// family: the moq-transport session speaks for its connection.
func (ic *ietfConn) family() family { return ic }

func (ic *ietfConn) serveConn(s *Session)                       { s.serveIETF(ic) }
func (ic *ietfConn) followAnnouncements(a *Announcements) error { return a.followIETF(ic) }
func (ic *ietfConn) goAway(_ *Session, uri string) error        { return ic.sendGoAway(uri) }
func (ic *ietfConn) ietfCodes() bool                            { return true }
func (ic *ietfConn) transportConn() conn                        { return ic.conn }

// sessionEndingReset: moq-transport names no reset code for a closing
// session; its end arrives as the session's close.
func (ic *ietfConn) sessionEndingReset(error) bool { return false }
func (ic *ietfConn) unauthorizedCode() uint64      { return ietfUnauthorized }
func (ic *ietfConn) learnCompat(c *serverCompat, log *slog.Logger) bool {
	return c.learn(ic, log)
}

// routedSubs: moq-transport subscriptions are routed by track alias.
func (ic *ietfConn) routedSubs() []*subscription {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	subs := make([]*subscription, 0, len(ic.aliases))
	for _, sub := range ic.aliases {
		subs = append(subs, sub)
	}
	return subs
}
