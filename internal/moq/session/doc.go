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
// The subscriber's core is here as well: one subscription attempt's
// lifecycle (Subscribe: the track goes live once accepted, its group
// streams are routed to it, the start the publisher names starts the
// track or fills the gap after a lost connection, the publisher's end
// drains the group streams, the end undoes it all, and between messages
// the wait parks on a shallow goroutine that a Settler renews), run
// against two seams the core owns and package subscribe implements: Track
// (the side of a track that outlives a subscription) and Wire (what a
// family asks and reads, how it routes group streams, how its parked wait
// waits). The state the group readers of both families share is
// Subscription (the start, the groups that arrived, the drain); a FETCH's
// reply becomes frames in Fetch (the family sends the request and waits
// for its answer, FetchReply), and a track's past is filled by Backfill.
//
// It imports neither protocol package (internal/layering checks it): a
// family maps its own codes and reads its own messages into the terms
// here. What is still package subscribe's, behind its family seam
// (subscribe/family.go): the tracks themselves (remoteTrack: its run and
// retries, resume and gap fill), the group readers around the pump, and
// each family's wire; it moves here piece by piece, each piece written
// once for both families.
package session
