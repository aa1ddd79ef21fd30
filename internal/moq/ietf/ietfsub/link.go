package ietfsub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/moq-export/moq-export/internal/moq/ietf/ietfpub"
	"github.com/moq-export/moq-export/internal/moq/session"
)

// Link is a moq-transport session on one connection as the facade holds
// it: moq-transport's side of the seam (session.Proto). The facade makes
// it when a connection negotiated a draft, runs its SETUP (Dial, Accept)
// and from then on reaches it only through the seam.
type Link struct {
	ss  *Session
	pub *ietfpub.Publisher
}

var _ session.Proto = (*Link)(nil)

// NewLink returns the moq-transport session of cfg on c; pub serves the
// peer's requests to what the session publishes. Dial or Accept starts
// it.
func NewLink(c session.Conn, cfg Config, pub *ietfpub.Publisher) *Link {
	return &Link{ss: New(c, cfg), pub: pub}
}

// Dial runs the client SETUP with p. A failed SETUP closes the connection
// and returns a *SetupError; redial says the failure taught the server's
// record a layout the next connection speaks (Server.LearnSetup), so one
// more dial is worth it at once.
func (l *Link) Dial(ctx context.Context, p SetupParams) (redial bool, err error) {
	ss, c := l.ss, l.ss.c
	if err = ss.ClientHandshake(ctx, p); err == nil {
		ss.log.Debug("moq: moq-transport session", "version", ss.v)
		return false, nil
	}
	if _, _, closed := c.CloseOf(err); !closed {
		// A read cut by the peer's close can fail first (a deadline,
		// over WebTransport): the close says why (Server.LearnSetup).
		select {
		case <-c.Context().Done():
		case <-time.After(200 * time.Millisecond):
		}
		if cause := c.Cause(); cause != nil {
			if _, _, ok := c.CloseOf(cause); ok {
				err = fmt.Errorf("%w: %w", err, cause)
			}
		}
	}
	c.Close(CodeProtocolViolation, "setup failed")
	err = ss.SetupFailed(err)
	code, remote, closed := c.CloseOf(err)
	return ss.server.LearnSetup(err, closed && remote && code == 0, ss.log), err
}

// Accept runs the server SETUP and returns what the client's SETUP says:
// its Path parameter (the root and query on raw QUIC) and its
// Authorization Token. A failed SETUP closes the connection.
func (l *Link) Accept(ctx context.Context) (path, token string, err error) {
	path, token, err = l.ss.ServerHandshake(ctx)
	if err != nil {
		l.ss.log.Debug("moq: moq-transport SETUP", "version", l.ss.v, "err", err)
		l.Close(CodeProtocolViolation, "setup failed")
	}
	return path, token, err
}

// Serve runs the connection until it is gone: the control loop (or the
// peer's setup stream, for GOAWAY), the peer's requests to the
// publisher, and the incoming data streams.
func (l *Link) Serve(h *session.ProtoHost) {
	ss := l.ss
	ctx := ss.c.Context()
	announce := ss.Serve(l.pub, func(uri string, grace time.Duration) { h.MoveAway(l, uri, grace) })
	control := func() {
		err := ss.ControlLoop()
		if ctx.Err() == nil {
			if errors.Is(err, session.ErrProtocol) {
				h.Log.Warn("moq: control stream", "err", err)
				l.Close(CodeProtocolViolation, "protocol violation")
			} else if errors.Is(err, session.ErrTimeout) {
				// A message begun and never finished: the session
				// cannot go on (its control is stuck), and a dialled
				// one redials.
				h.Log.Warn("moq: control stream", "err", err)
				l.Close(codeControlTimeout, "control message timeout")
			} else {
				h.Log.Debug("moq: control stream ended", "err", err)
				l.Close(CodeNoError, "")
			}
		}
	}
	session.ServeConn(h.Ctx, ss.c, CodeNoError, h.Order, ss.HandleUni, ss.HandleBidi, control, announce)
}

