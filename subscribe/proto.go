package subscribe

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/ietf/ietfsub"
	"github.com/moq-export/moq-export/internal/moq/lite/litesub"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/moq/transport"
	"github.com/moq-export/moq-export/internal/moq/transport/alpn"
)

// The one place the facade names a protocol family: it makes the
// session.Proto (the seam) of the family a connection negotiated, for
// the session that holds it, and runs the family's own SETUP where it has
// one. Everything else reaches a connection through the seam and never
// asks which family it is.

// requestWindow is how many request ids each side of a moq-transport
// session grants the other at a time (MAX_REQUEST_ID, drafts 14-16). A
// variable for tests; a connection keeps the value it started with.
var requestWindow uint64 = 1000

// liteCodes are moq-lite's session close codes: this package's registry
// (CodeName, CodeUnauthorized) and the closes that end a dialled session.
var liteCodes = session.Codes{Name: CodeName, Refusals: litesub.Refusals, Unauthorized: CodeUnauthorized}

// familyCodes are every family's close codes, moq-lite's first (a close
// before any family spoke is named in moq-lite's).
var familyCodes = []*session.Codes{&liteCodes, &ietfsub.Codes}

// newLite is moq-lite on c for s, which dialled it (setupPath: the SETUP
// Path of a raw QUIC client; Link.Dial negotiates the version) or accepted
// it (nil) as n says.
func (s *Session) newLite(c conn, n litesub.Negotiated, setupPath *string) *litesub.Link {
	cfg := &litesub.Config{Log: s.log, RequestTimeout: s.opts.RequestTimeout, MaxLatency: s.opts.MaxLatency}
	lc := litesub.LinkConfig{Pub: s.pub.lite, SessionStream: n.Stream, Codes: &liteCodes}
	if setupPath != nil {
		lc.Setup.Path, lc.Setup.HasPath = *setupPath, true
	}
	if s.dialled {
		// A client declares its role.
		lc.Setup.Role, lc.Setup.HasRole = wireRole(s.role), true
	}
	return litesub.NewLink(cfg, coreConn{c: c}, n.Version, lc)
}

// wireRole is r in moq-lite SETUP's Role values.
func wireRole(r Role) uint64 {
	switch r {
	case RolePublisher:
		return wire.RolePublisher
	case RoleBoth:
		return wire.RoleBoth
	}
	return wire.RoleSubscriber
}

// server is what is known of the moq-transport server the session dialled
// (package ietfsub's record, shared by every session to it; compat.go).
func (s *Session) server() *ietfsub.Server { return ietfsub.ServerAt(s.serverKey) }

// newIETF is moq-transport draft v on c for s (layout18: draft 18's
// messages on drafts 16 and 17, as MediaMTX speaks them; server: what is
// known of the server a dialled session dialled, nil for an accepted one).
func (s *Session) newIETF(c conn, v ietf.Version, layout18 bool, server *ietfsub.Server) *ietfsub.Link {
	cfg := ietfsub.Config{
		Draft: v, Layout18: layout18, Client: s.dialled, Log: s.log, Window: requestWindow,
		GoingAway: errGoingAway, Server: server,
	}
	return ietfsub.NewLink(coreConn{c: c, codes: &ietfsub.Codes}, cfg, s.pub.ietf)
}

// open makes the Proto of the family a dialled connection c negotiated
// (ch) and runs the family's negotiation, offering the versions offered:
// moq-lite's takes the version the token names or runs the legacy SETUP;
// moq-transport's SETUP carries the URL's path and query in its Path
// parameter, its host in Authority (raw QUIC) and its jwt in the
// Authorization Token. redial says a failed SETUP taught what is known of
// the server a layout the next connection speaks.
func (s *Session) open(ctx context.Context, c conn, ch alpn.Choice, t *transport.Target, offered []alpn.Version) (p session.Proto, redial bool, err error) {
	if ch.Family != alpn.IETF {
		if c.WebTransport() {
			l := s.newLite(c, litesub.Negotiated{}, nil)
			if err := l.Dial(ctx, ch.Token, offered); err != nil {
				u := *t.URL
				u.Scheme, u.User = "https", nil
				return nil, false, fmt.Errorf("moq: WebTransport to %s: %w", transport.RedactURL(u.String()), err)
			}
			return l, false, nil
		}
		// The root (and token) ride in SETUP on raw QUIC only.
		l := s.newLite(c, litesub.Negotiated{}, &t.SetupPath)
		if err := l.Dial(ctx, ch.Token, offered); err != nil {
			return nil, false, fmt.Errorf("moq: %s: %w", t.HostPort, err)
		}
		return l, false, nil
	}
	// A server known to speak draft 18's messages on drafts 16 and 17
	// (MediaMTX) gets them.
	v, server := ietf.Version(ch.Code), s.server()
	l := s.newIETF(c, v, server.Layout18(), server)
	params := ietfsub.SetupParams{Token: tokenOf(t.URL)}
	if !c.WebTransport() {
		params.Path, params.Authority = t.SetupPath, t.URL.Host
		if s.opts.tokenParamOnly {
			params.Path, _ = splitPathQuery(params.Path)
		}
	}
	if redial, err := l.Dial(ctx, params); err != nil {
		return nil, redial, fmt.Errorf("moq: %v SETUP with %s: %w", v, t.HostPort, err)
	}
	return l, false, nil
}

