// Package token verifies the access tokens of the reference relay
// (moq-dev/moq's moq-token scheme, also minted by the npm package
// @moq/token): a JWT signed with one key, whose claims name a root path,
// the paths below it the bearer may publish ("put") and subscribe to
// ("get"), or the newer tokens' path patterns ("publish", "subscribe":
// "room/**", "*/chat", an exact "alice"), and an expiry ("exp").
//
// It owns three things and nothing else:
//
//   - The key file: a JWK as JSON, or that JSON base64url-encoded (what
//     the Rust moq-token CLI writes by default), ParseKey and LoadKey. The
//     key's "alg" is the only algorithm its tokens may use: HS256, HS384,
//     HS512 (kty "oct", a secret of at least 32 bytes; an oct key without
//     "kty" is the legacy form and still read), ES256 and ES384 (kty "EC",
//     P-256 and P-384), RS256/384/512 and PS256/384/512 (kty "RSA") and
//     EdDSA (kty "OKP", Ed25519). A private key verifies with its public
//     half. "key_ops" must allow "verify" (absent: sign and verify), and
//     an optional "scope" caps what the key's tokens may grant.
//   - Verifying a token (Key.Verify): at most MaxLength bytes, compact
//     JWS, the header's alg equal to the key's, a valid signature, an
//     "exp" not passed, and a grant of at least one path. An "exp" is
//     optional, as in the reference; "iat" is not checked.
//   - What the claims grant on a connection path (Claims.Authorize): the
//     path may equal the root, extend it (the grants are narrowed) or be
//     a parent of it (the grants stay anchored at the root); an unrelated
//     path, or one where no grant is left, is refused. Paths match on
//     segment boundaries: "foo" grants "foo" and "foo/bar", never
//     "foobar". Permissions answers for one broadcast path.
//
// FromQuery takes the token from a URL query (?jwt=), where WebTransport
// URLs and the SETUP Path of raw QUIC carry it.
//
// The cryptography and the JOSE formats (JWK parsing, JWS verification,
// the algorithms) are github.com/lestrrat-go/jwx/v3's; this package adds
// only the moq-token rules around them. Errors never contain the token.
package token
