package subscribe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/ietf/ietfpub"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/moq/transport"
)

// IETF moq-transport sessions. An ietfConn wraps a transport connection
// whose negotiated version is a moq-transport draft; the Session code
// checks for it where the two protocols part (serving the connection,
// subscribing, fetching, following announcements) and otherwise treats it
// like any conn.

// Session error codes of moq-transport.
const (
	ietfNoError           = 0x0
	ietfInternal          = 0x1
	ietfUnauthorized      = 0x2
	ietfProtocolViolation = 0x3
	ietfVersionFailed     = 0x15
)

// ietfRequestWindow is how many request ids each side grants the other at
// a time (MAX_REQUEST_ID), drafts 14-16. A variable for tests; a
// connection keeps the value it started with.
var ietfRequestWindow uint64 = 1000

// ietfImplementation is the SETUP Implementation parameter.
const ietfImplementation = "moq-export"

// ietfMsg is one control message routed to a request.
type ietfMsg struct {
	typ  uint64
	body []byte
}

// ietfRequest is one request we made: responses and follow-ups arrive on
// msgs, a fetch's data stream on data. A request of drafts 17+ (and
// SUBSCRIBE_NAMESPACE from draft 16) has its own bidi stream str, whose
// end closes ended; the others ride the control stream.
type ietfRequest struct {
	ic   *ietfConn
	id   uint64
	msgs chan ietfMsg
	data chan *ietfData

	str    bidiStream
	wmu    sync.Mutex
	ended  chan struct{}
	endErr error // valid once ended is closed

	nsFeed bool // a SUBSCRIBE_NAMESPACE (under ic.mu)
}

// send sends one message of the request: on its stream, or the control
// stream.
func (req *ietfRequest) send(typ uint64, m ietf.Message) error {
	return req.ic.writeOn(req.str, &req.wmu, typ, m)
}

// writeOn sends one message on a request's own stream str (writes
// serialized by mu), or on the control stream when str is nil.
func (ic *ietfConn) writeOn(str bidiStream, mu *sync.Mutex, typ uint64, m ietf.Message) error {
	if str == nil {
		return ic.writeControl(typ, m)
	}
	b := ietf.Append(nil, typ, m, ic.v)
	mu.Lock()
	defer mu.Unlock()
	_, err := str.Write(b)
	return err
}

// closeStream ends the request's own stream, which cancels the request
// (drafts 17+: there is no UNSUBSCRIBE or FETCH_CANCEL).
func (req *ietfRequest) closeStream() {
	if req.str != nil {
		req.str.Close()
		session.StopReading(req.str, CodeCancel)
	}
}

// readStream feeds the messages of the request's stream into msgs until
// it ends.
func (req *ietfRequest) readStream() {
	r := bufio.NewReaderSize(req.str, subscribeReadBuffer)
	for {
		typ, body, err := ietf.ReadMessage(r, req.ic.v)
		if err != nil {
			req.endErr = err
			close(req.ended)
			return
		}
		select {
		case req.msgs <- ietfMsg{typ, body}:
		case <-req.ic.Context().Done():
			req.endErr = connCause(req.ic)
			close(req.ended)
			return
		}
	}
}

// ietfData is an incoming data stream handed to the request it belongs to.
type ietfData struct {
	str recvStream
	r   *bufio.Reader
}

