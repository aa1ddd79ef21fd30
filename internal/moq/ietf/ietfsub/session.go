package ietfsub

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/ietf/ietfpub"
	"github.com/moq-export/moq-export/internal/moq/session"
)

// Session error codes of moq-transport.
const (
	CodeNoError           = 0x0
	CodeUnauthorized      = 0x2
	CodeProtocolViolation = 0x3
	codeControlTimeout    = 0x11
	codeVersionFailed     = 0x15
)

// closeNames names moq-transport's session close codes.
var closeNames = map[uint64]string{
	0x0: "no error", 0x1: "internal error", 0x2: "unauthorized", 0x3: "protocol violation",
	0x4: "invalid request id", 0x5: "duplicate track alias", 0x6: "key-value formatting error",
	0x7: "too many requests", 0x8: "invalid path", 0x9: "malformed path", 0x10: "GOAWAY timeout",
	0x11: "control message timeout", 0x12: "data stream timeout", 0x13: "auth token cache overflow",
	0x14: "duplicate auth token alias", 0x15: "version negotiation failed", 0x16: "malformed auth token",
	0x17: "unknown auth token alias", 0x18: "expired auth token", 0x19: "invalid authority",
	0x1a: "malformed authority",
}

// CloseName names a moq-transport session close code; ok is false for a
// code the registry does not name.
func CloseName(code uint64) (name string, ok bool) {
	name, ok = closeNames[code]
	return name, ok
}

// Stream codes this session sends (the values moq-lite's registry gives
// them, which the facade names).
const (
	codeCancel = 0x0
	codeDecode = 0x5
)

// implementation is the SETUP Implementation parameter.
const implementation = "moq-export"

// readBuffer is the read buffer of a request's stream (or a
// PUBLISH_NAMESPACE's), which carries a response or two of a few bytes
// each: a recorder of 1,000 broadcasts holds 3,000 such streams open. A
// longer message is read through it all the same (ietf.ReadMessage copies
// the body out).
const readBuffer = 32

// Config is how a Session starts.
type Config struct {
	// Draft is the draft the connection negotiated.
	Draft ietf.Version
	// Layout18 speaks draft 18's messages on drafts 16 and 17, as
	// MediaMTX does (on draft 16, CLIENT_SETUP and SERVER_SETUP carry
	// draft 17's SETUP options on the first bidi stream).
	Layout18 bool
	// Client: the session was dialled (even request ids); else accepted.
	Client bool
	Log    *slog.Logger
	// Window is how many request ids each side grants the other at a
	// time (MAX_REQUEST_ID, drafts 14-16).
	Window uint64
	// GoingAway is what a request meets after the peer's GOAWAY: the
	// facade's close error, retried on the next connection.
	GoingAway error
	// Server is what is known of the server (nil: nothing; an accepted
	// session).
	Server *Server
}

// Session is one moq-transport session on a connection: its SETUP, its
// request ids, the requests we made and their answers, the control
// stream, the namespaces the peer published, and the peer's requests
// handed to our publisher (package ietfpub).
type Session struct {
	c         session.Conn
	v         ietf.Version
	client    bool
	log       *slog.Logger
	goingAway error
	server    *Server
	// onGoAway is the peer's GOAWAY (Serve's).
	onGoAway func(uri string, grace time.Duration)

	// ctrl is the control stream (drafts 14-16); ctrlR reads ctrlIn, the
	// control stream or the peer's setup stream (drafts 17+, where only
	// GOAWAY follows; the first bidi stream on MediaMTX's draft 16).
	ctrl     session.Stream
	ctrlIn   session.RecvStream
	ctrlR    *bufio.Reader
	setupOut session.SendStream // our setup stream (drafts 17+), kept open
	wmu      sync.Mutex

	mu       sync.Mutex
	nextID   uint64
	peerMax  uint64        // request ids below it are ours to use
	maxCh    chan struct{} // closed and replaced when peerMax grows
	granted  uint64        // the limit we granted the peer
	window   uint64        // ids granted at a time
	reqs     map[uint64]*request
	peerNS   map[string]uint64 // namespaces the peer published -> request id
	nsCh     chan struct{}     // closed and replaced when peerNS changes
	goingOff bool              // GOAWAY received

	// routes are the subscriptions the subgroup streams name, by track
	// alias.
	routes session.Routes

	// served are the peer's requests we serve (package ietfpub), set
	// before the connection is served.
	served *ietfpub.Served

	// Asked notes the optional requests made and their answers (what a
	// server that closed the session right after them does not support).
	Asked Asked
	// alpnV is the draft the ALPN named when it differs from v: a server
	// that speaks draft 18's messages on drafts 16 and 17 (MediaMTX).
	// setup16 is then its draft-16 SETUP: CLIENT_SETUP and SERVER_SETUP
	// with draft 17's options on the first bidi stream.
	alpnV   ietf.Version
	setup16 bool
}

