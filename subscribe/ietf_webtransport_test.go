package subscribe

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/moq/ietf/ietfsub"
)

// The moq-transport drafts over WebTransport: negotiated by
// WT-Available-Protocols / WT-Protocol in the same list as moq-lite, or
// (draft 14) by the legacy CLIENT_SETUP when the protocol says "moql" or
// nothing at all.
var ietfWebTransportCases = []struct {
	name     string
	protos   []string // offered; empty: no WT-Available-Protocols
	versions []string
	want     string
}{
	{"Draft14", []string{"moq-00"}, nil, "moq-transport-14"},
	{"Draft14Legacy", []string{"moql"}, []string{"moq-transport-14"}, "moq-transport-14"},
	{"Draft14NoProtocol", []string{}, []string{"moq-transport-14"}, "moq-transport-14"},
	{"Draft16", []string{"moqt-16"}, nil, "moq-transport-16"},
	{"Draft20", []string{"moqt-20"}, nil, "moq-transport-20"},
	{"Draft22", []string{"moqt-22"}, nil, "moq-transport-22"},
	// Every version offered, moq-transport only: the first one wins.
	{"AllDrafts", nil, []string{"moq-transport-22", "moq-transport-21", "moq-transport-20", "moq-transport-14"}, "moq-transport-22"},
}

// dialIETFWebTransport dials srv over WebTransport offering protos (nil:
// what versions says) and returns both ends.
func dialIETFWebTransport(t *testing.T, ctx context.Context, srv *Server, pin string, protos, versions []string, path string) (client, peer *Session) {
	t.Helper()
	opts := Options{TLSFingerprint: pin, alpns: protos, Versions: versions, Logger: testLogger(t)}
	client, peer = dialAndAccept(t, ctx, srv, fmt.Sprintf("https://%s/%s", srv.Addr(), path), opts)
	t.Cleanup(func() { client.Close() })
	waitFor(t, "the connection", func() bool { return client.currentConn() != nil })
	if f := client.currentConn(); f == nil || f.Codes() != &ietfsub.Codes {
		t.Fatalf("%v: the session does not run moq-transport", protos)
	}
	return client, peer
}

// TestIETFWebTransportLiteStillPreferred: a client offering everything
// over WebTransport gets moq-lite, as before.
func TestIETFWebTransportLiteStillPreferred(t *testing.T) {
	srv, pin := startServer(t, "127.0.0.1:0")
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client, peer := dialAndAccept(t, ctx, srv, fmt.Sprintf("https://%s/", srv.Addr()), Options{TLSFingerprint: pin, Logger: testLogger(t)})
	defer client.Close()
	if client.Version() != "moq-lite-06" || peer.Version() != "moq-lite-06" {
		t.Fatalf("versions %s / %s, want moq-lite-06", client.Version(), peer.Version())
	}
}
