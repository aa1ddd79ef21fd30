// Package litesub is our moq-lite subscriber's wire: on a connection that
// negotiated moq-lite (lite-01..06) it asks for a track (TRACK and
// TRACK_INFO, SUBSCRIBE) and reads the publisher's answers, reads the
// group streams into the track's model groups, FETCHes past groups and
// frame ranges, follows announcements (ANNOUNCE_PLEASE and its replies,
// lite-06's typed announcements), reads the peer's SETUP and GOAWAY and
// sends our GOAWAY. It also negotiates moq-lite's version once the facade
// chose the family (Link.Dial for a dialled connection, Accept for an
// accepted one): the version an ALPN names, the legacy SETUP
// (CLIENT_SETUP / SERVER_SETUP, which may hand an accepted connection to
// moq-transport's draft 14) and the session stream lite-01/02 keep open,
// and our SETUP. What both families' subscribers share is the session
// core's (package internal/moq/session): the subscribed track and its run
// (session.Remote: retries, resume and gap fill, backfill), one
// subscription's lifecycle (session.Subscribe, over this package's Wire),
// the order group streams make their groups in, and the group pump.
//
// A Link is moq-lite on one connection as the facade holds it, its side
// of the seam (session.Proto): it serves the connection (the peer's SETUP
// and GOAWAY to the session's ProtoHost, a second GOAWAY refused, our
// SETUP, the legacy session stream), follows announcements, sends GOAWAY
// and names its close codes (LinkConfig.Codes, with Refusals). Its Conn is
// moq-lite on the connection as the core's subscriber sees it
// (session.Family), made with its Config; its Session is the subscriber's
// state on that connection (the subscriptions its group streams name, in
// the core's session.Routes by subscribe id). It
// imports neither moq-transport's packages nor the transport: it works on
// the core's connection and stream interfaces (session.Conn). Package
// subscribe, the public facade, hands it its moq-lite connections and
// routes a connection's streams here; the peer's requests to publish go
// to the publisher's wire (package litepub).
package litesub
