// Package interop checks our moq-lite-05 and moq-transport sessions
// (package subscribe) against the reference implementation: the TypeScript
// @moq/net 0.3.4 with @moq/hang 0.3.5's catalog and legacy container, run
// under Deno 2.9.6 over Deno's raw QUIC API. It holds only tests and the JavaScript side
// they drive; the protocol code under test is package subscribe.
//
// # Setup
//
// package.json / package-lock.json pin @moq/net, @moq/hang, @moq/token,
// deno (the npm package ships the binary) and esbuild. scripts/interop-setup.sh runs npm ci
// here (skipped while the lockfile is unchanged) and build.sh bundles
// src/*.ts into dist/, because Deno cannot load @moq/hang's extensionless ESM
// imports directly. The tests rebundle by themselves when a source is newer
// than dist/. Without Deno or node_modules they skip with a message naming
// the setup script, unless MOQ_INTEROP_REQUIRED=1, which makes that a
// failure (for CI).
//
// # JavaScript side
//
//   - src/quic.ts makes a Deno.QuicConn look like the WebTransport session
//     @moq/net's own Connection.accept and Connection.connect take. It also
//     maps @moq/net's group send orders (down to about -2^52) into the i32
//     that Deno 2.9 keeps, which would otherwise wrap to random priorities.
//   - src/publish.ts publishes one broadcast: catalog.json written by
//     @moq/net's writeJson after validation by hang's Catalog.RootSchema, and
//     one track per rendition written by hang's Container.Legacy.Producer with
//     Container.trackInfo() (timescale microseconds). It reads a manifest:
//     {"broadcast", "tracks":[{"name","kind","config":{catalog fields},
//     "frames":[{"ts" µs, "key" starts a group, "at" µs send time, "data"
//     base64}]}]}. Media waits until every track has a subscriber. With
//     --container cmaf it uses hang's CMAF encoder instead (Container.Cmaf:
//     createVideoInitSegment/createAudioInitSegment as the catalog's init,
//     one encodeDataSegment moof+mdat per frame, a group per keyframe;
//     cmaf_test.go).
//   - src/subscribe.ts records one broadcast (after its announcement, or at
//     once), decoding hang's legacy container.
//   - src/token.ts runs @moq/token 0.2.3 (the reference's token package):
//     generate a key, sign claims, verify a token. token_test.go gives our
//     server (subscribe.ServerOptions.AuthKey, as --auth-key) the keys it
//     generates (HS256, ES256, EdDSA, RS256) and checks that its tokens
//     admit or refuse as their claims say (valid, missing, wrong key,
//     expired, other root, other path, subscribe-only), with our publisher
//     (raw QUIC lite-05 and WebTransport) and with @moq/net's publisher
//     over Deno's WebTransport (publish.ts --webtransport URL --fingerprint
//     HEX: the token in the URL, where @moq/net carries it; Deno sends no
//     WT-Available-Protocols, so that session is moq-lite-02 from the
//     legacy SETUP). @moq/net sends no SETUP Path or Role on raw QUIC, so
//     WebTransport is its only way to present a token.
//   - restart_test.go: moq-export records @moq/net's publisher, which is
//     killed with SIGKILL and started again on its port 2 s later
//     (publish.ts --epoch-ms stamps both runs on one wall clock, so the loss
//     shows in the file's timestamps); the hole in each track is at most
//     the outage plus 3 s and is what the recording reports lost.
//
// Both run as server (--listen, PEM certificate) or client (--connect,
// trusting a PEM CA), offering or accepting the ALPNs of --alpn
// (moq-lite-05 by default; "moql" restricts @moq/net to IETF
// moq-transport draft 14, "moqt-15" ... "moqt-20" to those drafts, see
// ietf_test.go), and print JSON lines on stdout: listening {port},
// published, catalog {json}, subscribed, group {track, sequence, frame},
// done, error {message} for the publisher; announced, catalog, track
// {timescale}, frame {track, group, index, ts, wire, data}, track_end,
// timeout, done for the subscriber. Logs go to stderr, which a failing test
// prints.
//
// # Reference behaviour the tests rely on or guard against
//
//   - The @moq/net publisher sends SUBSCRIBE_END and FINs the subscribe stream
//     as soon as a track closes, without waiting for its group streams, and
//     its own subscriber drops group streams arriving after that FIN; two
//     @moq/net peers lose the last group that way. The publisher here waits
//     --close-delay-ms (500 by default) before closing; one test sets 0 and
//     requires our subscriber to keep every group below SUBSCRIBE_END. An
//     archive replay ends a track only once its readers (our publisher's
//     subscriptions) read its last group, so that group's stream is on its
//     way before the end; replay_test.go has the reference subscriber
//     record a replay served on --listen frame for frame.
//   - Deno 2.9 turns a stream abort into a plain FIN, and an unknown track
//     gets no answer at all, so refusals are a FIN without TRACK_INFO or the
//     request timeout.
//   - rustls (Deno) refuses a CA certificate as the server's end entity; the
//     certificates of subscribe.SelfSignedCert work.
//   - Deno's WebTransport has no protocols option (no WT-Available-Protocols),
//     and its server side (Deno.upgradeWebTransport) answers no WT-Protocol,
//     so over Deno's WebTransport (--webtransport) @moq/net takes the legacy
//     SETUP: moq-transport draft 14 when our server allows only that
//     (ietf_webtransport_test.go). Our WebTransport client cannot dial
//     Deno's server at all (webtransport-go requires RESET_STREAM_AT of the
//     server). The newer drafts over WebTransport run @moq/net 0.3.4 in
//     Chromium (browser/ietf-publish.ts, sharing src/publisher.ts with
//     publish.ts; TestIETFBrowserPublisherIntoListen), whose WebTransport
//     negotiates the protocol. Other WebTransport interop also runs in a
//     real browser:
//     TestBrowserPublisherIntoListen loads browser/publish.ts (@moq/publish
//     0.2.17's <moq-publish>, bundling @moq/net 0.1.9, which offers
//     moq-lite-04, -03 and moql) in headless Chromium with a fake camera and
//     microphone, from another origin than our --listen (so the dev
//     bootstrap's /certificate.sha256 needs CORS), and checks the recording
//     with ffmpeg.
//   - The version tests (versions_test.go) restrict @moq/net to one ALPN at
//     a time (--alpn: moq-lite-05, -04, -03, or moql, where its legacy
//     CLIENT_SETUP lists lite-02, lite-01 and draft 14 and lite-02 wins), in
//     both roles. layouts.ts prints the bytes @moq/net's encoders write for
//     every message of every version; TestReferenceLayoutsAreCurrent keeps
//     testdata/reference-layouts.jsonl equal to them.
package interop
