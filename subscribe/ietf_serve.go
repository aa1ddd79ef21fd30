package subscribe

import (
	"github.com/moq-export/moq-export/internal/moq/ietf"
)

// The publisher side of a moq-transport session is package ietfpub's
// (internal/moq/ietf/ietfpub): the moq-transport session (package
// ietfsub) hands it the peer's requests and serves it the connection.

// strictServer is ServerOptions.Strict as package ietfpub asks it.
type strictServer struct{ p *strictPeer }

func (x strictServer) Refuses(typ uint64, body []byte, v ietf.Version) string {
	return x.p.refuses(typ, body, v)
}
func (x strictServer) Count(what string)   { x.p.count(what) }
func (x strictServer) GroupPerFrame() bool { return x.p.groupPerFrame }