// New returns the moq-transport session of cfg on c; a handshake starts
// it.
func New(c session.Conn, cfg Config) *Session {
	v := cfg.Draft
	s := &Session{
		c: c, v: v, client: cfg.Client, log: cfg.Log, goingAway: cfg.GoingAway, server: cfg.Server,
		reqs:   map[uint64]*request{},
		peerNS: map[string]uint64{}, maxCh: make(chan struct{}), nsCh: make(chan struct{}),
		granted: cfg.Window, window: cfg.Window,
	}
	if s.server == nil {
		s.server = &Server{}
	}
	if cfg.Layout18 && v.Layout18() {
		// Draft 16 (a control stream): its SETUP with draft 17's options.
		s.v, s.alpnV, s.setup16 = ietf.Draft18, v, v.ControlStream()
	}
	if !cfg.Client {
		s.nextID = 1 // clients use even request ids, servers odd
	}
	if !s.v.FlowControl() {
		s.peerMax = ^uint64(0)
	}
	return s
}

// Draft is the draft whose messages the session speaks.
func (s *Session) Draft() ietf.Version { return s.v }

// ALPNDraft is the draft the ALPN named when the session speaks another's
// messages on it (Layout18), 0 otherwise.
func (s *Session) ALPNDraft() ietf.Version { return s.alpnV }

// Context is done when the connection is gone.
func (s *Session) Context() context.Context { return s.c.Context() }

// Close closes the connection.
func (s *Session) Close(code uint64, reason string) { s.c.Close(code, reason) }

// OpenUni opens a uni stream (our publisher's groups).
func (s *Session) OpenUni(ctx context.Context) (session.SendStream, error) { return s.c.OpenUni(ctx) }

// Asked notes, on one connection, the optional requests made and whether
// an answer came.
type Asked struct {
	Discovery, DiscoveryAnswered atomic.Bool
	Optional, OptionalAnswered   atomic.Bool
	Fetch, FetchAnswered         atomic.Bool

	mu sync.Mutex
	// catalogs are the catalog tracks SUBSCRIBEd without optional
	// parameters and not answered yet.
	catalogs map[[2]string]bool
}

// CatalogAsked notes (answered false) or forgets a catalog SUBSCRIBE.
func (a *Asked) CatalogAsked(path, track string, answered bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.catalogs == nil {
		a.catalogs = map[[2]string]bool{}
	}
	if answered {
		delete(a.catalogs, [2]string{path, track})
	} else {
		a.catalogs[[2]string{path, track}] = true
	}
}

// Catalogs returns the catalog SUBSCRIBEs left unanswered (broadcast path,
// track).
func (a *Asked) Catalogs() [][2]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([][2]string, 0, len(a.catalogs))
	for k := range a.catalogs {
		out = append(out, k)
	}
	return out
}

// message is one control message routed to a request.
type message struct {
	typ  uint64
	body []byte
}

// request is one request we made: responses and follow-ups arrive on
// msgs, a fetch's data stream on data. A request of drafts 17+ (and
// SUBSCRIBE_NAMESPACE from draft 16) has its own bidi stream str, whose
// end closes ended; the others ride the control stream.
type request struct {
	s    *Session
	id   uint64
	msgs chan message
	data chan *dataStream

	str    session.Stream
	wmu    sync.Mutex
	ended  chan struct{}
	endErr error // valid once ended is closed

	nsFeed bool // a SUBSCRIBE_NAMESPACE (under s.mu)
}

// send sends one message of the request: on its stream, or the control
// stream.
func (req *request) send(typ uint64, m ietf.Message) error {
	return req.s.writeOn(req.str, &req.wmu, typ, m)
}

// cancel withdraws req: with message typ (UNSUBSCRIBE, FETCH_CANCEL,
// UNSUBSCRIBE_NAMESPACE) on the control stream, by closing the request's
// own stream otherwise.
func (req *request) cancel(typ uint64) {
	if req.str != nil {
		req.closeStream()
		return
	}
	_ = req.s.WriteControl(typ, &ietf.RequestID{ID: req.id})
}

