package ietfsub

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
// (per host:port and pinned certificate, for the life of the process) and
// later connections ask without the request: no namespace discovery, no
// optional parameters.

// ErrNoDiscovery ends an announcement feed on a server that offers no
// broadcast discovery: it closed the session on SUBSCRIBE_NAMESPACE.
// Broadcasts must be named there.
var ErrNoDiscovery = errors.New("moq: the server offers no broadcast discovery")

// Server is what is known about one server. The zero value knows nothing.
type Server struct {
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

// servers holds the servers learnt, by the key ServerAt is given.
var servers sync.Map // string -> *Server

// ServerAt returns the record of the server named key (its host:port and
// pinned certificate), shared by every session to it in the process.
func ServerAt(key string) *Server {
	if c, ok := servers.Load(key); ok {
		return c.(*Server)
	}
	c, _ := servers.LoadOrStore(key, &Server{})
	return c.(*Server)
}

// closesOn reports whether SUBSCRIBE of track in broadcast path is known to
// close the session.
func (c *Server) closesOn(path, track string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closingTracks[[2]string{path, track}]
}

// NoDiscovery reports whether the server is known to offer no namespace
// discovery (it closed a session that asked).
func (c *Server) NoDiscovery() bool { return c.noDiscovery.Load() }

// Layout18 reports whether the server is known to speak draft 18's
// messages on drafts 16 and 17 (MediaMTX).
func (c *Server) Layout18() bool { return c.layout18.Load() }

// Learn takes what the end of s, a session the peer closed right after
// its start, says about the server: a request sent and never answered is
// one it does not support. A catalog SUBSCRIBE without optional
// parameters left unanswered names a catalog track the server does not
// have; with optional parameters pending, those are blamed first. A
// server that refuses optional parameters supports the core of the
// protocol only: it is not asked to FETCH either (MediaMTX closes the
// session on FETCH too). It reports whether it learnt something new: the
// next connection will ask differently.
func (c *Server) Learn(s *Session, log *slog.Logger) (learnt bool) {
	// explained: a request of this connection that the server may close
	// the session on was left unanswered, whether or not the lesson is new
	// (another session to the same server may have learnt it first). The
	// catalog tracks asked beside it are not blamed then.
	explained := false
	asked := &s.Asked
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
	if s.v.RequiredDelta() && len(catalogs) > 0 {
		// A draft-17 SUBSCRIBE without optional parameters that closed the
		// session: its layout first (MediaMTX reads draft 18's, without
		// the Required Request ID Delta), the track name only if the next
		// connection, in that layout, is closed on it too. (s.v is
		// Draft18 on a connection that spoke draft 18's layout; one
		// dialled before another session learnt it is explained so too.)
		if !c.layout18.Swap(true) {
			c.sayLayout(s.v, log)
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

// SetupError is a failed client SETUP of a draft (Session.SetupFailed).
type SetupError struct {
	// Draft is the draft the ALPN named.
	Draft ietf.Version
	// Layout18: the SETUP was already sent in draft 18's layout (a server
	// known to read it on this draft).
	Layout18 bool
	Err      error
}

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// SetupFailed returns err, the failure of s's client SETUP, as a
// *SetupError.
func (s *Session) SetupFailed(err error) error {
	se := &SetupError{Draft: s.v, Err: err}
	if s.alpnV != 0 {
		se.Draft, se.Layout18 = s.alpnV, true
	}
	return se
}

// LearnSetup takes what a failed SETUP (err, holding a *SetupError) says
// about the server; peerEnded says the peer closed the session with code
// 0. A draft-16 server that ends the session so before its SERVER_SETUP
// reads draft 17's SETUP options there, as MediaMTX does (and draft 18's
// messages after it). It reports whether the dial is worth one more try:
// the SETUP went in draft 16's own layout, and the server is now known to
// read draft 18's (learnt here, or by another session to it meanwhile).
func (c *Server) LearnSetup(err error, peerEnded bool, log *slog.Logger) bool {
	se, ok := errors.AsType[*SetupError](err)
	if !ok || !se.Draft.Layout18() || !se.Draft.ControlStream() || se.Layout18 || !peerEnded {
		return false
	}
	if !c.layout18.Swap(true) {
		c.sayLayout(se.Draft, log)
	}
	return true
}

// sayLayout says that the server reads draft 18's messages on draft v.
func (c *Server) sayLayout(v ietf.Version, log *slog.Logger) {
	log.Info("moq: the server ended the session on a message of its draft's layout; speaking draft 18's messages to it from now on, as MediaMTX expects", "version", v)
}

// sayNoDiscovery says once that the server offers no namespace discovery.
func (c *Server) sayNoDiscovery(log *slog.Logger) {
	c.saidDiscovery.Do(func() {
		log.Info("moq: the server ended the session after SUBSCRIBE_NAMESPACE: it offers no discovery; broadcasts must be named (the URL path or -b)")
	})
}