type ietfConn struct {
	conn
	v      ietf.Version
	client bool
	log    *slog.Logger

	// ctrl is the control stream (drafts 14-16); ctrlR reads it, or the
	// peer's setup stream ctrlIn (drafts 17+, where only GOAWAY follows).
	ctrl     bidiStream
	ctrlIn   recvStream
	ctrlR    *bufio.Reader
	setupOut sendStream // our setup stream (drafts 17+), kept open
	wmu      sync.Mutex

	mu       sync.Mutex
	nextID   uint64
	peerMax  uint64        // request ids below it are ours to use
	maxCh    chan struct{} // closed and replaced when peerMax grows
	granted  uint64        // the limit we granted the peer
	window   uint64        // ids granted at a time
	reqs     map[uint64]*ietfRequest
	aliases  map[uint64]*session.Sub
	aliasCh  chan struct{}     // closed and replaced when aliases grows
	peerNS   map[string]uint64 // namespaces the peer published -> request id
	nsCh     chan struct{}     // closed and replaced when peerNS changes
	goingOff bool              // GOAWAY received

	// served are the peer's requests we serve (package ietfpub), set
	// before the connection is served.
	served *ietfpub.Served

	asked ietfAsked // optional requests made, and their answers (compat.go)
	// alpnV is the draft the ALPN named when it differs from v: a server
	// that speaks draft 18's messages on drafts 16 and 17 (MediaMTX;
	// compat.go). setup16 is then its draft-16 SETUP: CLIENT_SETUP and
	// SERVER_SETUP with draft 17's options on the first bidi stream.
	alpnV   ietf.Version
	setup16 bool
}

func newIETFConn(c conn, v ietf.Version, client bool, log *slog.Logger) *ietfConn {
	ic := &ietfConn{
		conn: c, v: v, client: client, log: log,
		reqs: map[uint64]*ietfRequest{}, aliases: map[uint64]*session.Sub{},
		peerNS: map[string]uint64{}, maxCh: make(chan struct{}), aliasCh: make(chan struct{}),
		nsCh: make(chan struct{}), granted: ietfRequestWindow, window: ietfRequestWindow,
	}
	if !client {
		ic.nextID = 1 // clients use even request ids, servers odd
	}
	if !v.FlowControl() {
		ic.peerMax = ^uint64(0)
	}
	return ic
}

// ietfSetupParams are the SETUP parameters a client sends.
type ietfSetupParams struct {
	path      string // path and query, raw QUIC only
	authority string // host:port, raw QUIC only
	token     string // the URL's jwt, as AUTHORIZATION_TOKEN
}

func (ic *ietfConn) setupParams(p ietfSetupParams) ietf.Params {
	var params ietf.Params
	if ic.v.FlowControl() {
		params.SetVarint(ietf.SetupMaxRequestID, ic.window)
	}
	if p.path != "" {
		params.SetBytes(ietf.SetupPath, []byte(p.path))
	}
	if p.authority != "" {
		params.SetBytes(ietf.SetupAuthority, []byte(p.authority))
	}
	if p.token != "" {
		params.SetBytes(ietf.SetupAuthorizationToken, ietf.AppendToken(nil, p.token, ic.v))
	}
	params.SetBytes(ietf.SetupImplementation, []byte(ietfImplementation))
	return params
}

// ietfTokenOf returns the jwt query parameter of a URL (the token the
// reference relays read), "" without one.
func ietfTokenOf(u *url.URL) string { return u.Query().Get("jwt") }

