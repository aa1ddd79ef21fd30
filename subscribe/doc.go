// Package subscribe speaks moq-lite (the protocol of the moq-dev/moq
// project; versions 05, 04 and 03, and 02 and 01 through the legacy SETUP)
// over raw QUIC and WebTransport, and IETF moq-transport drafts 14-20 over
// raw QUIC, and moves what it receives into package model (and what
// package model holds onto the wire).
//
// It is the public facade of the wire side: Session, Dial, Listen and
// Server, Options, errors. It picks the protocol family a connection
// negotiated (the ALPN table's alpn.Select) and makes the family's
// session.Proto in one file, proto.go; from then on it reaches the
// connection only through that seam, which moq-lite (internal/moq/lite/litesub)
// and moq-transport (internal/moq/ietf/ietfsub) each implement. The
// protocol-neutral session logic (the subscribed tracks, retries, resume,
// backfill, reconnects, the publisher's serving) is the core's,
// internal/moq/session. The byte layouts of the
// messages live in internal/moq/lite/wire and internal/moq/ietf; what
// object payloads hold (the hang packagings legacy, loc and cmaf) is
// package internal/hang's alone, in both directions and for both protocol
// families: this package hands it objects and takes payloads from it, so
// each can be tested without a network.
// quic-go and webtransport-go carry the streams, behind
// internal/moq/transport (dialling, listening, URLs, TLS and pinning); moq-lite itself has no Go
// library other than a cgo binding (github.com/moq-dev/moq-go) over the Rust
// code, which this pure-Go module cannot use, hence the hand-written session.
//
// # Client
//
// Dial connects to a relay or publisher:
//
//	moql://host:port/path?jwt=TOKEN   raw QUIC; the path and query travel in
//	moqt://host:port/path?jwt=TOKEN   the SETUP Path parameter (lite-05, and
//	                                  the legacy SETUP of lite-01/02)
//	https://host:port/path?jwt=TOKEN  WebTransport (HTTP/3); the path and query
//	                                  travel in the CONNECT request
//	http://host:port/path?jwt=TOKEN   development relays: fetch
//	                                  http://host:port/certificate.sha256 over
//	                                  TCP, then WebTransport with that pin
//
// # Versions
//
// A client offers every version, newest first (Options.Versions restricts
// or reorders them): the ALPN list on raw QUIC, WT-Available-Protocols on
// WebTransport, each with "moql" last for the legacy SETUP exchange
// (CLIENT_SETUP offering lite-02 and lite-01). It speaks whichever the
// server picks; Session.Version says which. A server (Listen) prefers
// them in the same order on raw QUIC (ServerOptions.Versions), takes the
// first the client offers on WebTransport, and runs the legacy SETUP for
// "moql" or a WebTransport session without a protocol; a client with no
// common version is closed with code 9 and a reason naming ours. What a
// version cannot carry is logged at Info on every connection: lite-03/04
// have no SETUP (a raw QUIC client sends no path or token), no TRACK_INFO,
// no FETCH (no backfill of a live join's audio), no frame timestamps (the
// hang containers carry their own) and no SUBSCRIBE_START; lite-01/02
// also lack subscribe ranges. The differences themselves live in
// moq-lite's version table (internal/moq/lite/wire) and moq-transport's
// (internal/moq/ietf); the session asks their capabilities. Versions and
// Options.Versions list both families' versions, built from those two
// tables.
//
// The default port is 443. TLS uses the system roots unless Options says
// otherwise (RootCAs, TLSFingerprint, TLSInsecure). The JWT never appears in
// logs or errors: URLs are redacted.
//
// A dialled Session reconnects by itself with jittered exponential backoff
// when the connection drops. Subscriptions resume on the new connection.
// When the group sequence goes on (the same publisher session, on a relay
// that still holds the groups missed meanwhile), the missed groups are
// FETCHed and inserted in order before the live ones, and the groups the
// loss cut short are completed, so a short outage leaves no hole; the
// model track is held meanwhile (model.Track.Hold) so that an export waits
// for them. After a publisher restart, a peer that refuses FETCH is asked
// for the new session's groups before the live one by a second SUBSCRIBE
// of the track bounded to them (Group Start and End, moq-lite-05 and
// later; an absolute range over moq-transport, whose SUBSCRIBE_OK names the
// newest group rather than the first of the range, so its end is told by
// PUBLISH_DONE's Stream Count or a group past the range), beside the live
// one.
// Where such a peer's sequence goes on past the newest group held, the
// same kind of SUBSCRIBE asks that group and the ones after it: a group of
// that number starting at another time is a restarted publisher whose new
// numbers passed the old ones (a new timeline, as above); the same start
// is the same publisher, and those groups fill its gap, as FETCH would.
// Otherwise the gap reaches the muxer as one discontinuity: a
// restarted sequence (a new publisher session) gets
// model.Track.Discontinuity, groups the relay no longer serves are marked
// lost (model.Track.MarkLost), the log says how many, and
// Session.LostGroups counts them. Nothing delivered before is touched.
// Announcements resume too: the new snapshot is diffed against what the
// caller has already seen.
//
// # Finding a dead connection
//
// A relay or publisher that vanishes without closing (a crash, a dropped
// network) sends nothing more, so only silence can tell. The reference
// relay uses QUIC's idle timeout for that, 30 s with 5 s keep-alives; a
// recorder that waits that long loses everything the publisher sends
// meanwhile and more (the relay's cache of past groups is short). So every
// connection here sends a keep-alive PING after 1 s without traffic
// (Options.KeepAlive) and declares the peer dead after 3 s of silence
// (Options.IdleTimeout): a live peer answers each PING, so two of them can be
// lost before a quiet but live connection is taken for dead, and a media
// track is never quiet for that long anyway. QUIC uses the smaller of the
// two peers' idle timeouts, so ours applies whatever the relay's (a
// quic-go peer raises values below 5 s to 5 s for its own side). The first
// reconnect after such a loss is made at once, then the backoff applies
// (Options.Reconnect). Meanwhile the peer is probed every 0.5-1 s with a
// datagram any QUIC server answers statelessly (Version Negotiation, no
// handshake); its answer after a silence triggers the next dial at once,
// so a long outage costs the outage plus about a second, not the backoff's
// cap (a 7 s outage behind a 10-30 s backoff: 0.7-0.8 s to reconnect).
//
// Broadcast paths are relative to the URL path (the session root), as on
// the wire.
//
// # Receiving
//
// Session.Announced lists broadcasts under a prefix, with live updates.
// A remote broadcast follows its own announcements (its end closes it, a
// restart resubscribes it) on a feed the session already runs that covers
// its path, so a recorder of many broadcasts holds one announce stream;
// only a broadcast that no feed covers opens one for its own path.
// Session.Broadcast returns a model.Broadcast whose tracks are subscribed on
// demand: the first Track(name) call sends TRACK, reads TRACK_INFO, sends
// SUBSCRIBE and turns every group stream into a model group; a group stream
// that lands before SUBSCRIBE_OK (they travel on different QUIC streams)
// waits for it, at most Options.RequestTimeout, so that readers start at
// the group SUBSCRIBE_OK names; and the group streams of a subscription,
// each read by its own goroutine, make their model groups in the order
// the connection accepted them (an older group never after a newer one,
// which a reader that has not started would begin at). With Options.ReleaseRead (a recorder) a
// media track drops each frame's payload once every consumer it has read
// it, so what was written does not stay in memory while the broadcast
// pauses. Media frames are decoded according to the rendition's container in the broadcast's
// catalog (read automatically when needed): "legacy" and "loc" frames become
// model frames with the codec payload and the timestamp in microseconds;
// each "cmaf" frame (one or more moof+mdat, read with the catalog's init by
// package internal/format/cmaf) becomes one model frame per sample, with the
// sample's presentation time in microseconds and model.Frame.Sync from the
// bitstream (a bad fragment is logged and skipped with the delta frames
// after it; a cmaf rendition without a readable init ends its track with
// an error wrapping catalog.ErrBadInit). Other kinds are refused with
// ErrUnsupportedContainer. Catalog tracks
// (catalog.json, catalog.json.z, catalog) are delivered raw, their
// timestamps converted from the track timescale. A group reset becomes
// Group.Close(err), the end of a subscription Track.Close(nil), an "ended"
// announcement Broadcast.Close(nil). When the publisher ends a
// subscription, the group streams still on their way are awaited for at
// most 3 s; one still open then gets STOP_SENDING and its model group ends
// with ErrTruncated. A group stream stops, truncated likewise, when its
// subscription is cancelled.
//
// Every media track gets a model backfill handler (model.Track.Backfill):
// it FETCHes the groups before the oldest one the track holds, newest
// first, a few at a time, and inserts them as finished groups until one
// starts at or before the target time, so that a recorder joining live can
// start its audio at the video's first keyframe. It is bounded (256 groups,
// 5 s of media, 5 s of time, and the caller's context) and stops quietly at
// the first group the peer does not serve (a reset: relays keep past groups
// for a while only, and a peer may not serve FETCH at all).
//
// A broadcast's catalog is a track like any other: catalog.Watch follows
// it. ResolveBroadcast resolves a rendition's "broadcast" reference.
//
// # Publishing
//
// Session.Publish serves a model.Broadcast to the peer: the broadcast is
// announced on every announce stream the peer opens (each with its own
// bounded queue and writer, so a peer that does not read its stream blocks
// nothing; a write stuck for 10 s resets it with 3), TRACK gets TRACK_INFO
// with timescale 1000000 (microseconds), and SUBSCRIBE gets one uni stream
// per model group; FETCH gets the frames of one group the model track
// still holds, or a reset with 13. Tracks named like a catalog are sent
// raw; every other track in the packaging its rendition declares in the
// broadcast's catalog (see Session.Publish): cmaf as it is, loc, or the
// hang legacy container (varint microsecond timestamp before the codec
// payload). Over moq-transport the same broadcasts are offered with
// PUBLISH_NAMESPACE and served to SUBSCRIBE, FETCH and TRACK_STATUS.
//
// # Server
//
// Listen accepts sessions on one UDP port, raw QUIC (the versions' ALPNs)
// and WebTransport (ALPN "h3", the versions as WT-Protocol) side by side.
// With ServerOptions.FingerprintHTTP it also answers GET
// /certificate.sha256 over TCP with CORS headers (any origin, as the
// reference relay), so a page of another origin can use the dev bootstrap. An
// accepted Session is the same type as a dialled one (without reconnects):
// it can publish, and it can record what the peer announces.
// ServerOptions.Publish serves broadcasts on every accepted session from
// its first moment. SelfSignedCert makes a certificate and its pin for
// loopback use; ServeLoopback combines both for the CLI's built-in demo.
//
// With ServerOptions.AuthKey (a key of package token) every session must
// present a token as the reference relay expects it: ?jwt= in the
// WebTransport URL, or in the SETUP Path on raw QUIC (lite-05, the legacy
// SETUP of lite-01/02, and IETF moq-transport). A session without a valid
// token granting something at its path (and, when its lite-05 SETUP
// declares a role, that role) is closed with code 6 after the handshake,
// as the relay does, and logged with its address and the reason, never the
// token; an admitted one sees only the broadcasts its token lets it
// publish and is closed with code 6 when the token expires.
// ServerOptions.MaxSessions bounds the sessions open at once (one more is
// closed with CodeTooMany). The admission code is auth.go.
//
// # IETF moq-transport
//
// A client offers the moq-transport ALPNs after moq-lite's (lite first, as
// the reference does), as the TLS ALPN on raw QUIC and in
// WT-Available-Protocols on WebTransport, and speaks whichever the server
// picks: draft 14 under "moql" (the legacy CLIENT_SETUP version list, the
// only way @moq/net 0.3.4 reaches draft 14; also a WebTransport session
// that negotiated no protocol) or "moq-00" (the reference relay,
// Cloudflare's), drafts 15 to 20 under "moqt-15" ... "moqt-20". Listen
// accepts all of them on both transports (on WebTransport the client's
// first protocol we speak wins, and the session root is the CONNECT path;
// there is no SETUP Path or Authority). Drafts 14-16 multiplex their requests on one
// control stream; drafts 17+ give every request its own stream, put SETUP
// on a unidirectional stream and use leading-ones varints. The drafts in
// between cost little beyond 14 and 20 (their differences are a few
// fields each, all in the codec package), so all of 14-20 are spoken and
// each is checked against @moq/net in both roles (package interop). The
// wire codecs per draft live in internal/moq/ietf; the session and
// its subscriptions in internal/moq/ietf/ietfsub. Objects become model groups and frames exactly as
// moq-lite groups do:
//
//   - SETUP carries the URL path and query (Path), host (Authority), the
//     URL's jwt (Authorization Token) and MAX_REQUEST_ID; request ids are
//     flow controlled both ways (MAX_REQUEST_ID, REQUESTS_BLOCKED).
//   - Announced sends SUBSCRIBE_NAMESPACE for its prefix and reports the
//     namespaces the peer publishes under it (PUBLISH_NAMESPACE, whether
//     asked or not, and from draft 16 the NAMESPACE entries on the
//     request's stream; PUBLISH_NAMESPACE_DONE, NAMESPACE_DONE or the end
//     of the PUBLISH_NAMESPACE stream ends a broadcast).
//   - A track is a SUBSCRIBE (filter: the largest object, the current
//     group from draft 20) answered by SUBSCRIBE_OK or an error
//     (ErrRefused); each subgroup stream is a model group, each object a
//     frame (timestamp from the hang container, or for catalog tracks
//     from the Timestamp extension); End of Group and End of Track
//     objects end the group; a group joined past its first object is
//     skipped. PUBLISH_DONE ends the track after the streams in flight
//     (as SUBSCRIBE_END does for moq-lite).
//   - Backfills are standalone FETCHes (FETCH_OK or FETCH_ERROR, then a
//     fetch stream), bounded as for moq-lite, and so is the gap fill after
//     a reconnect (groups cut by the loss completed, missed ones fetched,
//     or a new timeline when the publisher restarted, fetched from its
//     oldest group still held: what a publisher back at once sent before
//     the loss was noticed). A peer that serves no FETCH ends a backfill
//     quietly; its gap is asked by a SUBSCRIBE of an absolute range
//     (NOT_SUPPORTED tells such a peer from one that no longer holds the
//     groups: DOES_NOT_EXIST, INVALID_RANGE, draft 14's NO_OBJECTS). @moq/net 0.3.4 serves FETCH from its retained window
//     (5 s by default) as a publisher; its consuming side rejects it over a
//     transport without FETCH.
//   - GOAWAY stops new requests; a moment later (at most the GOAWAY's
//     timeout) the session moves to its New Session URI (resolved against
//     the current URL; the current jwt goes along only to the same host
//     and port), or back to the same URL without one, and its
//     subscriptions resume there.
//
// Publish works over moq-transport too: every published broadcast is
// offered with PUBLISH_NAMESPACE (SUBSCRIBE_NAMESPACE is answered OK),
// SUBSCRIBE gets SUBSCRIBE_OK (alias = request id, microsecond timescale)
// and a subgroup stream per group from where its filter starts (Largest
// Object: the newest group's start before draft 20, as the reference
// relays serve it, the next object in draft 20; Next Group, relative
// starts, Absolute Start and Range as the drafts define them, a range
// ending with PUBLISH_DONE SUBSCRIPTION_ENDED), timestamps as the
// Timestamp extension, payloads as on moq-lite, PUBLISH_DONE with the
// stream count at the end. FETCH serves the held objects of a range
// (standalone, or joining a subscription), TRACK_STATUS is answered as the
// SUBSCRIBE_OK it would get, and PUBLISH is refused NOT_SUPPORTED, as the
// reference refuses it.
//
// # Refusals and restarts
//
// A TRACK refused as unroutable (30: the relay has not heard of the
// broadcast) is retried when the broadcast is announced; other first-time
// refusals end the track with ErrRefused. A track that was live retries
// refusals after a reconnect for a bounded window. A publisher that never
// answers TRACK (as @moq/net does for unknown tracks) is given up after
// Options.RequestTimeout, with ErrTimeout, once its connection proved
// alive: a request that times out is not taken for an answer until the
// connection outlived twice the time it takes to find a silent peer
// (Options.KeepAlive and IdleTimeout); a connection lost meanwhile (a
// blackhole) takes the request along, and the next connection makes it
// again. The same holds for the FETCHes of a gap fill: one lost with its
// connection goes on at the next connection.
package subscribe