// writeOn sends one message on a request's own stream str (writes
// serialized by mu), or on the control stream when str is nil.
func (s *Session) writeOn(str session.Stream, mu *sync.Mutex, typ uint64, m ietf.Message) error {
	if str == nil {
		return s.WriteControl(typ, m)
	}
	b := ietf.Append(nil, typ, m, s.v)
	mu.Lock()
	defer mu.Unlock()
	_, err := str.Write(b)
	return err
}

// closeStream ends the request's own stream, which cancels the request
// (drafts 17+: there is no UNSUBSCRIBE or FETCH_CANCEL).
func (req *request) closeStream() {
	if req.str != nil {
		req.str.Close()
		session.StopReading(req.str, codeCancel)
	}
}

// readStream feeds the messages of the request's stream into msgs until
// it ends.
func (req *request) readStream() {
	r := bufio.NewReaderSize(req.str, readBuffer)
	for {
		typ, body, err := ietf.ReadMessage(r, req.s.v)
		if err != nil {
			req.endErr = err
			close(req.ended)
			return
		}
		select {
		case req.msgs <- message{typ, body}:
		case <-req.s.Context().Done():
			req.endErr = req.s.c.Cause()
			close(req.ended)
			return
		}
	}
}

// dataStream is an incoming data stream handed to the request it belongs
// to.
type dataStream struct {
	str session.RecvStream
	r   *bufio.Reader
}

// WriteControl sends one message on the control stream (drafts 14-16).
func (s *Session) WriteControl(typ uint64, m ietf.Message) error {
	if s.ctrl == nil {
		return fmt.Errorf("%w: no control stream in %v", session.ErrProtocol, s.v)
	}
	b := ietf.Append(nil, typ, m, s.v)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.ctrl.Write(b)
	return err
}

// raiseMax raises the request id limit the peer granted us.
func (s *Session) raiseMax(maxID uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if maxID > s.peerMax {
		s.peerMax = maxID
		close(s.maxCh)
		s.maxCh = make(chan struct{})
	}
}

// RequestIDs returns the next request id and the peer's limit.
func (s *Session) RequestIDs() (next, limit uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextID, s.peerMax
}

// newRequest allocates a request id (waiting for MAX_REQUEST_ID when the
// peer's limit is reached, after telling it with REQUESTS_BLOCKED) and
// registers the request for its responses. ownStream asks for a stream of
// its own even on the control-stream drafts (SUBSCRIBE_NAMESPACE in 16).
func (s *Session) newRequest(ctx context.Context, ownStream bool) (*request, error) {
	req, err := s.allocRequest(ctx)
	if err != nil {
		return nil, err
	}
	if ownStream || !s.v.ControlStream() {
		str, err := s.c.OpenBidi(ctx)
		if err != nil {
			s.endRequest(req)
			return nil, fmt.Errorf("open request stream: %w", err)
		}
		req.str, req.ended = str, make(chan struct{})
		go req.readStream()
	}
	return req, nil
}

func (s *Session) allocRequest(ctx context.Context) (*request, error) {
	blocked := false
	for {
		s.mu.Lock()
		if s.goingOff {
			s.mu.Unlock()
			// Counts as the connection's loss: retried on the next one.
			return nil, s.goingAway
		}
		if s.nextID < s.peerMax {
			req := &request{s: s, id: s.nextID, msgs: make(chan message, 16), data: make(chan *dataStream, 1)}
			s.nextID += 2
			s.reqs[req.id] = req
			s.mu.Unlock()
			return req, nil
		}
		ch, limit := s.maxCh, s.peerMax
		s.mu.Unlock()
		if !blocked {
			blocked = true
			s.log.Debug("moq: out of request ids, waiting for MAX_REQUEST_ID", "limit", limit)
			_ = s.WriteControl(ietf.TypeRequestsBlocked, &ietf.RequestID{ID: limit})
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-s.Context().Done():
			return nil, s.c.Cause()
		}
	}
}

// endRequest forgets req (and ends its stream).
func (s *Session) endRequest(req *request) {
	req.closeStream()
	s.mu.Lock()
	if s.reqs[req.id] == req {
		delete(s.reqs, req.id)
	}
	s.mu.Unlock()
}

