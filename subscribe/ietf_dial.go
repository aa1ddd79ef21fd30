package subscribe

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/moq-export/moq-export/subscribe/internal/ietf"
)

// The moq-transport drafts this session speaks, and how they are reached.
// A client offers moq-lite first and these after it, as the reference
// does; draft 14 comes under the shared legacy ALPN "moql" (whose
// CLIENT_SETUP lists versions, the way @moq/net 0.3.4 reaches draft 14)
// and under its own "moq-00" (the reference relay and Cloudflare's).
var (
	ietfVersions = []ietf.Version{ietf.Draft20, ietf.Draft19, ietf.Draft18, ietf.Draft17,
		ietf.Draft16, ietf.Draft15, ietf.Draft14}
	ietfALPNs = []string{ietf.ALPNLegacy, "moqt-20", "moqt-19", "moqt-18", "moqt-17",
		"moqt-16", "moqt-15", ietf.ALPNDraft14}
)

// ietfVersionOfALPN returns the draft a negotiated ALPN selects.
func ietfVersionOfALPN(alpn string) (ietf.Version, bool) {
	if alpn == ietf.ALPNLegacy {
		return ietf.Draft14, true
	}
	v, ok := ietf.VersionOfALPN(alpn)
	if !ok || !slices.Contains(ietfVersions, v) {
		return 0, false
	}
	return v, true
}

// ietfVersionOf reports whether c negotiated a moq-transport draft.
func ietfVersionOf(c conn) (ietf.Version, bool) {
	q, ok := c.(*quicConn)
	if !ok {
		return 0, false
	}
	return ietfVersionOfALPN(q.alpn)
}

// ietfDial runs the client SETUP on a raw QUIC connection that negotiated
// draft v: the URL's path and query go in the Path parameter, its host in
// Authority, its jwt in the Authorization Token.
func (s *Session) ietfDial(ctx context.Context, c conn, v ietf.Version, t *target) (conn, error) {
	ic := newIETFConn(c, v, true, s.log)
	p := ietfSetupParams{token: ietfTokenOf(t.raw)}
	if !c.WebTransport() {
		p.path, p.authority = t.setupPath, t.raw.Host
	}
	if err := ic.clientHandshake(ctx, p); err != nil {
		c.Close(ietfProtocolViolation, "setup failed")
		return nil, fmt.Errorf("moq: %v SETUP with %s: %w", v, t.hostport, err)
	}
	s.log.Debug("moq: moq-transport session", "version", v)
	return ic, nil
}

// acceptIETF runs the server SETUP of a raw QUIC connection that
// negotiated draft v and delivers the session. The session root is the
// client's SETUP Path (without its query).
func (s *Server) acceptIETF(c *quicConn, v ietf.Version) {
	ic := newIETFConn(c, v, false, s.log)
	path, err := ic.serverHandshake(s.ctx)
	if err != nil {
		s.log.Debug("moq: moq-transport SETUP", "version", v, "err", err)
		c.Close(ietfProtocolViolation, "setup failed")
		return
	}
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	sess := s.newSession(path)
	sess.start(ic)
	s.deliver(sess)
}