// clientHandshake runs the client side of SETUP on ic. The ALPN pinned
// ic.v already, or was the legacy "moql" one (draft 14 offers its
// version list either way).
func (ic *ietfConn) clientHandshake(ctx context.Context, p ietfSetupParams) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	params := ic.setupParams(p)
	if ic.setup16 {
		return ic.setupBidi16(ctx, params)
	}
	if !ic.v.ControlStream() {
		_, err := ic.setupStreams(ctx, params)
		return err
	}
	str, err := ic.OpenBidi(ctx)
	if err != nil {
		return fmt.Errorf("moq: open control stream: %w", err)
	}
	ic.ctrl, ic.ctrlR = str, bufio.NewReader(str)
	m := ietf.ClientSetup{Versions: []ietf.Version{ic.v}, Params: params}
	if err := ic.writeControl(ietf.TypeClientSetup, &m); err != nil {
		return fmt.Errorf("moq: send CLIENT_SETUP: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { str.SetReadDeadline(time.Now()) })
	defer stop()
	typ, body, err := ietf.ReadMessage(ic.ctrlR, ic.v)
	if err != nil {
		return fmt.Errorf("moq: read SERVER_SETUP: %w", protocolErr(err))
	}
	var ss ietf.ServerSetup
	if typ != ietf.TypeServerSetup {
		return fmt.Errorf("%w: message %#x instead of SERVER_SETUP", ErrProtocol, typ)
	}
	if err := ietf.Decode(body, &ss, ic.v); err != nil {
		return fmt.Errorf("moq: SERVER_SETUP: %w", protocolErr(err))
	}
	if ss.Version != ic.v {
		return fmt.Errorf("%w: server chose version %#x, offered %v", ErrProtocol, uint32(ss.Version), ic.v)
	}
	str.SetReadDeadline(time.Time{})
	ic.peerLimits(ss.Params)
	return nil
}

// setupBidi16 runs the client SETUP of draft 16 as MediaMTX reads it: on
// the first bidi stream, CLIENT_SETUP and SERVER_SETUP carrying draft 17's
// SETUP options. The stream stays open (MediaMTX reads it to its end);
// the session then goes on in draft 18's messages (ic.v).
func (ic *ietfConn) setupBidi16(ctx context.Context, params ietf.Params) error {
	str, err := ic.OpenBidi(ctx)
	if err != nil {
		return fmt.Errorf("moq: open setup stream: %w", err)
	}
	if _, err := str.Write(ietf.AppendSetupAs(nil, ietf.TypeClientSetup, &ietf.Setup{Params: params}, ic.v)); err != nil {
		return fmt.Errorf("moq: send CLIENT_SETUP: %w", err)
	}
	r := bufio.NewReader(str)
	stop := context.AfterFunc(ctx, func() { str.SetReadDeadline(time.Now()) })
	defer stop()
	typ, body, err := ietf.ReadMessage(r, ic.v)
	if err != nil {
		return fmt.Errorf("moq: read SERVER_SETUP: %w", protocolErr(err))
	}
	var m ietf.Setup
	if typ != ietf.TypeServerSetup {
		return fmt.Errorf("%w: message %#x instead of SERVER_SETUP", ErrProtocol, typ)
	}
	if err := ietf.Decode(body, &m, ic.v); err != nil {
		return fmt.Errorf("moq: SERVER_SETUP: %w", protocolErr(err))
	}
	str.SetReadDeadline(time.Time{})
	ic.setupOut, ic.ctrlR = str, r
	return nil
}

// peerLimits applies the peer's SETUP MAX_REQUEST_ID.
func (ic *ietfConn) peerLimits(p ietf.Params) {
	if !ic.v.FlowControl() {
		return
	}
	maxID, _ := p.Varint(ietf.SetupMaxRequestID)
	ic.raiseMax(maxID)
}

// setupStreams exchanges the drafts 17+ SETUP: each side opens a uni
// stream of type 0x2F00 with its SETUP and keeps it open (it carries a
// later GOAWAY; @moq/net ends the session when it ends); the peer's is
// read for its GOAWAY by the control loop. It returns the peer's
// parameters.
func (ic *ietfConn) setupStreams(ctx context.Context, params ietf.Params) (ietf.Params, error) {
	out, err := ic.OpenUni(ctx)
	if err != nil {
		return nil, fmt.Errorf("moq: open setup stream: %w", err)
	}
	if _, err := out.Write(ietf.AppendSetupStream(nil, &ietf.Setup{Params: params}, ic.v)); err != nil {
		return nil, fmt.Errorf("moq: send SETUP: %w", err)
	}
	ic.setupOut = out
	in, err := ic.AcceptUni(ctx)
	if err != nil {
		return nil, fmt.Errorf("moq: no SETUP stream from the peer: %w", err)
	}
	r := bufio.NewReader(in)
	stop := context.AfterFunc(ctx, func() { in.SetReadDeadline(time.Now()) })
	defer stop()
	typ, body, err := ietf.ReadMessage(r, ic.v)
	if err != nil {
		return nil, fmt.Errorf("moq: read SETUP: %w", protocolErr(err))
	}
	if typ != ietf.TypeSetupStream {
		in.CancelRead(ietfProtocolViolation)
		return nil, fmt.Errorf("%w: stream %#x instead of SETUP", ErrProtocol, typ)
	}
	var m ietf.Setup
	if err := ietf.Decode(body, &m, ic.v); err != nil {
		return nil, fmt.Errorf("moq: SETUP: %w", protocolErr(err))
	}
	in.SetReadDeadline(time.Time{})
	ic.ctrlR = r
	ic.ctrlIn = in
	return m.Params, nil
}

// serverHandshake runs the server side of SETUP. For drafts 14-16 it
// reads CLIENT_SETUP from the first bidi stream; path is the SETUP Path
// (without query) when the client sent one.
func (ic *ietfConn) serverHandshake(ctx context.Context) (path, token string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var peer ietf.Params
	if ic.setup16 {
		return ic.serverSetup16(ctx)
	}
	if !ic.v.ControlStream() {
		if peer, err = ic.setupStreams(ctx, ic.setupParams(ietfSetupParams{})); err != nil {
			return "", "", err
		}
		p, _ := peer.Bytes(ietf.SetupPath)
		return string(p), ic.setupToken(peer), nil
	}
	str, err := ic.AcceptBidi(ctx)
	if err != nil {
		return "", "", fmt.Errorf("moq: no control stream: %w", err)
	}
	ic.ctrl, ic.ctrlR = str, bufio.NewReader(str)
	stop := context.AfterFunc(ctx, func() { str.SetReadDeadline(time.Now()) })
	defer stop()
	typ, body, err := ietf.ReadMessage(ic.ctrlR, ic.v)
	if err != nil {
		return "", "", fmt.Errorf("moq: read CLIENT_SETUP: %w", protocolErr(err))
	}
	var cs ietf.ClientSetup
	if typ != ietf.TypeClientSetup {
		return "", "", fmt.Errorf("%w: message %#x instead of CLIENT_SETUP", ErrProtocol, typ)
	}
	if err := ietf.Decode(body, &cs, ic.v); err != nil {
		return "", "", fmt.Errorf("moq: CLIENT_SETUP: %w", protocolErr(err))
	}
	if !containsVersion(cs.Versions, ic.v) {
		ic.Close(ietfVersionFailed, "no common version")
		return "", "", fmt.Errorf("%w: client offers no %v", ErrProtocol, ic.v)
	}
	str.SetReadDeadline(time.Time{})
	peer = cs.Params
	ss := ietf.ServerSetup{Version: ic.v, Params: ic.setupParams(ietfSetupParams{})}
	if err := ic.writeControl(ietf.TypeServerSetup, &ss); err != nil {
		return "", "", fmt.Errorf("moq: send SERVER_SETUP: %w", err)
	}
	ic.peerLimits(peer)
	if p, ok := peer.Bytes(ietf.SetupPath); ok {
		path = string(p)
	}
	return path, ic.setupToken(peer), nil
}

// serverSetup16 is the server side of setupBidi16, as a Strict server
// runs it: a CLIENT_SETUP in draft 16's own layout (a parameter count
// first) ends the session with code 0, as it does in MediaMTX, whose
// parser fails on it.
func (ic *ietfConn) serverSetup16(ctx context.Context) (path, token string, err error) {
	str, err := ic.AcceptBidi(ctx)
	if err != nil {
		return "", "", fmt.Errorf("moq: no setup stream: %w", err)
	}
	r := bufio.NewReader(str)
	stop := context.AfterFunc(ctx, func() { str.SetReadDeadline(time.Now()) })
	defer stop()
	typ, body, err := ietf.ReadMessage(r, ic.v)
	var m ietf.Setup
	var std ietf.ClientSetup
	if err != nil || typ != ietf.TypeClientSetup || ietf.Decode(body, &m, ic.v) != nil || ietf.Decode(body, &std, ietf.Draft16) == nil {
		ic.Close(ietfNoError, "")
		return "", "", fmt.Errorf("%w: CLIENT_SETUP not in draft 17's SETUP layout", ErrProtocol)
	}
	str.SetReadDeadline(time.Time{})
	if _, err := str.Write(ietf.AppendSetupAs(nil, ietf.TypeServerSetup, &ietf.Setup{}, ic.v)); err != nil {
		return "", "", fmt.Errorf("moq: send SERVER_SETUP: %w", err)
	}
	ic.setupOut, ic.ctrlR = str, r
	p, _ := m.Params.Bytes(ietf.SetupPath)
	return string(p), ic.setupToken(m.Params), nil
}

// setupToken returns the token of the client's SETUP AUTHORIZATION TOKEN
// parameter, "" without one.
func (ic *ietfConn) setupToken(peer ietf.Params) string {
	b, ok := peer.Bytes(ietf.SetupAuthorizationToken)
	if !ok {
		return ""
	}
	tok, _ := ietf.ParseToken(b, ic.v)
	return tok
}

func containsVersion(vs []ietf.Version, v ietf.Version) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// writeControl sends one message on the control stream (drafts 14-16).
func (ic *ietfConn) writeControl(typ uint64, m ietf.Message) error {
	if ic.ctrl == nil {
		return fmt.Errorf("%w: no control stream in %v", ErrProtocol, ic.v)
	}
	b := ietf.Append(nil, typ, m, ic.v)
	ic.wmu.Lock()
	defer ic.wmu.Unlock()
	_, err := ic.ctrl.Write(b)
	return err
}

// raiseMax raises the request id limit the peer granted us.
func (ic *ietfConn) raiseMax(maxID uint64) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if maxID > ic.peerMax {
		ic.peerMax = maxID
		close(ic.maxCh)
		ic.maxCh = make(chan struct{})
	}
}

