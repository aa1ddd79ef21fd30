package subscribe

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/moq/transport/alpn"

	"github.com/quic-go/quic-go"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/ietf/ietfsub"
	"github.com/moq-export/moq-export/model"
)

// The moq-transport loopback tests: our client against our server, one
// draft of each session shape (control stream reached by "moq-00" and by
// the legacy "moql" version list, the NAMESPACE stream of draft 16, the
// per-request streams and leading-ones varints of draft 20).
var ietfLoopbackDrafts = []struct{ name, alpn string }{
	{"Draft14", ietf.Draft14.ALPN()},
	{"Draft14Legacy", alpn.Legacy},
	{"Draft16", "moqt-16"},
	{"Draft20", "moqt-20"},
	{"Draft21", "moqt-21"},
	{"Draft22", "moqt-22"},
}

// dialIETF dials srv offering only alpn and returns both ends.
func dialIETF(t *testing.T, ctx context.Context, srv *Server, pin, proto, path string, opts Options) (client, peer *Session) {
	t.Helper()
	opts.TLSFingerprint = pin
	opts.alpns = []string{proto}
	// "moql" is the legacy SETUP, where our client would choose moq-lite-02
	// first: offer only the draft it reaches.
	if proto == alpn.Legacy {
		opts.Versions = []string{"moq-transport-14"}
	}
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	client, peer = dialAndAccept(t, ctx, srv, fmt.Sprintf("moqt://%s/%s", srv.Addr(), path), opts)
	t.Cleanup(func() { client.Close() })
	waitFor(t, "the connection", func() bool { return client.currentConn() != nil })
	if f := client.currentConn(); f == nil || f.Codes() != &ietfsub.Codes {
		t.Fatalf("%s: the session does not run moq-transport", proto)
	}
	return client, peer
}

// ietfSubscriptions returns the number of live moq-transport
// subscriptions of s.
func (s *Session) ietfSubscriptions() int {
	f := s.currentConn()
	if f == nil || f.Codes() != &ietfsub.Codes {
		return 0
	}
	return len(f.Routed())
}

// currentConn returns the session's connection (nil between connections).
func (s *Session) currentConn() session.Proto {
	f, _ := s.links.Current()
	return f
}

// TestIETFLoopbackDeliversEveryFrameUnchanged: every draft shape over raw
// QUIC, and over WebTransport (ietfWebTransportCases); the session root
// comes from the SETUP Path or the CONNECT path.
func TestIETFLoopbackDeliversEveryFrameUnchanged(t *testing.T) {
	type dialFunc func(t *testing.T, ctx context.Context, srv *Server, pin string) (client, peer *Session)
	type loopbackCase struct {
		name, want string
		dial       dialFunc
	}
	var cases []loopbackCase
	for _, d := range ietfLoopbackDrafts {
		cases = append(cases, loopbackCase{d.name, "", func(t *testing.T, ctx context.Context, srv *Server, pin string) (*Session, *Session) {
			return dialIETF(t, ctx, srv, pin, d.alpn, "room/x?jwt=secret", Options{})
		}})
	}
	for _, d := range ietfWebTransportCases {
		cases = append(cases, loopbackCase{"WebTransport" + d.name, d.want, func(t *testing.T, ctx context.Context, srv *Server, pin string) (*Session, *Session) {
			return dialIETFWebTransport(t, ctx, srv, pin, d.protos, d.versions, "room/x?jwt=secret")
		}})
	}
	for _, d := range cases {
		t.Run(d.name, func(t *testing.T) {
			checkGoroutines(t)
			srv, pin := startServer(t, "127.0.0.1:0")
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			client, peer := d.dial(t, ctx, srv, pin)
			if d.want != "" && (client.Version() != d.want || peer.Version() != d.want) {
				t.Errorf("client speaks %s, server %s; want %s", client.Version(), peer.Version(), d.want)
			}
			if peer.Path() != "room/x" {
				t.Errorf("accepted session path %q, want room/x", peer.Path())
			}
			checkDeliversEveryFrame(t, ctx, client, peer, client.ietfSubscriptions)
		})
	}
}