// route hands a response to the request it names. A response for a
// request we no longer wait for is dropped.
func (s *Session) route(id uint64, m message) {
	s.mu.Lock()
	req := s.reqs[id]
	s.mu.Unlock()
	if req == nil {
		s.log.Debug("moq: response for an unknown request", "type", m.typ, "request", id)
		return
	}
	select {
	case req.msgs <- m:
	default:
		s.log.Warn("moq: request's responses not read, dropped", "type", m.typ, "request", id)
	}
}

// routeData hands a FETCH's data stream (its header read up to the
// request id) to the request it answers. It reports false, having stopped
// the stream, when no request takes it.
func (s *Session) routeData(id uint64, str session.RecvStream, r *bufio.Reader) bool {
	s.mu.Lock()
	req := s.reqs[id]
	s.mu.Unlock()
	if req == nil {
		str.CancelRead(codeCancel)
		return false
	}
	select {
	case req.data <- &dataStream{str: str, r: r}:
		return true
	default:
		str.CancelRead(CodeProtocolViolation)
		return false
	}
}

// routeNamespace hands a NAMESPACE or NAMESPACE_DONE entry that came on
// the control stream to the connection's only SUBSCRIBE_NAMESPACE that
// rides the control stream; with none or several it cannot be placed and
// is skipped.
func (s *Session) routeNamespace(m message) {
	s.mu.Lock()
	var feed *request
	n := 0
	for _, req := range s.reqs {
		if req.nsFeed && req.str == nil {
			feed = req
			n++
		}
	}
	s.mu.Unlock()
	if n != 1 {
		s.log.Debug("moq: NAMESPACE entry on the control stream skipped", "type", m.typ, "feeds", n)
		return
	}
	select {
	case feed.msgs <- m:
	default:
		s.log.Warn("moq: namespace entries not read, dropped")
	}
}

// Grant keeps the peer's request window open after it used id.
func (s *Session) Grant(id uint64) {
	if !s.v.FlowControl() {
		return
	}
	s.mu.Lock()
	if id+s.window/2 < s.granted {
		s.mu.Unlock()
		return
	}
	s.granted = id + s.window
	limit := s.granted
	s.mu.Unlock()
	_ = s.WriteControl(ietf.TypeMaxRequestID, &ietf.RequestID{ID: limit})
}

// Errors of a request that got no answer.
var (
	errRequestTimeout = errors.New("no answer within the request timeout")
	errRequestEnded   = errors.New("request stream ended")
)

// readRequest reads the next response of req, bounded by timeout (0:
// none) and ctx.
func (s *Session) readRequest(ctx context.Context, req *request, timeout time.Duration) (message, error) {
	var tc <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		tc = t.C
	}
	select {
	case m := <-req.msgs:
		return m, nil
	case <-req.ended:
		// Messages read before the end come first.
		select {
		case m := <-req.msgs:
			return m, nil
		default:
		}
		if req.endErr == io.EOF {
			return message{}, errRequestEnded
		}
		return message{}, req.endErr
	case <-tc:
		return message{}, errRequestTimeout
	case <-ctx.Done():
		return message{}, context.Cause(ctx)
	case <-s.Context().Done():
		return message{}, s.c.Cause()
	}
}

// Offer offers ns with PUBLISH_NAMESPACE, a request of ours (our
// publisher's, package ietfpub).
func (s *Session) Offer(ns string) (func(withdraw bool), error) {
	req, err := s.newRequest(s.Context(), false)
	if err != nil {
		return nil, err
	}
	if err := req.send(ietf.TypePublishNamespace, &ietf.PublishNamespace{RequestID: req.id, Namespace: ns}); err != nil {
		s.endRequest(req)
		return nil, err
	}
	return func(withdraw bool) {
		if withdraw && req.str == nil {
			m := ietf.PublishNamespaceDone{Namespace: ns, RequestID: req.id}
			_ = s.WriteControl(ietf.TypePublishNamespaceDone, &m)
		}
		s.endRequest(req)
	}, nil
}

// protocolErr marks what the codec rejects (malformed bytes, a length
// beyond its limits) as session.ErrProtocol; other errors pass unchanged.
func protocolErr(err error) error {
	if errors.Is(err, ietf.ErrDecode) || errors.Is(err, ietf.ErrTooLarge) {
		return fmt.Errorf("%w: %w", session.ErrProtocol, err)
	}
	return err
}
