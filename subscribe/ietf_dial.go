package subscribe

import (
	"context"
	"fmt"
	"slices"

	"github.com/moq-export/moq-export/subscribe/internal/ietf"
	"github.com/moq-export/moq-export/subscribe/internal/wire"
)

// The moq-transport drafts this session speaks, and how they are reached.
// A client offers moq-lite first and these after it, as the reference
// does; draft 14 comes under the shared legacy ALPN "moql" (whose
// CLIENT_SETUP lists versions, the way @moq/net 0.3.4 reaches draft 14)
// and under its own "moq-00" (the reference relay and Cloudflare's).
var ietfVersions, ietfALPNs = ietfTable()

// ietfTable reads the moq-transport entries of the version table
// (wire.Versions) in its order: their drafts, and the ALPNs that reach
// them ("moql" first when the legacy SETUP can choose one, as in
// wire.ALPNs).
func ietfTable() (versions []ietf.Version, alpns []string) {
	for _, v := range wire.Versions {
		if v.Family != wire.FamilyIETF {
			continue
		}
		versions = append(versions, ietf.Version(v.Code))
		if v.LegacySetup && !slices.Contains(alpns, wire.ALPNLegacy) {
			alpns = append([]string{wire.ALPNLegacy}, alpns...)
		}
		alpns = append(alpns, v.ALPN)
	}
	return versions, alpns
}

// ietfVersionOfALPN returns the draft a negotiated ALPN selects ("moql":
// the one the legacy SETUP can choose).
func ietfVersionOfALPN(alpn string) (ietf.Version, bool) {
	if alpn == wire.ALPNLegacy {
		for _, v := range wire.Versions {
			if v.Family == wire.FamilyIETF && v.LegacySetup {
				return ietf.Version(v.Code), true
			}
		}
		return 0, false
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
	path, query := splitPathQuery(path)
	sess := s.newSession(path)
	sess.start(ic)
	// Admission (auth.go): the token is the ?jwt= of the SETUP Path.
	if !s.admit(sess, ic, acceptInfo{remote: c.c.RemoteAddr().String(), transport: "quic", query: query, version: v.String(),
		noToken: "a moq-transport client puts ?jwt= in its SETUP Path"}) {
		return
	}
	s.deliver(sess)
}
