package interop

import (
	"context"
	"fmt"
	"testing"

	"github.com/moq-export/moq-export/subscribe"
)

// referenceVersions are the versions @moq/net 0.3.4 is made to offer one at
// a time (its only ALPN on raw QUIC), with the version our session must
// then report: "moql" is the legacy SETUP, where @moq/net offers lite-02,
// lite-01 and draft-14 and lite-02 wins.
var referenceVersions = []struct{ alpn, want string }{
	{"moq-lite-05", "moq-lite-05"},
	{"moq-lite-04", "moq-lite-04"},
	{"moq-lite-03", "moq-lite-03"},
	{"moql", "moq-lite-02"},
}

// TestEveryVersionReferencePublisherAsServer: the reference publisher
// listens offering a single version; our client (offering them all) dials
// it, speaks what it picked, and records every frame.
func TestEveryVersionReferencePublisherAsServer(t *testing.T) {
	ref := needReference(t)
	for _, v := range referenceVersions {
		t.Run(v.alpn, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			_, cert := ourCert(t)
			m := sampleBroadcast("interop/"+v.alpn+".hang", 2)
			pub := ref.start(ctx, t, "publish",
				"--manifest", m.write(t), "--listen", "127.0.0.1:0", "--alpn", v.alpn,
				"--cert", cert.certFile, "--key", cert.keyFile, "--speed", "2")
			port := pub.expect(ctx, "listening", nil).Port
			sess, err := subscribe.Dial(ctx, fmt.Sprintf("moql://127.0.0.1:%d/", port), subscribe.Options{
				TLSFingerprint: cert.fingerprint,
				Reconnect:      subscribe.Backoff{Disabled: true},
			})
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			t.Cleanup(func() { _ = sess.Close() })
			if got := sess.Version(); got != v.want {
				t.Fatalf("negotiated %q, want %s", got, v.want)
			}
			recordPublished(ctx, t, sess, m, pub)
		})
	}
}

// TestEveryVersionReferenceClientPublishesIntoOurServer: the reference
// client dials our server offering a single version and publishes; we
// accept, speak that version and record every frame.
func TestEveryVersionReferenceClientPublishesIntoOurServer(t *testing.T) {
	ref := needReference(t)
	for _, v := range referenceVersions {
		t.Run(v.alpn, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			srv, cert := listenWithOurCert(t)
			m := sampleBroadcast("interop/ingest-"+v.alpn+".hang", 3)
			pub := ref.start(ctx, t, "publish",
				"--manifest", m.write(t), "--connect", srv.Addr().String(), "--alpn", v.alpn,
				"--ca", cert.certFile, "--server-name", "localhost", "--speed", "2")
			sess, err := srv.Accept(ctx)
			if err != nil {
				t.Fatalf("Accept: %v", err)
			}
			if got := sess.Version(); got != v.want {
				t.Fatalf("negotiated %q, want %s", got, v.want)
			}
			recordPublished(ctx, t, sess, m, pub)
		})
	}
}
