package subscribe

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"time"

	"github.com/moq-export/moq-export/internal/moq/ietf/ietfpub"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/token"
)

// Role is what a client declares in its SETUP: a relay opens an announce
// stream to a client only when it may publish, and rejects a role its token
// does not allow.
type Role uint8

// Roles. The zero value is RoleSubscriber.
const (
	RoleSubscriber Role = iota
	RolePublisher
	RoleBoth
)

// Backoff configures reconnects. The first attempt after the loss of a
// connection that lasted at least Options.IdleTimeout, or was lost to it,
// is made at once; then the delay
// before attempt n is a random value in [d/2, d] with d = min(Min*2^n, Max).
// A peer that was silent and answers the session's probes again cuts the
// delay short (see the package doc): the cap paces dials to a peer that
// answers but fails them, not the noticing of a peer's return.
type Backoff struct {
	// Min is the first delay (default 250ms).
	Min time.Duration
	// Max caps the delay (default 10s).
	Max time.Duration
	// GiveUp ends the session when no connection succeeded for this long
	// (0: never give up).
	GiveUp time.Duration
	// Disabled turns reconnects off: the session ends with its first
	// connection.
	Disabled bool
}

// Options configure Dial. The zero value is usable.
type Options struct {
	// TLSFingerprint pins the server certificate: the hex SHA-256 of its DER
	// leaf (colons and case are ignored). Chain, name and expiry are not
	// checked when it is set.
	TLSFingerprint string
	// TLSInsecure skips certificate verification entirely.
	TLSInsecure bool
	// RootCAs replaces the system roots.
	RootCAs *x509.CertPool
	// TLSConfig, when set, is cloned and used as the base TLS
	// configuration (NextProtos and verification fields are overwritten
	// as the options above say).
	TLSConfig *tls.Config

	// Versions restricts and orders the protocol versions offered (names
	// as Versions returns them, or short forms such as "lite-04"); nil
	// offers every version, newest first. The session speaks whichever
	// the server picks; Session.Version says which.
	Versions []string

	// Role is declared in SETUP (default RoleSubscriber). Set RoleBoth or
	// RolePublisher before publishing through a relay.
	Role Role

	// Logger receives the session's diagnostics (default: none; a library
	// stays silent unless given a logger).
	Logger *slog.Logger

	// Reconnect configures reconnects after a dropped connection.
	Reconnect Backoff

	// KeepAlive is how often QUIC sends a PING while nothing else is sent
	// (default 1s), and IdleTimeout how long a connection may hear nothing
	// from its peer before it is declared dead (default 3s). Together they
	// find a peer that vanished without closing (a crashed relay, a
	// dropped network) within IdleTimeout; the first reconnect then
	// follows at once. See the package doc for why these values. A dial
	// whose CONNECT or SETUP the idle timeout cut right after the
	// handshake (a round trip longer than IdleTimeout, before QUIC had
	// an RTT sample to stretch it by) is made once more with three times
	// that handshake's duration, at most 10s (docs/reliability.md).
	KeepAlive   time.Duration
	IdleTimeout time.Duration

	// RequestTimeout bounds how long a TRACK or SUBSCRIBE request (and a
	// FETCH, and the wait for the catalog) may stay unanswered (default
	// 10s): @moq/net never answers a request for an unknown track. A
	// request that times out ends its track with ErrTimeout only once its
	// connection proved alive; one that went with a dead connection is
	// made again on the next one.
	RequestTimeout time.Duration

	// MaxLatency is sent in SUBSCRIBE (default 0: only the newest group
	// matters to the relay's scheduler; the model does its own skipping).
	// On moq-lite-06 it is the Max Age of a live join: the publisher starts
	// at the oldest group it does not expire, handing back the groups of
	// up to that age that a join at the newest group would lose (a
	// resumed subscription asks none: its gap is fetched).
	MaxLatency time.Duration

	// tokenParamOnly (tests): a moq-transport client sends its token in
	// the SETUP AUTHORIZATION TOKEN parameter only, not in the SETUP Path.
	tokenParamOnly bool

	// ReleaseRead makes every remote media track drop a frame's payload
	// once each consumer it has then read it (model.Track.SetReleaseRead),
	// for a recorder whose export is the tracks' only reader: what it
	// wrote does not stay in memory for as long as the track keeps the
	// group, which a paused broadcast leaves open. A consumer that joins a
	// track later starts at its next keyframe. Catalog tracks keep their
	// frames (their readers come one after another).
	ReleaseRead bool

	// Objects delivers every track's objects as they arrived, for an
	// archive that keeps them verbatim: a frame's Payload is the object
	// payload (no container unpacked; a CMAF fragment stays one frame),
	// its Timestamp the object's media time in microseconds (the one the
	// legacy or loc container carries, the first sample's for cmaf, the
	// wire timestamp for other tracks). Unpacker turns such frames into
	// what a subscription without Objects delivers.
	Objects bool

	// container overrides the container of a track when the broadcast has
	// no usable catalog: it returns "legacy", "loc", "raw" (no container,
	// wire timestamps) or "" (decide from the catalog). Only tests set it,
	// to read the tracks of a broadcast they publish without a catalog.
	container func(broadcast, track string) string

	// alpns, when set, replaces the raw QUIC ALPN list and the
	// WebTransport protocols offered (tests pin one version with it; an
	// empty non-nil list offers no WebTransport protocol).
	alpns []string
	// strict: see ServerOptions.Strict (accepted sessions only).
	strict *ietfpub.StrictPeer
	// noFetch (tests): the publisher refuses every FETCH, as a peer that
	// serves none does (the reference's test publisher).
	noFetch bool

	// backoffFrom (tests): a failed redial counts as at least this many
	// failures in a row, so that a short outage backs off as a long one
	// would have.
	backoffFrom int

	// resumeGrace is the part of a live track's resume window that does
	// not depend on the backoff (default 10s; tests shorten it).
	resumeGrace time.Duration
	// drainGrace bounds the wait for group streams after the publisher
	// ended a subscription (default 3s; tests shorten it).
	drainGrace time.Duration
	// announceTimeout bounds one write on an announce stream we serve
	// (default 10s; tests shorten it).
	announceTimeout time.Duration
}

