// Package session is the protocol-neutral core of a MoQ session, the part
// that moq-lite and IETF moq-transport share and neither knows on the
// wire: the one group pump (Pump: the objects a family reads off a group
// stream go through the track's hang decoder into the model group;
// Collect for a fetched group), what a subscription remembers of the
// groups that arrived (GroupWindow), how the streams of a connection or a
// subscription are stopped when it ends (StopSet), and what a track does
// after one subscription attempt ended (Retry, deciding on what a refusal
// means, never on a protocol's code).
//
// The publisher's core is here too (publications.go, serve.go): the
// broadcasts a session publishes and who follows them (Publications), the
// track a request names and its packaging, the start a subscription takes
// (OldestUnexpired, EdgeOf), and the two loops both families' publishers
// run: Serve sends a subscription's groups in order, one stream each,
// through the family's Sink (its wire: the stream header, an object's
// layout, its codes), and ServeGroup hands over a past group's frames for
// a FETCH. A family reads the request in its wire and writes the reply.
//
// The subscriber's core is here as well. A subscribed track is a Remote:
// it outlives its subscriptions and connections, and its run (Run)
// subscribes it on the session's current connection, lets the retry
// policy decide after each attempt, waits out a lost connection, fills
// the gap it left (FETCH of the missed groups, completion of the groups it
// cut, a new timeline when the publisher restarted) and serves backfills.
// One subscription attempt's lifecycle is Subscribe (the track goes live
// once accepted, its group streams are routed to it, the start the
// publisher names starts the track or fills the gap, the publisher's end
// drains the group streams, the end undoes it all, and between messages
// the wait parks on a shallow goroutine that a Settler renews). The state
// the group readers of both families share is Sub (a Subscription with
// its track): a group stream waits for the start and for the streams
// accepted before it (StreamOrder, AcceptStreams), makes its group
// (CreateGroup, adopting one a lost connection cut) and ends it
// (EndGroup); a FETCH's reply becomes frames in Fetch. The subscriptions
// a connection's group streams name are in one routing table, Routes, by
// the family's key (moq-lite's subscribe id, moq-transport's track
// alias).
//
// A connection is served by ServeConn, for either family: the peer's
// streams (uni ones in acceptance order) and the family's own loops, until
// it goes or the session ends.
//
// A session's connections are Links: the one served now (which tracks
// wait for), the one a GOAWAY dialled ahead (make before break), and the
// loop that replaces a lost one: at once after a connection that lasted
// or was lost to its idle timeout, with a jittered backoff (Backoff) over
// a run of failures, cut short
// when a probe says a silent peer answers again, until the session is
// closed, refused or gives up. What a connection's end means (a refusal,
// a lesson about the server) the facade says through Links' hooks.
//
// The seams the core owns and the families implement: Proto (one
// connection as its family speaks it, which the facade holds and reaches
// it through: the subscriber's Family, serving the connection for the
// session's ProtoHost, which takes the peer's SETUP as a Hello and its
// GOAWAY; an announcement Feed; our GOAWAY; the family's close Codes;
// what a session closed early teaches), Family (what a protocol does for
// the core on one connection: a subscription attempt's Wire, a FETCH, what
// its errors and resets mean), RemoteHost (what a
// track needs of its session and broadcast; package subscribe's
// broadcast), and Conn (a connection as a family's session sees it, which
// the facade adapts its transport's to: moq-transport's session, package
// ietfsub, runs on one). It imports neither protocol package (internal/layering
// checks it): a family maps its own codes and reads its own messages into
// the terms here.
package session