// newRequest allocates a request id (waiting for MAX_REQUEST_ID when the
// peer's limit is reached, after telling it with REQUESTS_BLOCKED) and
// registers the request for its responses. ownStream asks for a stream of
// its own even on the control-stream drafts (SUBSCRIBE_NAMESPACE in 16).
func (ic *ietfConn) newRequest(ctx context.Context, ownStream bool) (*ietfRequest, error) {
	req, err := ic.allocRequest(ctx)
	if err != nil {
		return nil, err
	}
	if ownStream || !ic.v.ControlStream() {
		str, err := ic.OpenBidi(ctx)
		if err != nil {
			ic.endRequest(req)
			return nil, fmt.Errorf("open request stream: %w", err)
		}
		req.str, req.ended = str, make(chan struct{})
		go req.readStream()
	}
	return req, nil
}

func (ic *ietfConn) allocRequest(ctx context.Context) (*ietfRequest, error) {
	blocked := false
	for {
		ic.mu.Lock()
		if ic.goingOff {
			ic.mu.Unlock()
			// Counts as the connection's loss: retried on the next one.
			return nil, errGoingAway
		}
		if ic.nextID < ic.peerMax {
			req := &ietfRequest{ic: ic, id: ic.nextID, msgs: make(chan ietfMsg, 16), data: make(chan *ietfData, 1)}
			ic.nextID += 2
			ic.reqs[req.id] = req
			ic.mu.Unlock()
			return req, nil
		}
		ch, limit := ic.maxCh, ic.peerMax
		ic.mu.Unlock()
		if !blocked {
			blocked = true
			ic.log.Debug("moq: out of request ids, waiting for MAX_REQUEST_ID", "limit", limit)
			_ = ic.writeControl(ietf.TypeRequestsBlocked, &ietf.RequestID{ID: limit})
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-ic.Context().Done():
			return nil, connCause(ic)
		}
	}
}

