package litesub

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/moq-export/moq-export/internal/moq/lite/litepub"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
)

// Link is moq-lite on one connection as the facade holds it: moq-lite's
// side of the seam (session.Proto). The subscriber's wire is Conn's; Link
// adds serving the connection (the peer's SETUP and GOAWAY, its requests
// to the publisher), announce streams and GOAWAY.
type Link struct {
	Conn
	cfg LinkConfig
	// goneAway: the peer's GOAWAY was read on the connection; a second
	// one is a violation.
	goneAway atomic.Bool
}

var _ session.Proto = (*Link)(nil)

// LinkConfig is what a Link serves with, besides the subscriber's Config.
type LinkConfig struct {
	// Pub serves the peer's requests to what the session publishes.
	Pub *litepub.Publisher
	// Setup is what our SETUP says (lite-03+): the root (and token) a
	// raw QUIC client asks for, the role a client declares.
	Setup Setup
	// SessionStream is the legacy SETUP stream that stays open on
	// lite-01/02 (nil otherwise).
	SessionStream session.Stream
	// Codes are the session close codes (the facade's registry with
	// Refusals).
	Codes *session.Codes
}

// NewLink is moq-lite on c, which negotiated v (nil: moq-lite-05, as a
// bare test transport), speaking as cfg and lc say.
func NewLink(cfg *Config, c session.Conn, v *wire.Version, lc LinkConfig) *Link {
	return &Link{Conn: NewConn(cfg, c, v), cfg: lc}
}

// Refusals are the moq-lite session close codes that end a dialled
// session: the old registry (6, 9, 15) and the renumbered one that newer
// relays send on lite-05 sessions too (0x2, 0x3, 0x15; see moq-lite-06's
// session codes). Stream codes never get here.
var Refusals = map[uint64]session.Refusal{
	6: session.RefusedAuth, 0x2: session.RefusedAuth,
	15: session.RefusedProtocol, 0x3: session.RefusedProtocol,
	9: session.RefusedVersion, 0x15: session.RefusedVersion,
}

// Serve serves the connection until it is gone: the peer's streams are
// read here (HandleUni, HandleBidi), its SETUP and GOAWAY go to h, and our
// SETUP (lite-03+) and the legacy session stream (lite-01/02) run beside
// them.
func (l *Link) Serve(h *session.ProtoHost) {
	c := l.C
	ctx := c.Context()
	logNegotiated(h.Log, l.V)
	peer := &Peer{
		Setup: h.Hello, Client: h.Client, Pub: l.cfg.Pub,
		GoAway: func(uri string) error {
			if l.goneAway.Swap(true) {
				return errors.New("second GOAWAY")
			}
			h.MoveAway(l, uri, 0)
			return nil
		},
	}
	var loops []func()
	if l.V.SetupStream {
		loops = append(loops, func() { SendSetup(ctx, c, l.cfg.Setup, h.Log) })
	}
	if str := l.cfg.SessionStream; str != nil {
		loops = append(loops, func() { ServeSessionStream(ctx, c, str, h.Log) })
	}
	session.ServeConn(h.Ctx, c, wire.CodeCancel, h.Order,
		func(str session.RecvStream, t session.OrderTicket) { l.HandleUni(str, t, peer) },
		func(str session.Stream) { l.HandleBidi(ctx, str, peer) }, loops...)
}

// logNegotiated says which version a connection speaks (v) and, at Info,
// what that version cannot carry.
func logNegotiated(log *slog.Logger, v *wire.Version) {
	if lacks := v.Lacks(); len(lacks) > 0 {
		log.Info("moq: negotiated an older protocol version", "version", v.Name, "lost", strings.Join(lacks, "; "))
		return
	}
	log.Debug("moq: negotiated", "version", v.Name)
}

// GoAway sends GOAWAY naming uri (lite-04+).
func (l *Link) GoAway(ctx context.Context, uri string) error { return l.SendGoAway(ctx, uri) }

// Close closes the connection with an application code and reason.
func (l *Link) Close(code uint64, reason string) { l.C.Close(code, reason) }

// Codes are the connection's close codes (LinkConfig.Codes).
func (l *Link) Codes() *session.Codes { return l.cfg.Codes }

// Learn: moq-lite learns nothing from a session closed early.
func (l *Link) Learn(*slog.Logger) bool { return false }
