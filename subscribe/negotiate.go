package subscribe

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/moq-export/moq-export/internal/moq/lite/litesub"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/moq/transport/alpn"
	"github.com/moq-export/moq-export/internal/varint"
)

// Version negotiation, both roles. What is offered and preferred comes from
// the version table (wire.Versions, or Options.Versions): the ALPN on raw
// QUIC, WT-Available-Protocols / WT-Protocol on WebTransport, and the
// legacy bidi SETUP (CLIENT_SETUP / SERVER_SETUP) when the ALPN is "moql"
// or a WebTransport session negotiated no protocol. Each connection
// carries the version it negotiated (conn.Version); session code asks that
// version's capabilities.

// Versions returns the names of every protocol version the package speaks,
// most preferred first (the default of Options.Versions and
// ServerOptions.Versions).
func Versions() []string {
	out := make([]string, len(wire.Versions))
	for i, v := range wire.Versions {
		out[i] = v.Name
	}
	return out
}

// ErrVersion means the peer offered or chose no version this package
// speaks (or none of those Options.Versions allows).
var ErrVersion = errors.New("moq: no common protocol version")

// CodeVersion is the moq-lite error code for a version mismatch.
const CodeVersion = 9

// versionList resolves a Versions option: nil means every version.
func versionList(names []string) ([]*wire.Version, error) {
	if len(names) == 0 {
		return wire.Versions, nil
	}
	vs, err := wire.ParseVersions(strings.Join(names, ","))
	if err != nil {
		return nil, fmt.Errorf("moq: %w", err)
	}
	return vs, nil
}

func liteVersions(vs []*wire.Version) []*wire.Version {
	var out []*wire.Version
	for _, v := range vs {
		if v.Family == wire.FamilyLite {
			out = append(out, v)
		}
	}
	return out
}

// selectALPN maps a negotiated ALPN or WebTransport protocol to a version
// of vs. legacy is true when the version is still to be chosen by the
// legacy SETUP exchange.
func selectALPN(proto string, vs []*wire.Version) (v *wire.Version, legacy bool, err error) {
	if proto == "" || proto == alpn.Legacy {
		if len(wire.LegacyCodes(vs)) == 0 {
			return nil, false, fmt.Errorf("%w: the peer chose none of %s (it answered %s, which means the legacy SETUP exchange)", ErrVersion, wire.Names(vs), orNone(proto))
		}
		return nil, true, nil
	}
	if v := wire.ByALPN(proto); v != nil && slices.Contains(vs, v) {
		return v, false, nil
	}
	return nil, false, fmt.Errorf("%w: %q negotiated; this session speaks %s", ErrVersion, proto, wire.Names(vs))
}

func orNone(proto string) string {
	if proto == "" {
		return "no protocol"
	}
	return fmt.Sprintf("%q", proto)
}

// Version of a moq-transport connection: its draft, as the version table
// names it when it is there.
func (ic *ietfConn) Version() *wire.Version {
	if a := ic.ss.ALPNDraft(); a != 0 {
		// The draft negotiated, spoken in draft 18's messages (MediaMTX).
		return wire.ByCode(uint64(a))
	}
	if v := wire.ByCode(uint64(ic.v)); v != nil {
		return v
	}
	return &wire.Version{Name: ic.v.String(), Code: uint64(ic.v), Family: wire.FamilyIETF}
}

// legacySetupTimeout bounds the legacy SETUP exchange.
const legacySetupTimeout = 10 * time.Second

