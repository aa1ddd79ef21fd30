package subscribe

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/ietf/ietfsub"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/moq/transport"
)

// IETF moq-transport sessions. The session itself (SETUP, request ids,
// the control stream and its routing, GOAWAY, the namespaces the peer
// publishes) is package ietfsub's; an ietfConn is a transport connection
// that negotiated a moq-transport draft with that session on it, the
// family that speaks there (family.go).

// ietfRequestWindow is how many request ids each side grants the other at
// a time (MAX_REQUEST_ID), drafts 14-16. A variable for tests; a
// connection keeps the value it started with.
var ietfRequestWindow uint64 = 1000

type ietfConn struct {
	conn
	ss *ietfsub.Session
	v  ietf.Version // ss.Draft()
}

// newIETFConn returns c with the moq-transport session of draft v on it
// (layout18: draft 18's messages on drafts 16 and 17, as MediaMTX speaks
// them; compat: what is known of the server, nil for an accepted session).
func newIETFConn(c conn, v ietf.Version, layout18, client bool, log *slog.Logger, server *ietfsub.Server) *ietfConn {
	ic := &ietfConn{conn: c}
	cfg := ietfsub.Config{
		Draft: v, Layout18: layout18, Client: client, Log: log, Window: ietfRequestWindow, GoingAway: errGoingAway,
		Server: server,
	}
	ic.ss = ietfsub.New(ietfTransport{coreConn{c}}, cfg)
	ic.v = ic.ss.Draft()
	return ic
}

// Version of a moq-transport connection: its draft, as the version table
// names it when it is there.
func (ic *ietfConn) Version() *wire.Version {
	if a := ic.ss.ALPNDraft(); a != 0 {
		// The draft negotiated, spoken in draft 18's messages (MediaMTX).
		return wire.ByCode(uint64(a))
	}
	if v := wire.ByCode(uint64(ic.v)); v != nil {
		return v
	}
	return &wire.Version{Name: ic.v.String(), Code: uint64(ic.v), Family: wire.FamilyIETF}
}

// ietfTransport is the transport connection under a moq-transport
// session, as package ietfsub sees it (session.Conn): its end named in
// moq-transport's codes.
type ietfTransport struct{ coreConn }

func (t ietfTransport) Cause() error { return markIETF(transportCause(t.c), true) }

// ietfTokenOf returns the jwt query parameter of a URL (the token the
// reference relays read), "" without one.
func ietfTokenOf(u *url.URL) string { return u.Query().Get("jwt") }

// errGoingAway is what a request meets after GOAWAY: like a lost
// connection, it waits for the next one.
var errGoingAway = &CloseError{Code: ietfsub.CodeNoError, Reason: "peer sent GOAWAY", Remote: true}

// serveIETF runs ic until the connection is gone: the control loop (or
// the peer's setup stream for GOAWAY) and the incoming data streams.
func (s *Session) serveIETF(ic *ietfConn) {
	ctx := ic.Context()
	announce := ic.ss.Serve(s.pub.ietf, func(uri string, grace time.Duration) { s.moveAway(ic, uri, grace) })
	control := func() {
		err := ic.ss.ControlLoop()
		if ctx.Err() == nil {
			if errors.Is(err, ErrProtocol) {
				s.log.Warn("moq: control stream", "err", err)
				ic.Close(ietfsub.CodeProtocolViolation, "protocol violation")
			} else {
				s.log.Debug("moq: control stream ended", "err", err)
				ic.Close(ietfsub.CodeNoError, "")
			}
		}
	}
	session.ServeConn(s.ctx, coreConn{ic}, ietfsub.CodeNoError, s.streamOrder(),
		ic.ss.HandleUni, ic.ss.HandleBidi, control, announce)
}

// followIETF runs one announcement feed on ic (ietfsub.Session.Follow)
// and returns when the feed is closed or the connection is gone.
func (a *Announcements) followIETF(ic *ietfConn) error {
	// A broadcast's own feed (Session.Broadcast: the broadcast is named,
	// as with -b) asks for nothing: servers that tie a session to one
	// stream (MediaMTX) close the session on SUBSCRIBE_NAMESPACE, and
	// SUBSCRIBE finds the broadcast without it. It follows the namespaces
	// the peer publishes unasked. So does every feed on a server known to
	// refuse namespace discovery.
	// A caller's feed on a server known to refuse namespace discovery
	// has nothing to follow: it ends (ErrNoDiscovery).
	a.mu.Lock()
	ask := a.held
	a.mu.Unlock()
	// Gone since an earlier connection: made up; gone on this one:
	// PUBLISH_NAMESPACE_DONE, the broadcast ended.
	return ic.ss.Follow(a.ctx, a.prefix, ask, a.reconcile)
}

// goAwayTarget resolves a GOAWAY's New Session URI against the current
// target. The current URL's jwt goes along only to the same host and
// port, and only when the new URI carries none: a token is never handed
// to another server.
func goAwayTarget(cur *transport.Target, uri string) (*transport.Target, error) {
	ref, err := url.Parse(uri)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedURL, transport.RedactError(err))
	}
	u := cur.URL.ResolveReference(ref)
	next, err := transport.ParseTarget(u.String())
	if err != nil {
		return nil, err
	}
	if next.HostPort == cur.HostPort && !next.URL.Query().Has("jwt") && cur.URL.Query().Has("jwt") {
		q := next.URL.Query()
		q.Set("jwt", cur.URL.Query().Get("jwt"))
		next.URL.RawQuery = q.Encode()
		if next, err = transport.ParseTarget(next.URL.String()); err != nil {
			return nil, err
		}
	}
	return next, nil
}
