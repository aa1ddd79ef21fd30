package interop

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"testing"

	"github.com/moq-export/moq-export/subscribe"
)

// moq-transport over WebTransport against @moq/net under Deno. Deno 2.9's
// WebTransport (client and Deno.upgradeWebTransport server) neither sends
// WT-Available-Protocols nor answers WT-Protocol, so @moq/net over it can
// only reach draft 14, through the legacy CLIENT_SETUP version list; our
// side is restricted to that draft (the list also offers lite-02 and
// lite-01, which would win otherwise). The newest draft over WebTransport
// needs the protocol negotiation: TestIETFBrowserPublisherIntoListen runs
// @moq/net in Chromium for it.
//
// Our WebTransport client against @moq/net as the server cannot run here:
// webtransport-go v0.13.0's client refuses a server that does not offer
// QUIC stream reset partial delivery (RESET_STREAM_AT), and Deno's QUIC
// stack offers none ("server didn't enable QUIC stream reset partial
// delivery"). That role is tested against our own server
// (subscribe.TestIETFLoopbackDeliversEveryFrameUnchanged).

// TestIETFWebTransportReferenceClientPublishesIntoOurServer: @moq/net
// dials our --listen over WebTransport (Deno's client) and publishes; we
// accept draft 14 and record every frame.
func TestIETFWebTransportReferenceClientPublishesIntoOurServer(t *testing.T) {
	t.Parallel()
	ref := needReference(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	tlsCert, cert := ourCert(t)
	srv, err := subscribe.Listen("127.0.0.1:0", subscribe.ServerOptions{
		Certificates: []tls.Certificate{tlsCert},
		Versions:     []string{"moq-transport-14"},
	})
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	m := sampleBroadcast("interop/ietf-wt-ingest.hang", 3)
	pub := ref.start(ctx, t, "publish", "--manifest", m.write(t), "--speed", "2",
		"--webtransport", fmt.Sprintf("https://localhost:%d/ingest", srv.Addr().(*net.UDPAddr).Port), "--fingerprint", cert.fingerprint)
	sess, err := srv.Accept(ctx)
	if err != nil {
		t.Fatalf("Accept: %v", err)
	}
	if got := sess.Version(); got != "moq-transport-14" {
		t.Fatalf("negotiated %q, want moq-transport-14", got)
	}
	if sess.Path() != "ingest" {
		t.Errorf("session path %q, want ingest (the CONNECT path)", sess.Path())
	}
	recordPublished(ctx, t, sess, m, pub)
	checkNegotiated(t, pub, "WebTransport")
}
