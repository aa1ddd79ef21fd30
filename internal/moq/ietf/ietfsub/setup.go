package ietfsub

import (
	"bufio"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/session"
)

// The SETUP of a moq-transport session, both sides: CLIENT_SETUP and
// SERVER_SETUP on the control stream (drafts 14-16), a SETUP stream each
// way (drafts 17+), and MediaMTX's draft-16 SETUP in draft 17's layout.

// SetupParams are the SETUP parameters a client sends.
type SetupParams struct {
	Path      string // path and query, raw QUIC only
	Authority string // host:port, raw QUIC only
	Token     string // the URL's jwt, as AUTHORIZATION_TOKEN
}

// setupTimeout bounds a SETUP exchange.
const setupTimeout = 10 * time.Second

func (s *Session) setupParams(p SetupParams) ietf.Params {
	var params ietf.Params
	if s.v.FlowControl() {
		params.SetVarint(ietf.SetupMaxRequestID, s.window)
	}
	if p.Path != "" {
		params.SetBytes(ietf.SetupPath, []byte(p.Path))
	}
	if p.Authority != "" {
		params.SetBytes(ietf.SetupAuthority, []byte(p.Authority))
	}
	if p.Token != "" {
		params.SetBytes(ietf.SetupAuthorizationToken, ietf.AppendToken(nil, p.Token, s.v))
	}
	params.SetBytes(ietf.SetupImplementation, []byte(implementation))
	return params
}

