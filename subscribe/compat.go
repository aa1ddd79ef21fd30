package subscribe

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/moq-export/moq-export/internal/moq/ietf"
)

// What a session learns about a moq-transport server that does not take
// every request this package can make. MediaMTX, the most used independent
// server, ties a session to one stream and closes the session (code 0, no
// reason) on SUBSCRIBE_NAMESPACE and on any SUBSCRIBE parameter but the
// authorization token. A session that ends right after such a request,
// before its answer, is taken as that refusal: the server is remembered
// (per host:port and pinned certificate, for the life of the process) and later connections ask
// without the request: no namespace discovery, no optional parameters.

// ErrNoDiscovery ends an announcement feed (Announced) on a server that
// offers no broadcast discovery: it closed the session on
// SUBSCRIBE_NAMESPACE. Broadcasts must be named there (the URL path, or
// Session.Broadcast).
var ErrNoDiscovery = errors.New("moq: the server offers no broadcast discovery")

// serverCompat is what is known about one server.
type serverCompat struct {
	noDiscovery   atomic.Bool // SUBSCRIBE_NAMESPACE closes the session
	minimalParams atomic.Bool // optional SUBSCRIBE parameters close the session
	noFetch       atomic.Bool // FETCH closes the session
	// layout18: the server speaks draft 18's messages on drafts 16 and
	// 17, as MediaMTX does (no Required Request ID Delta; on draft 16 its
	// CLIENT_SETUP carries draft 17's SETUP options, and requests go on
	// their own streams).
	layout18      atomic.Bool
	saidDiscovery sync.Once
	saidParams    sync.Once

	mu sync.Mutex
	// closingTracks are the catalog tracks (broadcast path, track) whose
	// SUBSCRIBE closed the session: the server does not have them (MediaMTX
	// closes the session on a track it does not know), so they are refused
	// here and the catalog watcher tries the next name.
	closingTracks map[[2]string]bool
}

// closesOn reports whether SUBSCRIBE of track in broadcast path is known to
// close the session.
func (c *serverCompat) closesOn(path, track string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closingTracks[[2]string{path, track}]
}

// What package ietfsub asks of it (ietfsub.Compat).

func (c *serverCompat) ClosesOn(path, track string) bool { return c.closesOn(path, track) }
func (c *serverCompat) MinimalParams() bool              { return c.minimalParams.Load() }
func (c *serverCompat) NoFetch() bool                    { return c.noFetch.Load() }

// compatByServer holds the servers learnt, by host:port and pinned
// certificate fingerprint.
var compatByServer sync.Map // string -> *serverCompat

// compatFor returns the record of the server named key.
func compatFor(key string) *serverCompat {
	c, _ := compatByServer.LoadOrStore(key, &serverCompat{})
	return c.(*serverCompat)
}

// learn takes what the end of ic, a connection the peer closed right after
// its start, says about the server: a request sent and never answered is
// one it does not support. A catalog SUBSCRIBE without optional
// parameters left unanswered names a catalog track the server does not
// have; with optional parameters pending, those are blamed first. A
// server that refuses optional parameters supports the core of the
// protocol only: it is not asked to FETCH either (MediaMTX closes the
// session on FETCH too). It reports whether it learnt something new: the
// next connection will ask differently.
func (c *serverCompat) learn(ic *ietfConn, log *slog.Logger) (learnt bool) {
	// explained: a request of this connection that the server may close
	// the session on was left unanswered, whether or not the lesson is new
	// (another session to the same server may have learnt it first). The
	// catalog tracks asked beside it are not blamed then.
	explained := false
	asked := &ic.ss.Asked
	if asked.Discovery.Load() && !asked.DiscoveryAnswered.Load() {
		explained = true
		if !c.noDiscovery.Swap(true) {
			c.sayNoDiscovery(log)
			learnt = true
		}
	}
	if asked.Fetch.Load() && !asked.FetchAnswered.Load() {
		explained = true
		if !c.noFetch.Swap(true) {
			log.Info("moq: the server ended the session after a FETCH: joining live without fetching past groups from now on (the audio may start up to a GOP after the video)")
			learnt = true
		}
	}
	if explained {
		return learnt
	}
	if asked.Optional.Load() && !asked.OptionalAnswered.Load() {
		if !c.minimalParams.Swap(true) {
			c.saidParams.Do(func() {
				log.Info("moq: the server ended the session after a SUBSCRIBE with optional parameters; subscribing without them, and without FETCH, from now on")
			})
			c.noFetch.Store(true)
			learnt = true
		}
		return learnt
	}
	catalogs := asked.Catalogs()
	if ic.v.RequiredDelta() && len(catalogs) > 0 {
		// A draft-17 SUBSCRIBE without optional parameters that closed the
		// session: its layout first (MediaMTX reads draft 18's, without
		// the Required Request ID Delta), the track name only if the next
		// connection, in that layout, is closed on it too. (ic.v is
		// Draft18 on a connection that spoke draft 18's layout; one
		// dialled before another session learnt it is explained so too.)
		if !c.layout18.Swap(true) {
			c.sayLayout(ic.v, log)
			return true
		}
		return learnt
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range catalogs {
		if c.closingTracks == nil {
			c.closingTracks = map[[2]string]bool{}
		}
		if !c.closingTracks[k] {
			c.closingTracks[k] = true
			log.Info("moq: the server ended the session after a SUBSCRIBE of a catalog track: it has none of that name", "broadcast", k[0], "track", k[1])
			learnt = true
		}
	}
	return learnt
}

// learnSetup takes what a failed SETUP says about the server: a draft-16
// server that ends the session (code 0) before its SERVER_SETUP reads
// draft 17's SETUP options there, as MediaMTX does (and draft 18's
// messages after it). It reports whether the dial is worth one more try:
// the SETUP went in draft 16's own layout, and the server is now known to
// read draft 18's (learnt here, or by another session to it meanwhile).
func (c *serverCompat) learnSetup(err error, log *slog.Logger) bool {
	se, ok := errors.AsType[*setupError](err)
	if !ok || !se.v.Layout18() || !se.v.ControlStream() || se.layout18 {
		return false
	}
	ce, ok := errors.AsType[*CloseError](err)
	if !ok || !ce.Remote || ce.Code != 0 {
		return false
	}
	if !c.layout18.Swap(true) {
		c.sayLayout(se.v, log)
	}
	return true
}

// sayLayout says that the server reads draft 18's messages on draft v.
func (c *serverCompat) sayLayout(v ietf.Version, log *slog.Logger) {
	log.Info("moq: the server ended the session on a message of its draft's layout; speaking draft 18's messages to it from now on, as MediaMTX expects", "version", v)
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

// strictPeer is ServerOptions.Strict: an accepted moq-transport session
// behaves as MediaMTX does with the requests it does not support (it
// announces nothing, and closes the session on SUBSCRIBE_NAMESPACE, FETCH,
// optional SUBSCRIBE parameters and unknown tracks), and counts the
// sessions it closed.
type strictPeer struct {
	// closed counts the sessions it closed, by the request's name.
	mu     sync.Mutex
	closed map[string]int
	// groupPerFrame is ServerOptions.GroupPerFrame.
	groupPerFrame bool
}

// refuses returns the name of a request of type typ (body in draft v)
// the strict peer refuses, or "".
func (p *strictPeer) refuses(typ uint64, body []byte, v ietf.Version) string {
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
