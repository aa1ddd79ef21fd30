// Package transport is the one place that speaks QUIC: it owns dialling and
// listening on raw QUIC (quic-go) and WebTransport (webtransport-go), the
// batch-reading UDP socket (udpconn_linux.go), parsing and redacting dial
// URLs, the client TLS configuration with certificate pinning, the
// fingerprint bootstrap of development relays, generated certificates, and
// the stateless reachability probe a redialling session sends (probe.go).
// Only this package imports quic-go and webtransport-go
// (internal/layering checks it).
//
// The session code above it sees a Conn that opens and accepts bidi and
// uni streams and closes with a code and a reason, and Streams that read,
// write, reset and stop; both transports look the same through them.
// Which protocol version a connection speaks is not this package's
// business: it offers and reports the negotiated ALPN / WebTransport
// protocol strings (Conn.Protocol) that the caller's version table names.
//
// Errors of the peer (a stream reset, a session closed with a code) are
// values of the caller's own types: every function is instantiated with an
// Errors type that builds them, so that no error crosses the package line
// in quic-go's types and a stream needs no wrapper of its own (a raw QUIC
// stream stays one pointer in an interface, allocation free).
package transport