// endRequest forgets req (and ends its stream).
func (ic *ietfConn) endRequest(req *ietfRequest) {
	req.closeStream()
	ic.mu.Lock()
	if ic.reqs[req.id] == req {
		delete(ic.reqs, req.id)
	}
	ic.mu.Unlock()
}

// route hands a response to the request it names. A response for a
// request we no longer wait for is dropped.
func (ic *ietfConn) route(id uint64, m ietfMsg) {
	ic.mu.Lock()
	req := ic.reqs[id]
	ic.mu.Unlock()
	if req == nil {
		ic.log.Debug("moq: response for an unknown request", "type", m.typ, "request", id)
		return
	}
	select {
	case req.msgs <- m:
	default:
		ic.log.Warn("moq: request's responses not read, dropped", "type", m.typ, "request", id)
	}
}

// routeNamespace hands a NAMESPACE or NAMESPACE_DONE entry that came on
// the control stream to the connection's only SUBSCRIBE_NAMESPACE that
// rides the control stream; with none or several it cannot be placed and
// is skipped.
func (ic *ietfConn) routeNamespace(m ietfMsg) {
	ic.mu.Lock()
	var feed *ietfRequest
	n := 0
	for _, req := range ic.reqs {
		if req.nsFeed && req.str == nil {
			feed = req
			n++
		}
	}
	ic.mu.Unlock()
	if n != 1 {
		ic.log.Debug("moq: NAMESPACE entry on the control stream skipped", "type", m.typ, "feeds", n)
		return
	}
	select {
	case feed.msgs <- m:
	default:
		ic.log.Warn("moq: namespace entries not read, dropped")
	}
}

