// Package ietf encodes and decodes the IETF moq-transport messages
// (draft-ietf-moq-transport) that a recorder and a small publisher need,
// byte for byte and per draft: the SETUP exchange, SUBSCRIBE and its
// OK/ERROR/PUBLISH_DONE, SUBSCRIBE_NAMESPACE and PUBLISH_NAMESPACE, FETCH,
// GOAWAY, MAX_REQUEST_ID, subgroup and fetch stream headers and the objects
// on them (object ids, extension headers, object status). Nothing here does
// I/O beyond reading one message or one object off a stream; the session
// logic lives in package subscribe.
//
// # Drafts
//
// Version says which draft a value belongs to. The layouts follow what the
// reference implementation of moq-dev/moq (the relay, and @moq/net 0.3.4)
// puts on the wire where a draft's text and that code differ:
//
//   - Drafts 14-16 use QUIC varints (RFC 9000); drafts 17 and later use the
//     leading-ones varint (1 to 9 bytes; the 7-byte form is invalid in
//     draft 17 only).
//   - Control messages are Type (varint) + Length (u16, big-endian) + body
//     in every draft. Drafts 14-16 carry them on one bidirectional control
//     stream opened by the client; drafts 17+ put every request on its own
//     bidirectional stream and the SETUP on a unidirectional stream of type
//     0x2F00.
//   - Draft 14 negotiates its version inside CLIENT_SETUP (a version list,
//     reached through ALPN "moq-00" or the shared "moql"); drafts 15 and
//     16 are pinned by ALPN ("moqt-15", "moqt-16") and their CLIENT_SETUP
//     has no version list.
//   - Message parameters: draft 14 carries SUBSCRIBE's priority, group
//     order, forward flag and filter inline; from draft 15 they are
//     parameters; from draft 16 parameter types are delta-encoded; from
//     draft 17 parameters are typed by id (varint, u8, bool, location,
//     bytes) rather than by the parity of the id.
//
// Decoders bound what they allocate by the bytes they were given, so
// hostile length fields cannot exhaust memory, and return errors wrapping
// ErrDecode (malformed) or ErrTooLarge (beyond the limits).
//
// Hand-written because no Go library implements moq-transport; the
// framing is close to moq-lite's (internal/moq/lite/wire, which this
// package does not import: the two families share only the QUIC varint
// of internal/varint) but every message differs.
package ietf
