package litesub

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/moq/transport/alpn"
	"github.com/moq-export/moq-export/internal/varint"
)

// moq-lite's version negotiation and SETUP, both roles (Link.Dial,
// Accept): the version a negotiated ALPN or WebTransport protocol names,
// the legacy SETUP (CLIENT_SETUP / SERVER_SETUP) when the ALPN is "moql"
// or a WebTransport session negotiated no protocol,
// the session stream lite-01/02 keep open after it (ServeSessionStream),
// and our SETUP on the lite-03+ SETUP stream (SendSetup). Which family a
// connection speaks is the facade's choice; this is what moq-lite does
// once it is chosen.

// ErrVersion means the peer offered or chose no version this package
// speaks (or none of those the caller allows). (Package subscribe names
// it as its own ErrVersion.)
var ErrVersion = errors.New("moq: no common protocol version")

// CodeVersion is the moq-lite error code for a version mismatch.
const CodeVersion = 9

// SetupTimeout bounds the legacy SETUP exchange, and how long a server
// waits for a client's SETUP it must read before admitting the session.
const SetupTimeout = 10 * time.Second

// Negotiated is what moq-lite's negotiation settled on a connection.
type Negotiated struct {
	// Version is the moq-lite version the connection speaks (unset with
	// Other).
	Version *wire.Version
	// Stream is the legacy SETUP's stream: the session stream that stays
	// open on lite-01/02 (nil for a version a token pins); with Other, the
	// client's stream, which reads again what the negotiation read of it.
	Stream session.Stream
	// Path is the SETUP path a legacy raw QUIC client sent.
	Path string
	// Other is set when the client's legacy SETUP chose a version of
	// another family (moq-transport draft 14): that family takes the
	// connection and answers the CLIENT_SETUP that Stream replays.
	Other alpn.Choice
}

// Accept runs moq-lite's negotiation on an accepted connection c that
// negotiated token: the version the token pins, or, under alpn.Legacy
// or no token (WebTransport), the legacy SETUP, which takes the first
// version the client offers that offered (the server's versions, most
// preferred first, of every family) has and the legacy SETUP can
// choose. A version of another family comes back as Other. known (every
// version of every family) names the versions a client offers in errors.
func Accept(ctx context.Context, c session.Conn, token string, offered, known []alpn.Version) (Negotiated, error) {
	v, legacy, err := selectALPN(token, offered)
	if err != nil || !legacy {
		return Negotiated{Version: v}, err
	}
	return serverSetup(ctx, c, offered, known)
}

// Dial runs moq-lite's negotiation on the dialled connection, which
// negotiated token, offering the moq-lite versions of offered: the
// version the token pins, or the legacy SETUP (with the SETUP path of a
// raw QUIC client, LinkConfig.Setup). It must run before Serve. A failed
// negotiation closes the connection with CodeVersion.
func (l *Link) Dial(ctx context.Context, token string, offered []alpn.Version) error {
	var lite []alpn.Version
	for _, v := range offered {
		if v.Family() == alpn.Lite {
			lite = append(lite, v)
		}
	}
	v, legacy, err := selectALPN(token, lite)
	var str session.Stream
	if err == nil && legacy {
		v, str, err = clientSetup(ctx, l.C, lite, l.cfg.Setup.Path)
	}
	if err != nil {
		l.C.Close(CodeVersion, "version")
		return err
	}
	l.V, l.cfg.SessionStream = v, str
	return nil
}

// selectALPN maps a negotiated ALPN or WebTransport protocol to a version
// of vs. legacy is true when the version is still to be chosen by the
// legacy SETUP exchange.
func selectALPN(proto string, vs []alpn.Version) (v *wire.Version, legacy bool, err error) {
	if proto == "" || proto == alpn.Legacy {
		if !slices.ContainsFunc(vs, alpn.Version.UnderLegacy) {
			return nil, false, fmt.Errorf("%w: the peer chose none of %s (it answered %s, which means the legacy SETUP exchange)", ErrVersion, alpn.Names(vs), orNone(proto))
		}
		return nil, true, nil
	}
	if v := wire.ByALPN(proto); v != nil && offers(vs, v.Code) {
		return v, false, nil
	}
	return nil, false, fmt.Errorf("%w: %q negotiated; this session speaks %s", ErrVersion, proto, alpn.Names(vs))
}

// offers reports whether vs holds the version with wire code code.
func offers(vs []alpn.Version, code uint64) bool {
	_, ok := alpn.ByCode(vs, code)
	return ok
}

func orNone(proto string) string {
	if proto == "" {
		return "no protocol"
	}
	return fmt.Sprintf("%q", proto)
}

