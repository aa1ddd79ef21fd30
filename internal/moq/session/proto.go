package session

import (
	"context"
	"log/slog"
	"time"
)

// Proto is one connection as the protocol family that negotiated it
// speaks it: the seam through which the facade (package subscribe)
// reaches a family. moq-lite (litesub.Link) and IETF moq-transport
// (ietfsub.Link) each implement it. The facade picks the family from what
// the connection negotiated and makes its Proto; from then on nothing
// asks which family a Proto is, so a new family is a new implementation,
// not a new branch at each call site.
type Proto interface {
	// Family is the subscriber's half: subscribing a track, FETCH,
	// what a reset means to the retry policy.
	Family
	// Close closes the connection with an application code and reason.
	Close(code uint64, reason string)
	// Routed are the subscriptions whose group streams the connection
	// routes now (by the family's key).
	Routed() []*Sub
	// Serve runs the connection's streams until it is gone: the peer's
	// requests go to the family's publisher, what the peer's SETUP and
	// GOAWAY say to h.
	Serve(h *ProtoHost)
	// Follow runs one announce stream for f and returns when f ends or
	// the connection is gone.
	Follow(f Feed) error
	// GoAway asks the peer to move to uri ("" for the same server).
	GoAway(ctx context.Context, uri string) error
	// Codes are the family's session close codes.
	Codes() *Codes
	// Learn is told that the peer closed the session soon after it
	// began: it records what a request of the connection showed the
	// server does not support, and reports whether the next connection
	// will ask differently (false for a family that learns nothing).
	Learn(log *slog.Logger) bool
}

// ProtoHost is what a session hands the Proto it serves.
type ProtoHost struct {
	// Ctx is the session's: done when the session ends.
	Ctx context.Context
	Log *slog.Logger
	// Order is the group-stream order of the connection (StreamOrder).
	Order *StreamOrder
	// Client says this end dialled the connection.
	Client bool
	// Hello takes what the peer's SETUP says, when the family's SETUP
	// carries it.
	Hello func(Hello)
	// MoveAway takes the peer's GOAWAY on p naming uri ("" for the same
	// server); p closes once its successor is up and grace has passed.
	MoveAway func(p Proto, uri string, grace time.Duration)
}

// Hello is what a peer's SETUP says of its session: the root (and query)
// a raw QUIC client requested and the role it declared.
type Hello struct {
	// Path is the root and query, when HasPath.
	Path    string
	HasPath bool
	// Role is the role declared (the wire's role values), when HasRole.
	Role    uint64
	HasRole bool
}

// Feed is one announcement feed as a family's announce stream fills it.
type Feed interface {
	// Prefix is the broadcast path prefix the feed covers.
	Prefix() string
	// Context ends with the feed.
	Context() context.Context
	// Held says a caller holds the feed; a feed that only broadcasts
	// follow asks for nothing where asking can cost the session
	// (moq-transport's SUBSCRIBE_NAMESPACE).
	Held() bool
	// Reconcile reports the set of paths the peer has active now (made up
	// when madeUp: the first report on a new connection).
	Reconcile(active []string, madeUp bool)
	// Push reports one path going active or ending.
	Push(path string, active bool)
}

// Refusal is a kind of session close that another attempt cannot change.
type Refusal uint8

const (
	// NotRefused is no refusal.
	NotRefused Refusal = iota
	// RefusedAuth: the peer refused the token.
	RefusedAuth
	// RefusedProtocol: the peer saw a protocol violation.
	RefusedProtocol
	// RefusedVersion: no version in common.
	RefusedVersion
	// RefusedPath: the peer refuses the session's path.
	RefusedPath
)

// Codes are a family's session close codes as the session reads them.
type Codes struct {
	// Name is the meaning of a close code.
	Name func(code uint64) string
	// Refusals are the close codes that end a dialled session.
	Refusals map[uint64]Refusal
	// Unauthorized is the close code of a refused token.
	Unauthorized uint64
}