// grant keeps the peer's request window open after it used id.
func (ic *ietfConn) grant(id uint64) {
	if !ic.v.FlowControl() {
		return
	}
	ic.mu.Lock()
	if id+ic.window/2 < ic.granted {
		ic.mu.Unlock()
		return
	}
	ic.granted = id + ic.window
	limit := ic.granted
	ic.mu.Unlock()
	_ = ic.writeControl(ietf.TypeMaxRequestID, &ietf.RequestID{ID: limit})
}

// readRequest reads the next response of req, bounded by timeout (0:
// none) and ctx.
func (ic *ietfConn) readRequest(ctx context.Context, req *ietfRequest, timeout time.Duration) (ietfMsg, error) {
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
			return ietfMsg{}, errRequestEnded
		}
		return ietfMsg{}, req.endErr
	case <-tc:
		return ietfMsg{}, errRequestTimeout
	case <-ctx.Done():
		return ietfMsg{}, context.Cause(ctx)
	case <-ic.Context().Done():
		return ietfMsg{}, connCause(ic)
	}
}

var (
	errRequestTimeout = errors.New("no answer within the request timeout")
	errRequestEnded   = errors.New("request stream ended")
)

// errGoingAway is what a request meets after GOAWAY: like a lost
// connection, it waits for the next one.
var errGoingAway = &CloseError{Code: ietfNoError, Reason: "peer sent GOAWAY", Remote: true}

// serveIETF runs ic until the connection is gone: the control loop (or
// the peer's setup stream for GOAWAY) and the incoming data streams.
func (s *Session) serveIETF(ic *ietfConn) {
	ctx := ic.Context()
	ic.served = s.pub.ietf.On(ietfPubConn{ic})
	control := func() {
		err := s.ietfControlLoop(ic)
		if ctx.Err() == nil {
			if errors.Is(err, ErrProtocol) {
				s.log.Warn("moq: control stream", "err", err)
				ic.Close(ietfProtocolViolation, "protocol violation")
			} else {
				s.log.Debug("moq: control stream ended", "err", err)
				ic.Close(ietfNoError, "")
			}
		}
	}
	s.serveLoops(ic, ietfNoError,
		func(str recvStream, t session.OrderTicket) { s.handleIETFUni(ic, str, t) },
		func(str bidiStream) { s.handleIETFBidi(ic, str) },
		control, ic.served.Announce)
}

// ietfControlLoop reads the control stream until it fails.
func (s *Session) ietfControlLoop(ic *ietfConn) error {
	for {
		typ, body, err := ietf.ReadMessage(ic.ctrlR, ic.v)
		if err != nil {
			return protocolErr(err)
		}
		if err := s.ietfControl(ic, typ, body); err != nil {
			return err
		}
	}
}