// TestIETFAnnouncementsFollowPublishAndUnpublish: PUBLISH_NAMESPACE makes
// a broadcast active, its withdrawal (PUBLISH_NAMESPACE_DONE, or the end
// of its stream from draft 17) ends it and closes the broadcast.
func TestIETFAnnouncementsFollowPublishAndUnpublish(t *testing.T) {
	for _, d := range ietfLoopbackDrafts {
		t.Run(d.name, func(t *testing.T) {
			srv, pin := startServer(t, "127.0.0.1:0")
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			client, peer := dialIETF(t, ctx, srv, pin, d.alpn, "", Options{})
			// The broadcast follows its own announcements: made before the
			// publication, it sees it become active before its withdrawal.
			remote := client.Broadcast("room/alice")
			client.mu.Lock()
			rb := client.remotes["room/alice"]
			client.mu.Unlock()
			rb.mu.Lock()
			activated := rb.activated
			rb.mu.Unlock()
			b := model.NewBroadcast("room/alice")
			if err := peer.Publish(b); err != nil {
				t.Fatal(err)
			}
			ann, err := client.Announced(ctx, "room")
			if err != nil {
				t.Fatal(err)
			}
			defer ann.Close()
			if a, err := ann.Next(ctx); err != nil || a.Path != "room/alice" || !a.Active {
				t.Fatalf("announcement %+v, %v; want room/alice active", a, err)
			}
			select {
			case <-activated:
			case <-ctx.Done():
				t.Fatal("the broadcast never saw its announcement")
			}
			peer.Unpublish("room/alice")
			if a, err := ann.Next(ctx); err != nil || a.Path != "room/alice" || a.Active {
				t.Fatalf("announcement %+v, %v; want room/alice ended", a, err)
			}
			select {
			case <-remote.Done():
			case <-ctx.Done():
				t.Fatal("the ended broadcast stays open")
			}
		})
	}
}

// TestIETFBackfillFetchesEarlierGroups: a subscription that joins live
// starts at the newest group; the track's backfill FETCHes the groups
// before it back to the target time.
func TestIETFBackfillFetchesEarlierGroups(t *testing.T) {
	for _, d := range ietfLoopbackDrafts {
		t.Run(d.name, func(t *testing.T) {
			srv, pin := startServer(t, "127.0.0.1:0")
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			client, peer := dialIETF(t, ctx, srv, pin, d.alpn, "", Options{})
			sb := newSampleBroadcast(t, "live", "aac")
			sb.fillFrames(t, "aac", 0, 0, 94) // one group per frame up to 1.98 s
			audio := sb.tracks["aac"]
			// One group per frame, as the browser publisher writes audio.
			for i := 0; i < 20; i++ {
				g, err := audio.AppendGroup()
				if err != nil {
					t.Fatal(err)
				}
				g.WriteFrame(model.Frame{Timestamp: 2_000_000 + int64(i)*21_333, Payload: []byte{0x21, byte(i)}})
				g.Close(nil)
			}
			if err := peer.Publish(sb.b); err != nil {
				t.Fatal(err)
			}
			tr, err := client.Broadcast("live").Track("aac")
			if err != nil {
				t.Fatal(err)
			}
			c := tr.Subscribe(time.Second)
			defer c.Close()
			waitFor(t, "the first frame", func() bool { _, ok := tr.OldestTimestamp(); return ok })
			if ts, _ := tr.OldestTimestamp(); ts < 2_000_000 {
				t.Fatalf("the subscription starts at %d, want the newest group", ts)
			}
			bctx, bcancel := context.WithTimeout(ctx, 5*time.Second)
			defer bcancel()
			const target = 1_500_000
			if err := tr.Backfill(bctx, target); err != nil {
				t.Fatal(err)
			}
			if ts, _ := tr.OldestTimestamp(); ts > target {
				t.Fatalf("after the backfill the track starts at %d, want at or before %d", ts, target)
			}
			evs, err := readEvents(ctx, c, func(evs []model.Event) bool { return frameCount(evs) >= 30 })
			if err != nil {
				t.Fatal(err)
			}
			// One frame per group: the backfill stops at the first group
			// at or before the target.
			if first := evs[0]; first.Kind != model.EventFrame || first.Frame.Timestamp > target || first.Frame.Timestamp <= target-21_334 {
				t.Fatalf("first event after the backfill %+v, want the frame just before %d", first, target)
			}
		})
	}
}