// legacyClientSetup runs the client half of the legacy SETUP on c: it
// offers the legacy versions of vs (and the SETUP path on raw QUIC) and
// returns the version the server chose and the session stream, which stays
// open for lite-01/02.
func legacyClientSetup(ctx context.Context, c conn, vs []*wire.Version, setupPath string) (*wire.Version, bidiStream, error) {
	ctx, cancel := context.WithTimeout(ctx, legacySetupTimeout)
	defer cancel()
	str, err := c.OpenBidi(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("moq: legacy SETUP: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { str.SetReadDeadline(time.Now()) })
	defer stop()
	m := wire.ClientSetup{Versions: wire.LegacyCodes(vs), Params: []wire.Param{
		wire.LegacyVarintParam(wire.LegacyParamMaxRequestID, 0),
		{ID: wire.LegacyParamImplementation, Value: []byte("moq-export")},
	}}
	if setupPath != "" {
		m.Params = append(m.Params, wire.Param{ID: wire.LegacyParamPath, Value: []byte(setupPath)})
	}
	if _, err := str.Write(m.Append(varint.Append(nil, wire.StreamClientSetup))); err != nil {
		resetStream(str, CodeCancel)
		return nil, nil, fmt.Errorf("moq: legacy SETUP: %w", err)
	}
	r := bufio.NewReader(str)
	var reply wire.ServerSetup
	typ, err := varint.Read(r)
	if err == nil && typ != wire.StreamServerSetup {
		err = fmt.Errorf("%w: legacy SETUP reply of type %#x", ErrProtocol, typ)
	}
	var body []byte
	if err == nil {
		body, err = wire.ReadLegacyMessage(r)
	}
	if err == nil {
		err = protocolErr(reply.Decode(body))
	}
	if err != nil {
		resetStream(str, CodeCancel)
		return nil, nil, fmt.Errorf("moq: legacy SETUP: %w", err)
	}
	v := wire.ByCode(reply.Version)
	if v == nil || !slices.Contains(vs, v) || !v.LegacySetup {
		resetStream(str, CodeVersion)
		return nil, nil, fmt.Errorf("%w: the server chose version %#x in the legacy SETUP; offered %s", ErrVersion, reply.Version, wire.Names(legacyOnly(vs)))
	}
	return v, &bufferedStream{bidiStream: str, r: r}, nil
}

// legacyServerSetup runs the server half of the legacy SETUP on c: it
// reads CLIENT_SETUP from the client's first bidi stream and takes the
// first offered version that vs has (the client's preference, as the
// reference). For a moq-lite version it answers SERVER_SETUP and returns
// the version, the session stream and the SETUP path (raw QUIC clients).
// For a moq-transport version it answers nothing and returns the stream
// with what was read from it to be replayed, for that session's own
// handshake.
func legacyServerSetup(ctx context.Context, c conn, vs []*wire.Version) (*wire.Version, bidiStream, string, error) {
	ctx, cancel := context.WithTimeout(ctx, legacySetupTimeout)
	defer cancel()
	str, err := c.AcceptBidi(ctx)
	if err != nil {
		return nil, nil, "", fmt.Errorf("moq: legacy SETUP: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { str.SetReadDeadline(time.Now()) })
	defer stop()
	var seen bytes.Buffer
	tee := &switchWriter{w: &seen}
	r := bufio.NewReader(io.TeeReader(str, tee))
	var m wire.ClientSetup
	typ, err := varint.Read(r)
	if err == nil && typ != wire.StreamClientSetup {
		err = fmt.Errorf("%w: first stream of type %#x, want CLIENT_SETUP", ErrProtocol, typ)
	}
	var body []byte
	if err == nil {
		body, err = wire.ReadLegacyMessage(r)
	}
	if err == nil {
		err = protocolErr(m.Decode(body))
	}
	if err != nil {
		resetStream(str, CodeDecode)
		return nil, nil, "", fmt.Errorf("moq: legacy SETUP: %w", err)
	}
	var chosen *wire.Version
	for _, code := range m.Versions {
		if v := wire.ByCode(code); v != nil && v.LegacySetup && slices.Contains(vs, v) {
			chosen = v
			break
		}
	}
	if chosen == nil {
		resetStream(str, CodeVersion)
		return nil, nil, "", fmt.Errorf("%w: the client offered %s in the legacy SETUP; this server speaks %s", ErrVersion, codeList(m.Versions), wire.Names(vs))
	}
	if chosen.Family != wire.FamilyLite {
		str.SetReadDeadline(time.Time{})
		return chosen, &replayStream{bidiStream: str, r: io.MultiReader(bytes.NewReader(seen.Bytes()), str)}, "", nil
	}
	reply := wire.ServerSetup{Version: chosen.Code, Params: []wire.Param{
		wire.LegacyVarintParam(wire.LegacyParamMaxRequestID, 0),
		{ID: wire.LegacyParamImplementation, Value: []byte("moq-export")},
	}}
	if _, err := str.Write(reply.Append(varint.Append(nil, wire.StreamServerSetup))); err != nil {
		resetStream(str, CodeCancel)
		return nil, nil, "", fmt.Errorf("moq: legacy SETUP: %w", err)
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
	return chosen, &bufferedStream{bidiStream: str, r: r}, path, nil
}

// switchWriter writes to w, which the owner may replace between writes.
type switchWriter struct{ w io.Writer }

func (s *switchWriter) Write(p []byte) (int, error) { return s.w.Write(p) }

// replayStream reads r (bytes already read from the stream, then the
// stream) instead of the stream.
type replayStream struct {
	bidiStream
	r io.Reader
}

func (s *replayStream) Read(p []byte) (int, error) { return s.r.Read(p) }

func legacyOnly(vs []*wire.Version) []*wire.Version {
	var out []*wire.Version
	for _, v := range vs {
		if v.LegacySetup {
			out = append(out, v)
		}
	}
	return out
}

func codeList(codes []uint64) string {
	parts := make([]string, len(codes))
	for i, c := range codes {
		if v := wire.ByCode(c); v != nil {
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

// bufferedStream is a stream whose first bytes went through r.
type bufferedStream struct {
	bidiStream
	r *bufio.Reader
}

func (b *bufferedStream) Read(p []byte) (int, error) { return b.r.Read(p) }

// connVersion returns the version c negotiated (moq-lite-05 for a
// connection that did not say, such as a test's bare transport).
func connVersion(c conn) *wire.Version {
	if v := c.Version(); v != nil {
		return v
	}
	return wire.Lite05
}

// serveSessionStream reads the peer's SESSION_INFO messages on a legacy
// session stream until it ends; its end ends the connection, as in the
// reference.
func (s *Session) serveSessionStream(ctx context.Context, c conn, str bidiStream) {
	stop := context.AfterFunc(ctx, func() { session.StopReading(str, CodeCancel) })
	defer stop()
	r, ok := str.(*bufferedStream)
	if !ok {
		r = &bufferedStream{bidiStream: str, r: bufio.NewReader(str)}
	}
	for {
		var m wire.SessionInfo
		err := litesub.ReadMessage(r.r, &m)
		if err != nil {
			if ctx.Err() == nil && !connGone(c, err) {
				if err == io.EOF {
					s.log.Debug("moq: peer closed the session stream")
				} else {
					s.log.Debug("moq: session stream", "err", err)
				}
				c.Close(CodeCancel, "session stream closed")
			}
			return
		}
		s.log.Debug("moq: peer SESSION_INFO", "bitrate", m.Bitrate)
	}
}

// logNegotiated says which version a connection speaks and, at Info, what
// that version cannot carry.
func (s *Session) logNegotiated(c conn) {
	v := connVersion(c)
	if lacks := v.Lacks(); len(lacks) > 0 {
		s.log.Info("moq: negotiated an older protocol version", "version", v.Name, "lost", strings.Join(lacks, "; "))
		return
	}
	s.log.Debug("moq: negotiated", "version", v.Name)
}

// Version returns the protocol version of the current connection
// ("moq-lite-05"), or "" while there is none.
func (s *Session) Version() string {
	if v := s.version.Load(); v != nil {
		return v.Name
	}
	return ""
}