// Follow runs one announcement feed (Session.Follow). A feed no caller
// holds (one that broadcasts follow, as with -b) asks for nothing:
// servers that tie a session to one stream (MediaMTX) close the session
// on SUBSCRIBE_NAMESPACE, and SUBSCRIBE finds the broadcast without it; it
// follows the namespaces the peer publishes unasked.
func (l *Link) Follow(f session.Feed) error {
	return l.ss.Follow(f.Context(), f.Prefix(), f.Held(), f.Reconcile)
}

// GoAway sends GOAWAY naming uri.
func (l *Link) GoAway(_ context.Context, uri string) error { return l.ss.SendGoAway(uri) }

// Learn records what the server showed it does not support by closing
// the session right after a request of it (Server.Learn).
func (l *Link) Learn(log *slog.Logger) bool { return l.ss.server.Learn(l.ss, log) }

// Codes are moq-transport's (Codes).
func (l *Link) Codes() *session.Codes { return &Codes }

// RequestIDs are the request ids used and granted (Session.RequestIDs).
func (l *Link) RequestIDs() (next, limit uint64) { return l.ss.RequestIDs() }

func (l *Link) Close(code uint64, reason string) { l.ss.c.Close(code, reason) }
func (l *Link) Context() context.Context         { return l.ss.c.Context() }
func (l *Link) Cause() error                     { return l.ss.c.Cause() }
func (l *Link) Gone(err error) bool              { return l.ss.c.Gone(err) }
func (l *Link) Silence() time.Duration           { return l.ss.c.Silence() }

// Loss is why the connection is gone: its cause once known, else err.
func (l *Link) Loss(err error) error { return session.Loss(l.ss.c, err) }

// Routed: moq-transport subscriptions are routed by track alias.
func (l *Link) Routed() []*session.Sub { return l.ss.Routed() }

func (l *Link) NewSubscription(ctx context.Context, rt *session.Remote) session.SubscriptionWire {
	return l.ss.NewSubscription(ctx, l, rt)
}

func (l *Link) OpenFetch(ctx context.Context, rt *session.Remote, timescale uint64, r session.FetchRange, what string) (session.FetchReply, error) {
	return l.ss.OpenFetch(ctx, rt, timescale, r, what)
}

func (l *Link) FrameRanges() bool { return false }
func (l *Link) GroupRanges() bool { return true }
func (l *Link) Fetches() bool     { return true }

// SpanSubscribes: a SUBSCRIBE with an absolute range asks a span of past
// groups in every draft. Its SUBSCRIBE_OK names the publisher's largest
// group, not the first one the range delivers, so none is taken as the
// start; its end is the range's end group, PUBLISH_DONE's Stream Count
// (session.Remote.SpanEnded) or a group past the range. A server that
// closes the session on SUBSCRIBE parameters (MediaMTX) is asked none.
func (l *Link) SpanSubscribes() bool { return !l.ss.server.minimalParams.Load() }

// VersionName names the draft negotiated (the ALPN's, when the session
// speaks draft 18's messages on it).
func (l *Link) VersionName() string {
	if a := l.ss.ALPNDraft(); a != 0 {
		return a.String()
	}
	return l.ss.v.String()
}

// RetryReset: moq-transport's codes carry nothing the policy reads.
func (l *Link) RetryReset(error) session.Reset { return session.ResetUnknown }

// SessionEndingReset: moq-transport names no reset code for a closing
// session; its end arrives as the session's close.
func (l *Link) SessionEndingReset(error) bool { return false }

// Codes are moq-transport's session close codes as the facade reads them:
// the registry's names, the closes that end a dialled session.
var Codes = session.Codes{
	Name: func(code uint64) string {
		if n, ok := CloseName(code); ok {
			return n
		}
		return "unknown"
	},
	Refusals: map[uint64]session.Refusal{
		0x2: session.RefusedAuth, 0x3: session.RefusedProtocol, 0x15: session.RefusedVersion,
		0x8: session.RefusedPath, 0x9: session.RefusedPath,
	},
	Unauthorized: CodeUnauthorized,
}