// requestCounter is a connection whose family counts request ids
// (moq-transport's), asked of it as a capability: the tests reach a
// family through the seam, never by its concrete type
// (internal/layering's seam rule).
type requestCounter interface {
	// RequestIDs returns the next request id and the peer's limit.
	RequestIDs() (next, limit uint64)
}

// TestIETFRequestIDsWaitForMaxRequestID: with a window of two request
// ids, the third request waits for MAX_REQUEST_ID, which the peer sends
// when told REQUESTS_BLOCKED.
func TestIETFRequestIDsWaitForMaxRequestID(t *testing.T) {
	old := requestWindow
	requestWindow = 4 // request ids 0 and 2 only
	defer func() { requestWindow = old }()
	srv, pin := startServer(t, "127.0.0.1:0")
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client, peer := dialIETF(t, ctx, srv, pin, ietf.Draft14.ALPN(), "", Options{})
	sb := newSampleBroadcast(t, "demo.hang", "h264", "aac")
	if err := peer.Publish(sb.b); err != nil {
		t.Fatal(err)
	}
	b := client.Broadcast("demo.hang")
	for _, name := range []string{catalog.TrackName, "h264", "aac"} {
		if _, err := b.Track(name); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "three subscriptions on a window of two", func() bool { return peer.pub.pubs.ServingAll() == 3 })
	ids, ok := client.currentConn().(requestCounter)
	if !ok {
		t.Fatalf("the connection (%s) counts no request ids", client.Version())
	}
	next, limit := ids.RequestIDs()
	if next < 6 || limit <= 4 {
		t.Fatalf("next request id %d, limit %d: want ids past the first window", next, limit)
	}
}