// clientSetup runs the client half of the legacy SETUP on c: it offers
// the legacy versions of vs (and setupPath, the SETUP path on raw QUIC)
// and returns the version the server chose and the session stream, which
// stays open for lite-01/02.
func clientSetup(ctx context.Context, c session.Conn, vs []alpn.Version, setupPath string) (*wire.Version, session.Stream, error) {
	ctx, cancel := context.WithTimeout(ctx, SetupTimeout)
	defer cancel()
	str, err := c.OpenBidi(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("moq: legacy SETUP: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { str.SetReadDeadline(time.Now()) })
	defer stop()
	legacy := legacyOnly(vs)
	m := wire.ClientSetup{Versions: alpn.Codes(legacy), Params: []wire.Param{
		wire.LegacyVarintParam(wire.LegacyParamMaxRequestID, 0),
		{ID: wire.LegacyParamImplementation, Value: []byte("moq-export")},
	}}
	if setupPath != "" {
		m.Params = append(m.Params, wire.Param{ID: wire.LegacyParamPath, Value: []byte(setupPath)})
	}
	if _, err := str.Write(m.Append(varint.Append(nil, wire.StreamClientSetup))); err != nil {
		session.ResetStream(str, wire.CodeCancel)
		return nil, nil, fmt.Errorf("moq: legacy SETUP: %w", err)
	}
	r := bufio.NewReader(str)
	var reply wire.ServerSetup
	typ, err := varint.Read(r)
	if err == nil && typ != wire.StreamServerSetup {
		err = fmt.Errorf("%w: legacy SETUP reply of type %#x", session.ErrProtocol, typ)
	}
	var body []byte
	if err == nil {
		body, err = wire.ReadLegacyMessage(r)
	}
	if err == nil {
		err = ProtocolErr(reply.Decode(body))
	}
	if err != nil {
		session.ResetStream(str, wire.CodeCancel)
		return nil, nil, fmt.Errorf("moq: legacy SETUP: %w", err)
	}
	v := wire.ByCode(reply.Version)
	if v == nil || !offers(vs, v.Code) || !v.LegacySetup {
		session.ResetStream(str, CodeVersion)
		return nil, nil, fmt.Errorf("%w: the server chose version %#x in the legacy SETUP; offered %s", ErrVersion, reply.Version, alpn.Names(legacy))
	}
	return v, &bufferedStream{Stream: str, r: r}, nil
}

// serverSetup runs the server half of the legacy SETUP on c: it reads
// CLIENT_SETUP from the client's first bidi stream and takes the first
// offered version that vs has (the client's preference, as the
// reference). For a moq-lite version it answers SERVER_SETUP and returns
// the version, the session stream and the SETUP path (raw QUIC clients).
// For another family's version it answers nothing and returns the
// stream with what was read from it to be replayed, for that session's
// own handshake.
func serverSetup(ctx context.Context, c session.Conn, vs, known []alpn.Version) (Negotiated, error) {
	ctx, cancel := context.WithTimeout(ctx, SetupTimeout)
	defer cancel()
	str, err := c.AcceptBidi(ctx)
	if err != nil {
		return Negotiated{}, fmt.Errorf("moq: legacy SETUP: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { str.SetReadDeadline(time.Now()) })
	defer stop()
	var seen bytes.Buffer
	tee := &switchWriter{w: &seen}
	r := bufio.NewReader(io.TeeReader(str, tee))
	var m wire.ClientSetup
	typ, err := varint.Read(r)
	if err == nil && typ != wire.StreamClientSetup {
		err = fmt.Errorf("%w: first stream of type %#x, want CLIENT_SETUP", session.ErrProtocol, typ)
	}
	var body []byte
	if err == nil {
		body, err = wire.ReadLegacyMessage(r)
	}
	if err == nil {
		err = ProtocolErr(m.Decode(body))
	}
	if err != nil {
		session.ResetStream(str, wire.CodeDecode)
		return Negotiated{}, fmt.Errorf("moq: legacy SETUP: %w", err)
	}
	var chosen alpn.Version
	for _, code := range m.Versions {
		if v, ok := alpn.ByCode(vs, code); ok && v.UnderLegacy() {
			chosen = v
			break
		}
	}
	if chosen.Code == 0 {
		session.ResetStream(str, CodeVersion)
		return Negotiated{}, fmt.Errorf("%w: the client offered %s in the legacy SETUP; this server speaks %s", ErrVersion, codeList(m.Versions, known), alpn.Names(vs))
	}
	if f := chosen.Family(); f != alpn.Lite {
		str.SetReadDeadline(time.Time{})
		replay := &replayStream{Stream: str, r: io.MultiReader(bytes.NewReader(seen.Bytes()), str)}
		return Negotiated{Stream: replay, Other: alpn.Choice{Family: f, Code: chosen.Code, Token: alpn.Legacy}}, nil
	}
	reply := wire.ServerSetup{Version: chosen.Code, Params: []wire.Param{
		wire.LegacyVarintParam(wire.LegacyParamMaxRequestID, 0),
		{ID: wire.LegacyParamImplementation, Value: []byte("moq-export")},
	}}
	if _, err := str.Write(reply.Append(varint.Append(nil, wire.StreamServerSetup))); err != nil {
		session.ResetStream(str, wire.CodeCancel)
		return Negotiated{}, fmt.Errorf("moq: legacy SETUP: %w", err)
	}
	var path string
	for _, p := range m.Params {
		if p.ID == wire.LegacyParamPath {
			path = string(p.Value)
		}
	}
	// The session stream goes on through r (what bufio read ahead stays
	// there); nothing more is kept for a replay.
	tee.w = io.Discard
	return Negotiated{Version: wire.ByCode(chosen.Code), Stream: &bufferedStream{Stream: str, r: r}, Path: path}, nil
}

// switchWriter writes to w, which the owner may replace between writes.
type switchWriter struct{ w io.Writer }

func (s *switchWriter) Write(p []byte) (int, error) { return s.w.Write(p) }

// replayStream reads r (bytes already read from the stream, then the
// stream) instead of the stream.
type replayStream struct {
	session.Stream
	r io.Reader
}

func (s *replayStream) Read(p []byte) (int, error) { return s.r.Read(p) }

// bufferedStream is a stream whose first bytes went through r.
type bufferedStream struct {
	session.Stream
	r *bufio.Reader
}

func (b *bufferedStream) Read(p []byte) (int, error) { return b.r.Read(p) }

func legacyOnly(vs []alpn.Version) []alpn.Version {
	var out []alpn.Version
	for _, v := range vs {
		if v.UnderLegacy() {
			out = append(out, v)
		}
	}
	return out
}

// codeList names codes, the versions a client offered, by the rows of
// known, else in hex.
func codeList(codes []uint64, known []alpn.Version) string {
	parts := make([]string, len(codes))
	for i, c := range codes {
		if v, ok := alpn.ByCode(known, c); ok {
			parts[i] = v.Name
		} else {
			parts[i] = fmt.Sprintf("%#x", c)
		}
	}
	if len(parts) == 0 {
		return "no version"
	}
	return strings.Join(parts, ", ")
}

// ServeSessionStream reads the peer's SESSION_INFO messages on the legacy
// session stream str of c (lite-01/02) until it ends; its end ends the
// connection, as in the reference.
func ServeSessionStream(ctx context.Context, c session.Conn, str session.Stream, log *slog.Logger) {
	stop := context.AfterFunc(ctx, func() { session.StopReading(str, wire.CodeCancel) })
	defer stop()
	r, ok := str.(*bufferedStream)
	if !ok {
		r = &bufferedStream{Stream: str, r: bufio.NewReader(str)}
	}
	for {
		var m wire.SessionInfo
		err := ReadMessage(r.r, &m)
		if err != nil {
			if ctx.Err() == nil && !c.Gone(err) {
				if err == io.EOF {
					log.Debug("moq: peer closed the session stream")
				} else {
					log.Debug("moq: session stream", "err", err)
				}
				c.Close(wire.CodeCancel, "session stream closed")
			}
			return
		}
		log.Debug("moq: peer SESSION_INFO", "bitrate", m.Bitrate)
	}
}

// Setup is what a SETUP says of its session (the core's Hello): the
// root and query a raw QUIC client asks for, and the role a client
// declares (wire.RoleBoth, RolePublisher, RoleSubscriber).
type Setup = session.Hello

// SendSetup sends our SETUP saying m on a SETUP stream (lite-03+).
func SendSetup(ctx context.Context, c session.Conn, m Setup, log *slog.Logger) {
	var w wire.Setup
	if m.HasPath {
		w.SetBytes(wire.ParamPath, []byte(m.Path))
	}
	if m.HasRole {
		w.SetVarint(wire.ParamRole, m.Role)
	}
	str, err := c.OpenUni(ctx)
	if err != nil {
		return
	}
	b := varint.Append(nil, wire.UniSetup)
	if _, err := str.Write(w.Append(b)); err != nil {
		log.Debug("moq: send SETUP", "err", err)
		str.CancelWrite(wire.CodeCancel)
		return
	}
	str.Close()
}

// setupOf is what the peer's SETUP m says.
func setupOf(m *wire.Setup) Setup {
	var s Setup
	if p, ok := m.Bytes(wire.ParamPath); ok {
		s.Path, s.HasPath = string(p), true
	}
	if role, ok, err := m.Varint(wire.ParamRole); ok && err == nil {
		s.Role, s.HasRole = role, true
	}
	return s
}
