// Package interop checks our moq-lite-05 session (package subscribe) against
// the reference implementation: the TypeScript @moq/net 0.3.4 with @moq/hang
// 0.3.5's catalog and legacy container, run under Deno 2.9.6 over Deno's raw
// QUIC API (ALPN moq-lite-05).
//
// The package holds only tests and the JavaScript side they drive:
//
//   - package.json / package-lock.json pin @moq/net, @moq/hang, deno (the npm
//     package ships the binary) and esbuild; scripts/interop-setup.sh runs npm
//     ci here and bundles src/*.ts into dist/ (Deno cannot load @moq/hang's
//     extensionless ESM imports directly).
//   - src/quic.ts makes a Deno.QuicConn look like the WebTransport session
//     @moq/net's Connection.accept and Connection.connect expect.
//   - src/publish.ts publishes a broadcast described by a manifest the Go test
//     writes from moqexport's sample media (frames, timestamps, group starts,
//     send times); src/subscribe.ts records a broadcast and prints every frame.
//     Both talk to the test through JSON lines on stdout.
//
// The tests skip with a message naming the setup script when Deno or the
// bundles are missing, unless MOQ_INTEROP_REQUIRED=1 (set by .ci/run), which
// turns the skip into a failure.
//
// No Go library speaks to @moq/net for us, and there is nothing to hand-write
// here beyond test plumbing: the protocol code under test is package subscribe.
package interop
