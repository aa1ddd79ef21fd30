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
// It imports neither protocol package (internal/layering checks it): a
// family maps its own codes and reads its own messages into the terms
// here. The rest of the session (tracks, the subscription lifecycle,
// resume, backfill, parking, each family's group reader around the pump)
// is still package subscribe's, behind its family seam
// (subscribe/family.go); it moves here piece by piece, each piece written
// once for both families.
package session