// ClientHandshake runs the client side of SETUP. The ALPN pinned the
// draft already, or was the legacy "moql" one (draft 14 offers its
// version list either way).
func (s *Session) ClientHandshake(ctx context.Context, p SetupParams) error {
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	params := s.setupParams(p)
	if s.setup16 {
		return s.setupBidi16(ctx, params)
	}
	if !s.v.ControlStream() {
		_, err := s.setupStreams(ctx, params)
		return err
	}
	str, err := s.c.OpenBidi(ctx)
	if err != nil {
		return fmt.Errorf("moq: open control stream: %w", err)
	}
	s.ctrl, s.ctrlIn, s.ctrlR = str, str, bufio.NewReader(str)
	m := ietf.ClientSetup{Versions: []ietf.Version{s.v}, Params: params}
	if err := s.WriteControl(ietf.TypeClientSetup, &m); err != nil {
		return fmt.Errorf("moq: send CLIENT_SETUP: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { str.SetReadDeadline(time.Now()) })
	defer stop()
	typ, body, err := ietf.ReadMessage(s.ctrlR, s.v)
	if err != nil {
		return fmt.Errorf("moq: read SERVER_SETUP: %w", protocolErr(err))
	}
	var ss ietf.ServerSetup
	if typ != ietf.TypeServerSetup {
		return fmt.Errorf("%w: message %#x instead of SERVER_SETUP", session.ErrProtocol, typ)
	}
	if err := ietf.Decode(body, &ss, s.v); err != nil {
		return fmt.Errorf("moq: SERVER_SETUP: %w", protocolErr(err))
	}
	if ss.Version != s.v {
		return fmt.Errorf("%w: server chose version %#x, offered %v", session.ErrProtocol, uint32(ss.Version), s.v)
	}
	str.SetReadDeadline(time.Time{})
	s.peerLimits(ss.Params)
	return nil
}

// setupBidi16 runs the client SETUP of draft 16 as MediaMTX reads it: on
// the first bidi stream, CLIENT_SETUP and SERVER_SETUP carrying draft 17's
// SETUP options. The stream stays open (MediaMTX reads it to its end);
// the session then goes on in draft 18's messages (s.v).
func (s *Session) setupBidi16(ctx context.Context, params ietf.Params) error {
	str, err := s.c.OpenBidi(ctx)
	if err != nil {
		return fmt.Errorf("moq: open setup stream: %w", err)
	}
	if _, err := str.Write(ietf.AppendSetupAs(nil, ietf.TypeClientSetup, &ietf.Setup{Params: params}, s.v)); err != nil {
		return fmt.Errorf("moq: send CLIENT_SETUP: %w", err)
	}
	r := bufio.NewReader(str)
	stop := context.AfterFunc(ctx, func() { str.SetReadDeadline(time.Now()) })
	defer stop()
	typ, body, err := ietf.ReadMessage(r, s.v)
	if err != nil {
		return fmt.Errorf("moq: read SERVER_SETUP: %w", protocolErr(err))
	}
	var m ietf.Setup
	if typ != ietf.TypeServerSetup {
		return fmt.Errorf("%w: message %#x instead of SERVER_SETUP", session.ErrProtocol, typ)
	}
	if err := ietf.Decode(body, &m, s.v); err != nil {
		return fmt.Errorf("moq: SERVER_SETUP: %w", protocolErr(err))
	}
	str.SetReadDeadline(time.Time{})
	s.setupOut, s.ctrlIn, s.ctrlR = str, str, r
	return nil
}

// peerLimits applies the peer's SETUP MAX_REQUEST_ID.
func (s *Session) peerLimits(p ietf.Params) {
	if !s.v.FlowControl() {
		return
	}
	maxID, _ := p.Varint(ietf.SetupMaxRequestID)
	s.raiseMax(maxID)
}

// setupStreams exchanges the drafts 17+ SETUP: each side opens a uni
// stream of type 0x2F00 with its SETUP and keeps it open (it carries a
// later GOAWAY; @moq/net ends the session when it ends); the peer's is
// read for its GOAWAY by the control loop. It returns the peer's
// parameters.
func (s *Session) setupStreams(ctx context.Context, params ietf.Params) (ietf.Params, error) {
	out, err := s.c.OpenUni(ctx)
	if err != nil {
		return nil, fmt.Errorf("moq: open setup stream: %w", err)
	}
	if _, err := out.Write(ietf.AppendSetupStream(nil, &ietf.Setup{Params: params}, s.v)); err != nil {
		return nil, fmt.Errorf("moq: send SETUP: %w", err)
	}
	s.setupOut = out
	in, err := s.c.AcceptUni(ctx)
	if err != nil {
		return nil, fmt.Errorf("moq: no SETUP stream from the peer: %w", err)
	}
	r := bufio.NewReader(in)
	stop := context.AfterFunc(ctx, func() { in.SetReadDeadline(time.Now()) })
	defer stop()
	typ, body, err := ietf.ReadMessage(r, s.v)
	if err != nil {
		return nil, fmt.Errorf("moq: read SETUP: %w", protocolErr(err))
	}
	if typ != ietf.TypeSetupStream {
		in.CancelRead(CodeProtocolViolation)
		return nil, fmt.Errorf("%w: stream %#x instead of SETUP", session.ErrProtocol, typ)
	}
	var m ietf.Setup
	if err := ietf.Decode(body, &m, s.v); err != nil {
		return nil, fmt.Errorf("moq: SETUP: %w", protocolErr(err))
	}
	in.SetReadDeadline(time.Time{})
	s.ctrlR = r
	s.ctrlIn = in
	return m.Params, nil
}

// ServerHandshake runs the server side of SETUP. For drafts 14-16 it
// reads CLIENT_SETUP from the first bidi stream; path is the SETUP Path
// (without query) when the client sent one, token its AUTHORIZATION
// TOKEN.
func (s *Session) ServerHandshake(ctx context.Context) (path, token string, err error) {
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	var peer ietf.Params
	if s.setup16 {
		return s.serverSetup16(ctx)
	}
	if !s.v.ControlStream() {
		if peer, err = s.setupStreams(ctx, s.setupParams(SetupParams{})); err != nil {
			return "", "", err
		}
		p, _ := peer.Bytes(ietf.SetupPath)
		return string(p), s.setupToken(peer), nil
	}
	str, err := s.c.AcceptBidi(ctx)
	if err != nil {
		return "", "", fmt.Errorf("moq: no control stream: %w", err)
	}
	s.ctrl, s.ctrlIn, s.ctrlR = str, str, bufio.NewReader(str)
	stop := context.AfterFunc(ctx, func() { str.SetReadDeadline(time.Now()) })
	defer stop()
	typ, body, err := ietf.ReadMessage(s.ctrlR, s.v)
	if err != nil {
		return "", "", fmt.Errorf("moq: read CLIENT_SETUP: %w", protocolErr(err))
	}
	var cs ietf.ClientSetup
	if typ != ietf.TypeClientSetup {
		return "", "", fmt.Errorf("%w: message %#x instead of CLIENT_SETUP", session.ErrProtocol, typ)
	}
	if err := ietf.Decode(body, &cs, s.v); err != nil {
		return "", "", fmt.Errorf("moq: CLIENT_SETUP: %w", protocolErr(err))
	}
	if !slices.Contains(cs.Versions, s.v) {
		s.c.Close(codeVersionFailed, "no common version")
		return "", "", fmt.Errorf("%w: client offers no %v", session.ErrProtocol, s.v)
	}
	str.SetReadDeadline(time.Time{})
	peer = cs.Params
	ss := ietf.ServerSetup{Version: s.v, Params: s.setupParams(SetupParams{})}
	if err := s.WriteControl(ietf.TypeServerSetup, &ss); err != nil {
		return "", "", fmt.Errorf("moq: send SERVER_SETUP: %w", err)
	}
	s.peerLimits(peer)
	if p, ok := peer.Bytes(ietf.SetupPath); ok {
		path = string(p)
	}
	return path, s.setupToken(peer), nil
}

// serverSetup16 is the server side of setupBidi16, as a Strict server
// runs it: a CLIENT_SETUP in draft 16's own layout (a parameter count
// first) ends the session with code 0, as it does in MediaMTX, whose
// parser fails on it.
func (s *Session) serverSetup16(ctx context.Context) (path, token string, err error) {
	str, err := s.c.AcceptBidi(ctx)
	if err != nil {
		return "", "", fmt.Errorf("moq: no setup stream: %w", err)
	}
	r := bufio.NewReader(str)
	stop := context.AfterFunc(ctx, func() { str.SetReadDeadline(time.Now()) })
	defer stop()
	typ, body, err := ietf.ReadMessage(r, s.v)
	var m ietf.Setup
	var std ietf.ClientSetup
	if err != nil || typ != ietf.TypeClientSetup || ietf.Decode(body, &m, s.v) != nil || ietf.Decode(body, &std, ietf.Draft16) == nil {
		s.c.Close(CodeNoError, "")
		return "", "", fmt.Errorf("%w: CLIENT_SETUP not in draft 17's SETUP layout", session.ErrProtocol)
	}
	str.SetReadDeadline(time.Time{})
	if _, err := str.Write(ietf.AppendSetupAs(nil, ietf.TypeServerSetup, &ietf.Setup{}, s.v)); err != nil {
		return "", "", fmt.Errorf("moq: send SERVER_SETUP: %w", err)
	}
	s.setupOut, s.ctrlIn, s.ctrlR = str, str, r
	p, _ := m.Params.Bytes(ietf.SetupPath)
	return string(p), s.setupToken(m.Params), nil
}

// setupToken returns the token of the client's SETUP AUTHORIZATION TOKEN
// parameter, "" without one.
func (s *Session) setupToken(peer ietf.Params) string {
	b, ok := peer.Bytes(ietf.SetupAuthorizationToken)
	if !ok {
		return ""
	}
	tok, _ := ietf.ParseToken(b, s.v)
	return tok
}