// tokenOf returns the jwt query parameter of a URL (the token the
// reference relays read), "" without one.
func tokenOf(u *url.URL) string { return u.Query().Get("jwt") }

// acceptLite runs moq-lite's negotiation on c, which did not negotiate a
// moq-transport token (a moq-lite one, "moql" for the legacy SETUP, or
// none over WebTransport), admits the session (auth.go) and delivers it.
// A legacy SETUP that chose moq-transport (draft 14) hands c to
// acceptIETF, which reads the same CLIENT_SETUP again. The session root
// and the token's query are the legacy SETUP's Path or, for lite-05+, the
// client's SETUP on raw QUIC, the CONNECT request's URL on WebTransport.
func (s *Server) acceptLite(c *netConn, a transport.Accepted) {
	wt := a.Conn.WebTransport()
	n, err := litesub.Accept(s.ctx, coreConn{c: c}, a.Conn.Protocol(), s.versions, versionTable)
	if err == nil && n.Other.Family == alpn.IETF {
		c.replay = n.Stream
		s.acceptIETF(c, n.Other, a)
		return
	}
	if err != nil {
		if wt {
			s.log.Info("moq: refused a session", "remote", a.Conn.RemoteAddr(), "transport", "webtransport",
				"offered", a.Offered, "err", err)
		} else {
			s.log.Info("moq: refused a session", "remote", a.Conn.RemoteAddr(), "transport", "quic", "err", err)
		}
		a.Conn.Close(CodeVersion, refusalReason(err))
		return
	}
	v := n.Version
	var sess *Session
	var f *litesub.Link
	var info acceptInfo
	if wt {
		sess = s.newSession(a.Path)
		f = sess.newLite(c, n, nil)
		sess.start(f)
		if v.SetupStream && s.opts.AuthKey != nil {
			// The token is in the URL, but the Role the token must
			// allow is in the client's SETUP.
			awaitSetup(sess, litesub.SetupTimeout)
		}
		info = acceptInfo{remote: a.Conn.RemoteAddr(), transport: "webtransport", query: a.Query, version: v.Name,
			noToken: "a WebTransport client puts ?jwt= in the URL"}
	} else {
		// The legacy SETUP's Path carries the query (?jwt=) after the
		// path.
		path, query := splitPathQuery(n.Path)
		sess = s.newSession(path)
		f = sess.newLite(c, n, nil)
		sess.start(f)
		info = acceptInfo{remote: a.Conn.RemoteAddr(), transport: "quic", query: query, version: v.Name}
		switch {
		case v.SetupStream:
			// The root (and token) travel in the client's SETUP: wait
			// for it so that Path is meaningful when Accept returns
			// (briefly, unless the token must be checked).
			wait := 2 * time.Second
			if s.opts.AuthKey != nil {
				wait = litesub.SetupTimeout
			}
			awaitSetup(sess, wait)
			sess.mu.Lock()
			_, info.query = splitPathQuery(sess.peer.Path)
			sess.mu.Unlock()
			info.noToken = "a raw QUIC client puts ?jwt= in its SETUP Path"
		case !v.LegacySetup:
			info.noToken = v.Name + " over raw QUIC has no SETUP to carry a token: use moq-lite-05 or WebTransport"
		}
	}
	if !s.admit(sess, f, info) {
		return
	}
	s.deliver(sess)
}

// acceptIETF runs the server SETUP of a connection c that negotiated
// moq-transport as ch says, admits the session (auth.go) and delivers it.
// The session root and the token's query are the client's SETUP Path on
// raw QUIC, the CONNECT request's URL on WebTransport. The session is made
// first: its publisher serves the connection from the SETUP on.
func (s *Server) acceptIETF(c *netConn, ch alpn.Choice, a transport.Accepted) {
	c.choice = ch
	v := ietf.Version(ch.Code)
	sess := s.newSession("")
	// A strict server speaks draft 18's messages on drafts 16 and 17, as
	// MediaMTX does.
	l := sess.newIETF(c, v, s.opts.strict != nil, nil)
	path, tok, err := l.Accept(s.ctx)
	if err != nil {
		sess.Close()
		return
	}
	path, query := splitPathQuery(path)
	info := acceptInfo{remote: a.Conn.RemoteAddr(), transport: "quic", query: query, version: v.String(),
		noToken: "a moq-transport client puts ?jwt= in its SETUP Path"}
	if a.Conn.WebTransport() {
		path, info.transport, info.query = a.Path, "webtransport", a.Query
		info.noToken = "a WebTransport client puts ?jwt= in the URL"
	}
	// The SETUP AUTHORIZATION TOKEN parameter is the token when the URL
	// (SETUP Path or CONNECT) carries none.
	if q, err := url.ParseQuery(info.query); tok != "" && (err != nil || !q.Has("jwt")) {
		if err != nil {
			q = url.Values{}
		}
		q.Set("jwt", tok)
		info.query = q.Encode()
	}
	sess.mu.Lock()
	sess.path = normPath(path)
	sess.mu.Unlock()
	sess.start(l)
	if !s.admit(sess, l, info) {
		return
	}
	s.deliver(sess)
}