// ietfControl handles one control message.
func (s *Session) ietfControl(ic *ietfConn, typ uint64, body []byte) error {
	v := ic.v
	if !v.ControlStream() && typ != ietf.TypeGoAway {
		return fmt.Errorf("%w: message %#x on the setup stream", ErrProtocol, typ)
	}
	decode := func(m ietf.Message) error {
		if err := ietf.Decode(body, m, v); err != nil {
			return fmt.Errorf("message %#x: %w", typ, protocolErr(err))
		}
		return nil
	}
	switch typ {
	case ietf.TypeSubscribeOK, ietf.TypeRequestError, ietf.TypePublishDone, ietf.TypeFetchOK,
		ietf.TypeFetchError, ietf.TypeRequestOK, ietf.TypeSubscribeNamespaceOK,
		ietf.TypeSubscribeNamespaceErr, ietf.TypePublishError:
		// Responses to our requests start with the request id.
		id, err := ietf.RequestIDOf(body, v)
		if err != nil {
			return fmt.Errorf("message %#x: %w", typ, protocolErr(err))
		}
		ic.route(id, ietfMsg{typ, body})
	case ietf.TypePublishNamespaceError:
		if v == ietf.Draft14 {
			id, err := ietf.RequestIDOf(body, v)
			if err != nil {
				return protocolErr(err)
			}
			ic.route(id, ietfMsg{typ, body})
			break
		}
		// Drafts 15+: a NAMESPACE entry (no request id), on the control
		// stream only from a peer answering a draft-15 SUBSCRIBE_NAMESPACE
		// with draft 16's entries.
		ic.routeNamespace(ietfMsg{typ, body})
	case ietf.TypeNamespaceDone:
		// Draft 14: TRACK_STATUS_OK, which we never ask for; later drafts:
		// NAMESPACE_DONE, as NAMESPACE above.
		if v == ietf.Draft14 {
			s.log.Debug("moq: unrequested TRACK_STATUS_OK ignored")
			break
		}
		ic.routeNamespace(ietfMsg{typ, body})
	case ietf.TypePublishNamespace:
		var m ietf.PublishNamespace
		if err := decode(&m); err != nil {
			return err
		}
		ic.grant(m.RequestID)
		ic.peerPublished(m.Namespace, m.RequestID)
		return ic.writeControl(ietf.TypeRequestOK, &ietf.RequestOK{RequestID: m.RequestID})
	case ietf.TypePublishNamespaceDone:
		var m ietf.PublishNamespaceDone
		if err := decode(&m); err != nil {
			return err
		}
		ic.peerUnpublished(m.Namespace, m.RequestID, v == ietf.Draft16)
	case ietf.TypeMaxRequestID:
		var m ietf.RequestID
		if err := decode(&m); err != nil {
			return err
		}
		ic.raiseMax(m.ID)
	case ietf.TypeRequestsBlocked:
		var m ietf.RequestID
		if err := decode(&m); err != nil {
			return err
		}
		ic.grant(m.ID)
	case ietf.TypeGoAway:
		var m ietf.GoAway
		if err := decode(&m); err != nil {
			return err
		}
		s.ietfGoAway(ic, m)
	case ietf.TypeSubscribe, ietf.TypeFetch, ietf.TypeSubscribeNamespace14, ietf.TypeTrackStatus, ietf.TypePublish:
		// Requests of a peer that subscribes to what we publish.
		return protocolErr(ic.served.Request(nil, nil, typ, body))
	case ietf.TypeUnsubscribe, ietf.TypeFetchCancel:
		var m ietf.RequestID
		if err := decode(&m); err != nil {
			return err
		}
		ic.served.Cancel(m.ID)
	case ietf.TypeUnsubscribeNamespace, ietf.TypePublishNamespaceCancel, ietf.TypeRequestUpdate:
		// Nothing to undo: SUBSCRIBE_NAMESPACE changed nothing, a refused
		// PUBLISH_NAMESPACE stays offered, updates are not followed.
	default:
		return fmt.Errorf("%w: unknown control message %#x", ErrProtocol, typ)
	}
	return nil
}

// ietfGoAwayGrace is how long the connection stays after GOAWAY before
// the session moves (the subscriptions' groups in flight finish); a
// GOAWAY of drafts 17+ may ask for less.
const ietfGoAwayGrace = time.Second

// ietfGoAway handles GOAWAY: no new requests on this connection, and a
// dialled session moves (moveAway), the connection staying up to
// ietfGoAwayGrace (less when the GOAWAY asks) for the subscriptions'
// groups in flight to finish.
func (s *Session) ietfGoAway(ic *ietfConn, m ietf.GoAway) {
	ic.mu.Lock()
	ic.goingOff = true
	ic.mu.Unlock()
	grace := ietfGoAwayGrace
	if m.Timeout > 0 {
		grace = min(grace, time.Duration(m.Timeout)*time.Millisecond)
	}
	s.moveAway(ic, m.URI, grace)
}

