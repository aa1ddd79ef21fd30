package interop

import (
	"context"
	"testing"
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
			recordReferenceServerAs(ctx, t, ref, sampleBroadcast("interop/"+v.alpn+".hang", 2), v.want, nil, "--alpn", v.alpn)
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
			recordReferenceClientAs(ctx, t, ref, sampleBroadcast("interop/ingest-"+v.alpn+".hang", 3), v.want, nil, "--alpn", v.alpn)
		})
	}
}