// ServerOptions configure Listen.
type ServerOptions struct {
	// Certificates are served to clients (at least one is required).
	// SelfSignedCert makes one for loopback use.
	Certificates []tls.Certificate
	// Versions restricts and orders the protocol versions accepted, as
	// Options.Versions (nil: every version, newest preferred).
	Versions []string
	// DisableWebTransport serves raw QUIC only.
	DisableWebTransport bool
	// FingerprintHTTP also serves GET /certificate.sha256 over TCP on the
	// same port, like a development relay, so http:// URLs work.
	FingerprintHTTP bool
	// Logger receives diagnostics (default: none).
	Logger *slog.Logger
	// Publish lists broadcasts published on every accepted session from
	// its first moment (before Accept returns it).
	Publish []*model.Broadcast
	// RequestTimeout and MaxLatency apply to accepted sessions as in
	// Options.
	RequestTimeout time.Duration
	MaxLatency     time.Duration
	// ReleaseRead applies to accepted sessions as in Options.
	ReleaseRead bool
	// Objects applies to accepted sessions as in Options (a --listen
	// service that archives).
	Objects bool
	// KeepAlive and IdleTimeout find a publisher that vanished, as in
	// Options (defaults 1s and 3s).
	KeepAlive   time.Duration
	IdleTimeout time.Duration
	// AuthKey, when set, admits only sessions whose token (package
	// token: ?jwt= in the WebTransport URL or in the SETUP Path of raw
	// QUIC, lite-05, lite-01/02 and IETF) verifies with it and grants
	// something at the session path; the others are closed with
	// CodeUnauthorized (6), as the reference relay does, and logged
	// without the token. An admitted session sees only the broadcasts its
	// token lets it publish (Announced, Broadcast), is served only those
	// of Publish it may subscribe to, and is closed with code 6 when its
	// token expires.
	AuthKey *token.Key
	// MaxSessions bounds the sessions open at once (0: no bound); one
	// more is closed with CodeTooMany.
	MaxSessions int
	// OnRefused, when set, is called for each session the server refuses,
	// with the reason: RefusedVersion (no common protocol version),
	// RefusedUnauthorized (the token) or RefusedTooMany (MaxSessions). It
	// must not block (a service counts them in its metrics).
	OnRefused func(reason string)

	// Strict makes accepted moq-transport sessions behave as MediaMTX
	// does with requests it does not support: nothing is announced, and
	// the session is closed (code 0, no reason) on SUBSCRIBE_NAMESPACE, on
	// FETCH, on a SUBSCRIBE carrying any parameter but the authorization
	// token, and on a SUBSCRIBE of a track the broadcast does not have. For testing subscribers against
	// servers that support less than this package; each such close is
	// logged at debug level ("strict: closing the session").
	Strict bool
	// GroupPerFrame, with Strict, sends each frame as its own group (one
	// object, group ids counting from 0 per subscription), as MediaMTX
	// does: the groups are not GOPs, and a subscriber must take the key
	// flags from the bitstream.
	GroupPerFrame bool
	// NoFetch makes the server refuse every FETCH of what it publishes
	// (moq-transport: NOT_SUPPORTED; moq-lite: a reset), as the reference
	// publisher does: for testing that a subscriber fills a lost
	// connection's gap without it (a span subscription).
	NoFetch bool
	// strict counts the closes of Strict (tests).
	strict *ietfpub.StrictPeer
	// noFetch (tests): see Options.noFetch.
	noFetch bool

	// verifyAt, when set, is the time tokens are verified at (tests);
	// their expiry timers run on the real clock.
	verifyAt func() time.Time
}

// Liveness defaults: a vanished peer is found after 3 s of silence, and 1 s
// keep-alives keep a quiet but live connection from reaching that (two can
// be lost before it does).
const (
	defaultKeepAlive   = time.Second
	defaultIdleTimeout = 3 * time.Second
)

// liveness returns the keep-alive period and idle timeout with their
// defaults filled in; the keep-alive stays below half the idle timeout.
func liveness(keepAlive, idle time.Duration) (time.Duration, time.Duration) {
	if idle <= 0 {
		idle = defaultIdleTimeout
	}
	if keepAlive <= 0 {
		keepAlive = defaultKeepAlive
	}
	return min(keepAlive, idle/2), idle
}

func (o *Options) fill() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Reconnect.Min <= 0 {
		o.Reconnect.Min = 250 * time.Millisecond
	}
	if o.Reconnect.Max <= 0 {
		o.Reconnect.Max = 10 * time.Second
	}
	if o.Reconnect.Max < o.Reconnect.Min {
		o.Reconnect.Max = o.Reconnect.Min
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 10 * time.Second
	}
	o.KeepAlive, o.IdleTimeout = liveness(o.KeepAlive, o.IdleTimeout)
	if o.resumeGrace <= 0 {
		o.resumeGrace = 10 * time.Second
	}
	if o.drainGrace <= 0 {
		o.drainGrace = 3 * time.Second
	}
	if o.announceTimeout <= 0 {
		o.announceTimeout = 10 * time.Second
	}
}
