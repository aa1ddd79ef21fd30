package subscribe

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/ietf/ietfsub"
	"github.com/moq-export/moq-export/internal/moq/transport"
)

// ietfDial runs the client SETUP on a raw QUIC connection that negotiated
// draft v: the URL's path and query go in the Path parameter, its host in
// Authority, its jwt in the Authorization Token.
func (s *Session) ietfDial(ctx context.Context, c conn, v ietf.Version, t *transport.Target) (*ietfConn, error) {
	// A server known to speak draft 18's messages on drafts 16 and 17
	// (MediaMTX) gets them.
	server := s.server()
	ic := newIETFConn(c, v, server.Layout18(), true, s.log, server)
	p := ietfsub.SetupParams{Token: ietfTokenOf(t.URL)}
	if !c.WebTransport() {
		p.Path, p.Authority = t.SetupPath, t.URL.Host
		if s.opts.tokenParamOnly {
			p.Path, _ = splitPathQuery(p.Path)
		}
	}
	if err := ic.ss.ClientHandshake(ctx, p); err != nil {
		if _, closed := errors.AsType[*CloseError](err); !closed {
			// A read cut by the peer's close can fail first (a deadline,
			// over WebTransport): the close says why (Server.LearnSetup).
			select {
			case <-c.Context().Done():
			case <-time.After(200 * time.Millisecond):
			}
			if ce, ok := errors.AsType[*CloseError](transportCause(c)); ok {
				err = fmt.Errorf("%w: %w", err, ce)
			}
		}
		c.Close(ietfsub.CodeProtocolViolation, "setup failed")
		return nil, fmt.Errorf("moq: %v SETUP with %s: %w", v, t.HostPort, ic.ss.SetupFailed(err))
	}
	s.log.Debug("moq: moq-transport session", "version", v)
	return ic, nil
}

// acceptIETF runs the server SETUP of a connection that negotiated draft
// v, admits the session (auth.go) and delivers it. The session root and
// the token's query are the client's SETUP Path on raw QUIC, the CONNECT
// request's URL on WebTransport.
func (s *Server) acceptIETF(c conn, v ietf.Version, a transport.Accepted) {
	// A strict server speaks draft 18's messages on drafts 16 and 17, as
	// MediaMTX does.
	ic := newIETFConn(c, v, s.opts.strict != nil, false, s.log, nil)
	path, tok, err := ic.ss.ServerHandshake(s.ctx)
	if err != nil {
		s.log.Debug("moq: moq-transport SETUP", "version", v, "err", err)
		c.Close(ietfsub.CodeProtocolViolation, "setup failed")
		return
	}
	path, query := splitPathQuery(path)
	info := acceptInfo{remote: a.Conn.RemoteAddr(), transport: "quic", query: query, version: v.String(),
		noToken: "a moq-transport client puts ?jwt= in its SETUP Path"}
	if a.Conn.WebTransport() {
		path = a.Path
		info = acceptInfo{remote: a.Conn.RemoteAddr(), transport: "webtransport", query: a.Query, version: v.String(),
			noToken: "a WebTransport client puts ?jwt= in the URL"}
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
	sess := s.newSession(path)
	sess.start(ic)
	if !s.admit(sess, ic, info) {
		return
	}
	s.deliver(sess)
}

// peerEnded reports whether err holds the peer's close of the session
// with code 0 (what a server that cannot read a SETUP's layout sends).
func peerEnded(err error) bool {
	ce, ok := errors.AsType[*CloseError](err)
	return ok && ce.Remote && ce.Code == 0
}
