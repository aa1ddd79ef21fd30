// Package ietfsub is the moq-transport session on one connection, as our
// side runs it: SETUP (both sides, each draft's layout, and MediaMTX's
// draft-16 SETUP in draft 17's), request ids and MAX_REQUEST_ID, the
// requests we make and the routing of their answers (on the control
// stream of drafts 14-16, or each on its own stream from draft 17), the
// control stream and the peer's GOAWAY, the request streams the peer
// opens, the namespaces it publishes and the announcement feed that
// follows them (SUBSCRIBE_NAMESPACE). The peer's requests for what we
// publish go to our publisher's wire, package ietfpub.
//
// It imports neither moq-lite's packages, nor the transport, nor the
// public facade (internal/layering checks it): the connection is the
// core's session.Conn, its streams the core's stream interfaces, and the
// errors it reports are the core's (session.ErrProtocol) or the facade's,
// handed in (Config.GoingAway, session.Conn.Cause).
//
// A Link is the session as the facade holds it, moq-transport's side of
// the seam (session.Proto): NewLink makes it, Dial and Accept run its
// SETUP (a failed client SETUP that taught the Server record a layout says
// to dial once more), Serve runs the control loop and the peer's streams,
// Follow an announcement feed, GoAway sends GOAWAY, Learn records what an
// early close showed the server lacks, and Codes are moq-transport's close
// codes. Package subscribe picks this family for a connection that
// negotiated a moq-transport draft (alpn.Select), makes its Link and
// reaches it only through the seam.
package ietfsub
