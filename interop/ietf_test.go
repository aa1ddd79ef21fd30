package interop

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// ietfDrafts are the moq-transport drafts interop covers, each with the
// ALPN that restricts @moq/net 0.3.4 to it: draft 14 only through the
// legacy "moql" CLIENT_SETUP version list (its accept and connect do not
// know "moq-00"). That list also offers lite-02 and lite-01, which our side
// prefers as the reference does, so our side is pinned to the draft.
var ietfDrafts = []struct{ name, alpn, version string }{
	{"Draft14", "moql", "moq-transport-14"},
	{"Draft15", "moqt-15", "moq-transport-15"},
	{"Draft16", "moqt-16", "moq-transport-16"},
	{"Draft17", "moqt-17", "moq-transport-17"},
	{"Draft18", "moqt-18", "moq-transport-18"},
	{"Draft19", "moqt-19", "moq-transport-19"},
	{"Draft20", "moqt-20", "moq-transport-20"},
}

// ietfDraftsNamed returns the entries of ietfDrafts with those names.
func ietfDraftsNamed(names ...string) []struct{ name, alpn, version string } {
	var out []struct{ name, alpn, version string }
	for _, d := range ietfDrafts {
		if slices.Contains(names, d.name) {
			out = append(out, d)
		}
	}
	return out
}

// checkNegotiated fails unless the reference logged the session as version
// (its "accepted"/"connected" line names the version it runs).
func checkNegotiated(t *testing.T, pub *refProcess, version string) {
	t.Helper()
	if log := pub.stderr.String(); !strings.Contains(log, version) {
		t.Errorf("the reference did not run %s; its log:\n%s", version, log)
	}
}

// TestIETFReferencePublisherRecordsEveryFrame: @moq/net, restricted to one
// moq-transport draft, listens on raw QUIC and publishes the sample
// broadcast; our client negotiates that draft, discovers the broadcast
// (SUBSCRIBE_NAMESPACE and PUBLISH_NAMESPACE), reads catalog.json and
// records both tracks: every frame with its bytes, timestamp, group and
// keyframe flag.
func TestIETFReferencePublisherRecordsEveryFrame(t *testing.T) {
	t.Parallel()
	ref := needReference(t)
	for _, d := range ietfDrafts {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			pub := recordReferenceServerAs(ctx, t, ref, sampleBroadcast("interop/ietf.hang", 2), d.version, []string{d.version}, "--alpn", d.alpn)
			checkNegotiated(t, pub, d.version)
		})
	}
}

// TestIETFReferenceClientPublishesIntoOurServer: @moq/net, restricted to
// one draft, dials our server and publishes; we accept the moq-transport
// session, follow its PUBLISH_NAMESPACE and record the broadcast.
func TestIETFReferenceClientPublishesIntoOurServer(t *testing.T) {
	t.Parallel()
	ref := needReference(t)
	for _, d := range ietfDrafts {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			pub := recordReferenceClientAs(ctx, t, ref, sampleBroadcast("interop/ietf-ingest.hang", 5), d.version, []string{d.version}, "--alpn", d.alpn)
			checkNegotiated(t, pub, d.version)
		})
	}
}
