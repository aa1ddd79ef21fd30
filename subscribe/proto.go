package subscribe

import (
	"context"
	"fmt"
	"net/url"

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
// Path of a raw QUIC client) or accepted it (nil).
func (s *Session) newLite(c conn, setupPath *string) *litesub.Link {
	cfg := &litesub.Config{Log: s.log, RequestTimeout: s.opts.RequestTimeout, MaxLatency: s.opts.MaxLatency}
	lc := litesub.LinkConfig{Pub: s.pub.lite, SessionStream: c.SessionStream(), Codes: &liteCodes}
	if setupPath != nil {
		lc.Setup.Path, lc.Setup.HasPath = *setupPath, true
	}
	if s.dialled {
		// A client declares its role.
		lc.Setup.Role, lc.Setup.HasRole = wireRole(s.role), true
	}
	return litesub.NewLink(cfg, coreConn{c: c}, c.Version(), lc)
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
// (ch), with its own SETUP where the family has one: moq-transport's
// carries the URL's path and query in its Path parameter, its host in
// Authority (raw QUIC) and its jwt in the Authorization Token. redial says
// a failed SETUP taught what is known of the server a layout the next
// connection speaks.
func (s *Session) open(ctx context.Context, c conn, ch alpn.Choice, t *transport.Target) (p session.Proto, redial bool, err error) {
	if ch.Family != alpn.IETF {
		if !c.WebTransport() {
			// The root (and token) ride in SETUP on raw QUIC only.
			return s.newLite(c, &t.SetupPath), false, nil
		}
		return s.newLite(c, nil), false, nil
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