// goAwayTarget resolves a GOAWAY's New Session URI against the current
// target. The current URL's jwt goes along only to the same host and
// port, and only when the new URI carries none: a token is never handed
// to another server.
func goAwayTarget(cur *transport.Target, uri string) (*transport.Target, error) {
	ref, err := url.Parse(uri)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedURL, transport.RedactError(err))
	}
	u := cur.URL.ResolveReference(ref)
	next, err := transport.ParseTarget(u.String())
	if err != nil {
		return nil, err
	}
	if next.HostPort == cur.HostPort && !next.URL.Query().Has("jwt") && cur.URL.Query().Has("jwt") {
		q := next.URL.Query()
		q.Set("jwt", cur.URL.Query().Get("jwt"))
		next.URL.RawQuery = q.Encode()
		if next, err = transport.ParseTarget(next.URL.String()); err != nil {
			return nil, err
		}
	}
	return next, nil
}

// handleIETFBidi serves a request stream the peer opened (drafts 17+;
// SUBSCRIBE_NAMESPACE from draft 16): PUBLISH_NAMESPACE is accepted and
// lasts as long as its stream, requests to publish are refused.
func (s *Session) handleIETFBidi(ic *ietfConn, str bidiStream) {
	r := bufio.NewReaderSize(str, subscribeReadBuffer)
	typ, body, err := ietf.ReadMessage(r, ic.v)
	if err != nil {
		resetStream(str, CodeCancel)
		return
	}
	reply := func(typ uint64, m ietf.Message) error {
		_, err := str.Write(ietf.Append(nil, typ, m, ic.v))
		return err
	}
	id, err := ietf.RequestIDOf(body, ic.v)
	if err != nil {
		resetStream(str, ietfProtocolViolation)
		return
	}
	if typ != ietf.TypePublishNamespace {
		if err := ic.served.Request(str, r, typ, body); err != nil {
			s.log.Warn("moq: request stream", "err", err)
			resetStream(str, ietfProtocolViolation)
		}
		return
	}
	var m ietf.PublishNamespace
	if err := ietf.Decode(body, &m, ic.v); err != nil {
		s.log.Warn("moq: PUBLISH_NAMESPACE", "err", err)
		resetStream(str, ietfProtocolViolation)
		return
	}
	if err := reply(ietf.TypeRequestOK, &ietf.RequestOK{RequestID: id}); err != nil {
		return
	}
	ic.peerPublished(m.Namespace, id)
	// The namespace is withdrawn when its stream ends (or with
	// PUBLISH_NAMESPACE_DONE in draft 16).
	_, err = io.Copy(io.Discard, r)
	if connGone(ic, err) {
		// The connection's end is no withdrawal: the broadcast may come
		// back on the next one.
		return
	}
	ic.peerUnpublished(m.Namespace, id, true)
	str.Close()
}

// sendGoAway asks the peer to move to uri ("" for the same one).
func (ic *ietfConn) sendGoAway(uri string) error {
	m := ietf.GoAway{URI: uri}
	if ic.v.ControlStream() {
		return ic.writeControl(ietf.TypeGoAway, &m)
	}
	ic.wmu.Lock()
	defer ic.wmu.Unlock()
	_, err := ic.setupOut.Write(ietf.Append(nil, ietf.TypeGoAway, &m, ic.v))
	return err
}

// peerPublished records a namespace the peer published.
func (ic *ietfConn) peerPublished(ns string, id uint64) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	ic.peerNS[normPath(ns)] = id
	close(ic.nsCh)
	ic.nsCh = make(chan struct{})
}

// peerUnpublished forgets a namespace, by name or (draft 16) request id.
func (ic *ietfConn) peerUnpublished(ns string, id uint64, byID bool) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if byID {
		for p, x := range ic.peerNS {
			if x == id {
				delete(ic.peerNS, p)
			}
		}
	} else {
		delete(ic.peerNS, normPath(ns))
	}
	close(ic.nsCh)
	ic.nsCh = make(chan struct{})
}
