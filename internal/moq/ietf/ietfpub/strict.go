package ietfpub

import (
	"sync"

	"github.com/moq-export/moq-export/internal/moq/ietf"
)

// StrictPeer is the Strict server the facade's ServerOptions.Strict makes:
// it refuses what MediaMTX refuses (SUBSCRIBE_NAMESPACE, FETCH, optional
// SUBSCRIBE parameters) and counts the sessions it closed.
type StrictPeer struct {
	// PerFrame is ServerOptions.GroupPerFrame.
	PerFrame bool

	mu     sync.Mutex
	closed map[string]int // by the request's name
}

// Refuses returns the name of a request of type typ (body in draft v)
// the strict peer refuses, or "".
func (p *StrictPeer) Refuses(typ uint64, body []byte, v ietf.Version) string {
	switch typ {
	case ietf.TypeFetch:
		return "FETCH"
	case ietf.TypeSubscribeNamespace14, ietf.TypeSubscribeNamespace:
		return "SUBSCRIBE_NAMESPACE"
	case ietf.TypeSubscribe:
		var m ietf.Subscribe
		if err := ietf.Decode(body, &m, v); err != nil {
			return ""
		}
		for _, x := range m.Params {
			if x.ID != ietf.ParamAuthorizationToken {
				return "SUBSCRIBE parameters"
			}
		}
	}
	return ""
}

// Count counts a session closed on the request named what.
func (p *StrictPeer) Count(what string) {
	p.mu.Lock()
	if p.closed == nil {
		p.closed = map[string]int{}
	}
	p.closed[what]++
	p.mu.Unlock()
}

// Closes returns how many sessions were closed on the request named what.
func (p *StrictPeer) Closes(what string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed[what]
}

// GroupPerFrame is PerFrame.
func (p *StrictPeer) GroupPerFrame() bool { return p.PerFrame }