// TestIETFMSFCatalogTrack: a broadcast's MSF "catalog" track is read over
// moq-transport like catalog.json: chosen by a *.msf name, or taken when the
// broadcast refuses catalog.json (it carries only the MSF catalog, as
// publishers outside the hang world do).
func TestIETFMSFCatalogTrack(t *testing.T) {
	for _, name := range []string{"live.msf", "live"} {
		t.Run(name, func(t *testing.T) {
			srv, pin := startServer(t, "127.0.0.1:0")
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			client, peer := dialIETF(t, ctx, srv, pin, "moqt-20", "", Options{})
			msf := `{"version":"draft-01","tracks":[{"name":"v","packaging":"legacy","role":"video","codec":"avc1.640028","width":1280,"height":720}]}`
			b := model.NewBroadcast(name)
			ct := b.CreateTrack(catalog.MSFTrackName)
			b.HandleRequests(func(string) (*model.Track, error) { return nil, model.ErrNotFound })
			g, _ := ct.AppendGroup()
			g.WriteFrame(model.Frame{Payload: []byte(msf)})
			g.Close(nil)
			if err := peer.Publish(b); err != nil {
				t.Fatal(err)
			}
			w, err := catalog.Watch(client.Broadcast(name), catalog.WatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			c, err := w.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if v, ok := c.Video.Renditions["v"]; !ok || v.Codec != "avc1.640028" || *v.CodedWidth != 1280 {
				t.Fatalf("catalog %+v", c)
			}
		})
	}
}

// rawIETFClient dials srv with a bare QUIC connection offering alpn, for
// feeding our server bytes no correct peer sends.
func rawIETFClient(t *testing.T, ctx context.Context, srv *Server, alpn string) *quic.Conn {
	t.Helper()
	qc, err := quic.DialAddr(ctx, srv.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{alpn}}, quicConfig(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { qc.CloseWithError(0, "") })
	return qc
}

// TestIETFMalformedControlMessageClosesTheSession: garbage after a valid
// CLIENT_SETUP closes the connection with PROTOCOL_VIOLATION; an unknown
// data stream is refused without ending the session.
func TestIETFMalformedControlMessageClosesTheSession(t *testing.T) {
	checkGoroutines(t)
	srv, _ := startServer(t, "127.0.0.1:0")
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	qc := rawIETFClient(t, ctx, srv, ietf.Draft14.ALPN())
	ctrl, err := qc.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	setup := ietf.ClientSetup{Versions: []ietf.Version{ietf.Draft14}}
	setup.Params.SetVarint(ietf.SetupMaxRequestID, 10)
	if _, err := ctrl.Write(ietf.Append(nil, ietf.TypeClientSetup, &setup, ietf.Draft14)); err != nil {
		t.Fatal(err)
	}
	typ, _, err := ietf.ReadMessage(bufio.NewReader(ctrl), ietf.Draft14)
	if err != nil || typ != ietf.TypeServerSetup {
		t.Fatalf("SERVER_SETUP: %#x, %v", typ, err)
	}
	peer, err := srv.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A data stream of an unknown type: refused, the session lives on.
	uni, err := qc.OpenUniStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	uni.Write([]byte{0x3f, 1, 2, 3})
	uni.Close()
	// A SUBSCRIBE whose body is cut short.
	if _, err := ctrl.Write(ietf.AppendMessage(nil, ietf.TypeSubscribe, []byte{0x00, 0x05}, ietf.Draft14)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-qc.Context().Done():
	case <-ctx.Done():
		t.Fatal("the session survived a malformed SUBSCRIBE")
	}
	var ae *quic.ApplicationError
	if err := context.Cause(qc.Context()); !errors.As(err, &ae) || ae.ErrorCode != ietfsub.CodeProtocolViolation {
		t.Fatalf("connection closed with %v, want PROTOCOL_VIOLATION", err)
	}
	select {
	case <-peer.Done():
	case <-ctx.Done():
		t.Fatal("the accepted session did not end")
	}
}

// The default offer is the whole ALPN table in its order (moq-lite
// first, then the moq-transport drafts), and every draft's token hands
// the connection to the draft the codec knows by it.
func TestIETFVersionsComeFromTheVersionTable(t *testing.T) {
	vs, err := versionList(nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, tok := range alpn.Table {
		want = append(want, tok.Name)
	}
	if got := alpn.Tokens(vs); !slices.Equal(got, want) {
		t.Fatalf("default offer %v, want %v", got, want)
	}
	drafts := 0
	for _, v := range vs {
		if v.Family() != alpn.IETF {
			continue
		}
		drafts++
		d := ietf.Version(v.Code)
		if !d.Known() {
			t.Errorf("%v: not known to the codec", d)
		}
		if ch, ok := alpn.Select(d.ALPN(), alpn.Codes(vs)); !ok || ch.Family != alpn.IETF || ietf.Version(ch.Code) != d {
			t.Errorf("%s selects %+v, %v; want %v", d.ALPN(), ch, ok, d)
		}
	}
	if drafts != 9 {
		t.Errorf("%d drafts offered, want 9 (14-22)", drafts)
	}
	if ch, ok := alpn.Select(alpn.Legacy, []uint64{uint64(ietf.Draft14)}); !ok || ietf.Version(ch.Code) != ietf.Draft14 {
		t.Errorf("moql selects %+v, %v; want draft 14", ch, ok)
	}
}
