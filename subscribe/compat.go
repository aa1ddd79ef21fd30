package subscribe

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/moq-export/moq-export/subscribe/internal/ietf"
)

// What a session learns about a moq-transport server that does not take
// every request this package can make. MediaMTX, the most used independent
// server, ties a session to one stream and closes the session (code 0, no
// reason) on SUBSCRIBE_NAMESPACE and on any SUBSCRIBE parameter but the
// authorization token. A session that ends right after such a request,
// before its answer, is taken as that refusal: the server is remembered
// (per host:port, for the life of the process) and later connections ask
// without the request: no namespace discovery, no optional parameters.

// serverCompat is what is known about one server.
type serverCompat struct {
	noDiscovery   atomic.Bool // SUBSCRIBE_NAMESPACE closes the session
	minimalParams atomic.Bool // optional SUBSCRIBE parameters close the session
	saidDiscovery sync.Once
	saidParams    sync.Once
}

// compatByServer holds the servers learnt, by host:port.
var compatByServer sync.Map // string -> *serverCompat

// compatFor returns the record of the server at hostport.
func compatFor(hostport string) *serverCompat {
	c, _ := compatByServer.LoadOrStore(hostport, &serverCompat{})
	return c.(*serverCompat)
}

// ietfAsked notes, on one connection, the optional requests made and
// whether an answer came.
type ietfAsked struct {
	discovery, discoveryAnswered atomic.Bool
	optional, optionalAnswered   atomic.Bool
}

// learn takes what the end of ic, a connection that ended right after its
// start, says about the server: a request sent and never answered is one
// it does not support.
func (c *serverCompat) learn(ic *ietfConn, log *slog.Logger) {
	if ic.asked.discovery.Load() && !ic.asked.discoveryAnswered.Load() && !c.noDiscovery.Swap(true) {
		c.sayNoDiscovery(log)
	}
	if ic.asked.optional.Load() && !ic.asked.optionalAnswered.Load() && !c.minimalParams.Swap(true) {
		c.saidParams.Do(func() {
			log.Info("moq: the server ended the session after a SUBSCRIBE with optional parameters; subscribing without them from now on")
		})
	}
}

// sayNoDiscovery says once that the server offers no namespace discovery.
func (c *serverCompat) sayNoDiscovery(log *slog.Logger) {
	c.saidDiscovery.Do(func() {
		log.Info("moq: the server ended the session after SUBSCRIBE_NAMESPACE: it offers no discovery; broadcasts must be named (the URL path or -b)")
	})
}

// NoDiscovery reports whether the server of a dialled session is known to
// offer no namespace discovery (it closed a session that asked): Announced
// then follows only the broadcasts the server publishes unasked, and a
// listing of broadcasts has nothing to go on.
func (s *Session) NoDiscovery() bool { return s.compat.noDiscovery.Load() }

// strictPeer makes an accepted moq-transport session behave as MediaMTX
// does with the requests it does not support: it closes the session (code
// 0, no reason) on SUBSCRIBE_NAMESPACE and on a SUBSCRIBE that carries
// any parameter but the authorization token. Tests use it to check that
// a subscriber records from such a server.
type strictPeer struct {
	// closed counts the sessions it closed, by the request's name.
	mu     sync.Mutex
	closed map[string]int
}

// refuses returns the name of a request of type typ (body in draft v)
// the strict peer refuses, or "".
func (p *strictPeer) refuses(typ uint64, body []byte, v ietf.Version) string {
	switch typ {
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

func (p *strictPeer) count(what string) {
	p.mu.Lock()
	if p.closed == nil {
		p.closed = map[string]int{}
	}
	p.closed[what]++
	p.mu.Unlock()
}

func (p *strictPeer) closes(what string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed[what]
}
