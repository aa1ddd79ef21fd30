// Package session is the protocol-neutral core of a MoQ session, the part
// that moq-lite and IETF moq-transport share and neither knows on the
// wire: what a subscription remembers of the groups that arrived
// (GroupWindow), how the streams of a connection or a subscription are
// stopped when it ends (StopSet), and what a track does after one
// subscription attempt ended (Retry, deciding on what a refusal means,
// never on a protocol's code).
//
// It imports neither protocol package (internal/layering checks it): a
// family maps its own codes and messages to the meanings here. The
// session itself (tracks, the subscription lifecycle, resume, backfill,
// parking and the group pump) is still package subscribe's, behind its
// family seam (subscribe/family.go); it moves here piece by piece, each
// piece written once for both families.
package session
