package subscribe

import "github.com/moq-export/moq-export/internal/moq/ietf/ietfsub"

// What a session learns about a moq-transport server that does not take
// every request it can make (MediaMTX's) is package ietfsub's (Server):
// a dialled session shares it with every session to the same host:port
// and pinned certificate.

// ErrNoDiscovery ends an announcement feed (Announced) on a server that
// offers no broadcast discovery: it closed the session on
// SUBSCRIBE_NAMESPACE. Broadcasts must be named there (the URL path, or
// Session.Broadcast).
var ErrNoDiscovery = ietfsub.ErrNoDiscovery

// NoDiscovery reports whether the server of a dialled session is known to
// offer no namespace discovery (it closed a session that asked): Announced
// then follows only the broadcasts the server publishes unasked, and a
// listing of broadcasts has nothing to go on.
func (s *Session) NoDiscovery() bool { return s.dialled && s.server().NoDiscovery() }
