package subscribe

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/internal/moq/lite/litepub"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/varint"
	"github.com/moq-export/moq-export/model"
)

// rawPeer is a hand-driven raw QUIC peer on one ALPN: tests write and read
// the exact bytes of the published lite-06 text (no installable peer speaks
// final lite-06).
type rawPeer struct {
	ln    *quic.Listener
	pin   string
	conns chan *quic.Conn
}

func newRawPeer(t *testing.T, alpn string) *rawPeer {
	t.Helper()
	cert, pin, err := SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	tr := &quic.Transport{Conn: udp}
	ln, err := tr.Listen(&tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{alpn}}, quicConfig(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	p := &rawPeer{ln: ln, pin: pin, conns: make(chan *quic.Conn, 4)}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			p.conns <- c
		}
	})
	t.Cleanup(func() { ln.Close(); tr.Close(); udp.Close(); wg.Wait() })
	return p
}

func (p *rawPeer) next(t *testing.T) *quic.Conn {
	t.Helper()
	select {
	case c := <-p.conns:
		t.Cleanup(func() { c.CloseWithError(0, "") })
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no connection")
		return nil
	}
}

// acceptBidi accepts the next bidi stream of c whose first varint is typ,
// skipping none: any other type fails the test.
func acceptBidi(t *testing.T, ctx context.Context, c *quic.Conn, typ uint64) (*quic.Stream, *bufio.Reader) {
	t.Helper()
	str, err := c.AcceptStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(str)
	got, err := varint.Read(r)
	if err != nil || got != typ {
		t.Fatalf("stream type %d, %v; want %d", got, err, typ)
	}
	return str, r
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLite06AnnouncementsFollowImplicitIDsAndAViolationClosesTheSession:
// our subscriber reads a lite-06 relay's typed announcements byte for byte
// (START takes the next id, UPDATE keeps it, END retires it, an unknown
// type is skipped and takes none), and an END of a retired id closes the
// session with PROTOCOL_VIOLATION (0x3).
func TestLite06AnnouncementsFollowImplicitIDsAndAViolationClosesTheSession(t *testing.T) {
	t.Parallel()
	p := newRawPeer(t, "moq-lite-06")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := Dial(ctx, fmt.Sprintf("moql://%s/", p.ln.Addr()), Options{TLSFingerprint: p.pin, Logger: testLogger(t),
		Reconnect: Backoff{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Version() != "moq-lite-06" {
		t.Fatalf("version %s", s.Version())
	}
	c := p.next(t)
	ann, err := s.Announced(ctx, "room")
	if err != nil {
		t.Fatal(err)
	}
	defer ann.Close()
	str, r := acceptBidi(t, ctx, c, wire.StreamAnnounce)
	// ANNOUNCE_REQUEST "room" on lite-06: no Exclude Hop.
	req := make([]byte, 6)
	if _, err := io.ReadFull(r, req); err != nil || !bytes.Equal(req, mustHex(t, "05 04 72 6f 6f 6d")) {
		t.Fatalf("ANNOUNCE_REQUEST body % x, %v", req, err)
	}
	var out []byte
	out = (&wire.AnnounceOK{HopID: 99, ActiveCount: 1}).Append(out)
	out = append(out, mustHex(t, "00 06 01 61 01 07 0c 1e")...)                   // START "a" [7] 12/30: id 0
	out = append(out, mustHex(t, "00 0c 01 62 00 00 ff ff ff ff ff ff ff ff")...) // START "b", browser costs: id 1
	out = append(out, mustHex(t, "02 05 00 01 07 0c 1e")...)                      // UPDATE id 0
	out = append(out, mustHex(t, "09 02 aa bb")...)                               // unknown type: skipped, no id
	out = append(out, mustHex(t, "01 01 01")...)                                  // END id 1 ("b")
	out = append(out, mustHex(t, "00 05 01 62 00 00 00")...)                      // START "b" again: id 2
	out = append(out, mustHex(t, "01 01 00")...)                                  // END id 0 ("a")
	if _, err := str.Write(out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []Announcement{{Path: "room/a", Active: true}, {Path: "room/b", Active: true},
		{Path: "room/b"}, {Path: "room/b", Active: true}, {Path: "room/a"}} {
		got, err := ann.Next(ctx)
		if err != nil || got.Path != want.Path || got.Active != want.Active {
			t.Fatalf("announcement %+v, %v; want %+v", got, err, want)
		}
	}
	// END of id 1, retired above: a violation.
	if _, err := str.Write(mustHex(t, "01 01 01")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Context().Done():
	case <-ctx.Done():
		t.Fatal("the session survived an END of a retired id")
	}
	var ae *quic.ApplicationError
	if !errors.As(context.Cause(c.Context()), &ae) || ae.ErrorCode != SessionProtocolViolation || !ae.Remote {
		t.Fatalf("connection closed with %v, want the peer's PROTOCOL_VIOLATION (0x3)", context.Cause(c.Context()))
	}
}

// TestLite06DuplicateStartAndAnnouncementBeforeOKCloseTheSession: the other
// session-closing announce rules.
func TestLite06DuplicateStartAndMalformedAnnouncementCloseTheSession(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, hex string }{
		{"duplicate START", "01 00 00 03 01 61 00 00 00 00 03 01 61 00 00 00"},
		{"UPDATE of an id never assigned", "01 00 02 05 04 01 07 0c 1e"},
		{"hop repeated", "01 00 00 07 01 61 02 07 07 00 00"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newRawPeer(t, "moq-lite-06")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := Dial(ctx, fmt.Sprintf("moql://%s/", p.ln.Addr()), Options{TLSFingerprint: p.pin, Logger: testLogger(t),
				Reconnect: Backoff{Disabled: true}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			c := p.next(t)
			ann, err := s.Announced(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			defer ann.Close()
			str, r := acceptBidi(t, ctx, c, wire.StreamAnnounce)
			if _, err := wire.ReadMessage(r, 0); err != nil {
				t.Fatal(err)
			}
			// ANNOUNCE_OK (hop 1, no initial routes) and the bad bytes.
			if _, err := str.Write(append(mustHex(t, "02"), mustHex(t, tt.hex)...)); err != nil {
				t.Fatal(err)
			}
			select {
			case <-c.Context().Done():
			case <-ctx.Done():
				t.Fatal("the session survived")
			}
			var ae *quic.ApplicationError
			if !errors.As(context.Cause(c.Context()), &ae) || ae.ErrorCode != SessionProtocolViolation {
				t.Fatalf("closed with %v, want PROTOCOL_VIOLATION", context.Cause(c.Context()))
			}
		})
	}
}

// TestLite06ServerWritesThePublishedLayouts: a raw lite-06 client talks to
// our server, which publishes one broadcast: ANNOUNCE_OK and a START with
// free costs, END of its id on unpublish and a fresh id when it comes back;
// TRACK_INFO without the Ordered byte; a SUBSCRIBE with a floor inside a
// group gets that group from the requested frame, its GROUP header naming
// the frame; a FETCH of a frame range gets exactly those frames.
func TestLite06ServerWritesThePublishedLayouts(t *testing.T) {
	t.Parallel()
	srv, _ := startVersionServer(t, "lite-06")
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := quic.DialAddr(ctx, srv.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"moq-lite-06"}}, quicConfig(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseWithError(0, "")
	if u, err := conn.OpenUniStream(); err == nil {
		u.Write(mustHex(t, "01 01 00")) // empty SETUP
		u.Close()
	}
	peer, err := srv.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if err := peer.Publish(lite06Broadcast(t)); err != nil {
		t.Fatal(err)
	}

	// Announcements.
	as, err := conn.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	as.Write(mustHex(t, "01 01 00"))
	ar := bufio.NewReader(as)
	var ok wire.AnnounceOK
	if body, err := wire.ReadMessage(ar, 0); err != nil || ok.Decode(body) != nil || ok.ActiveCount != 1 || ok.HopID == 0 {
		t.Fatalf("ANNOUNCE_OK %+v, %v", ok, err)
	}
	expectBytes(t, ar, "00 07 03 62 62 62 00 00 00") // START "bbb", no hops, 0/0
	peer.Unpublish("bbb")
	expectBytes(t, ar, "01 01 00") // END id 0
	if err := peer.Publish(lite06Broadcast(t)); err != nil {
		t.Fatal(err)
	}
	expectBytes(t, ar, "00 07 03 62 62 62 00 00 00") // START again: id 1, implicit

	// TRACK_INFO: priority 0, max age, timescale, no Ordered byte.
	ts, _ := conn.OpenStreamSync(ctx)
	ts.Write(append([]byte{wire.StreamTrack}, (&wire.TrackRequest{Broadcast: "bbb", Track: "video"}).Append(nil)...))
	tr := bufio.NewReader(ts)
	body, err := wire.ReadMessage(tr, 0)
	var info wire.TrackInfo
	if err != nil || info.DecodeFor(body, wire.Lite06) != nil || len(body) != 1+varint.Len(litepub.MaxLatency)+varint.Len(info.Timescale) {
		t.Fatalf("TRACK_INFO % x, %v", body, err)
	}

	// SUBSCRIBE floor (3, 2) end (4, 0), with a max age that keeps group
	// 3 (without one the start would be the latest group, 4).
	ss, _ := conn.OpenStreamSync(ctx)
	sub := wire.Subscribe{ID: 5, Broadcast: "bbb", Track: "video",
		SubscribeParams: wire.SubscribeParams{Start: wire.Some(3), FrameStart: 2, End: wire.Some(4), FrameEnd: wire.Some(0), MaxLatency: 60_000}}
	ss.Write(sub.AppendFor([]byte{wire.StreamSubscribe}, wire.Lite06))
	expectBytes(t, bufio.NewReader(ss), "00 01 03") // SUBSCRIBE_OK group 3
	got := map[uint64][]string{}
	starts := map[uint64]uint64{}
	for len(got[3]) < 3 || len(got[4]) < 1 {
		u, err := conn.AcceptUniStream(ctx)
		if err != nil {
			t.Fatalf("%v; got %v", err, got)
		}
		u.SetReadDeadline(time.Now().Add(10 * time.Second))
		ur := bufio.NewReader(u)
		switch typ, _ := varint.Read(ur); typ {
		case wire.UniSetup:
			continue
		case wire.UniGroup:
		default:
			t.Fatalf("uni type %d", typ)
		}
		var h wire.Group
		hb, err := wire.ReadMessage(ur, 0)
		if err != nil || h.DecodeFor(hb, wire.Lite06) != nil || h.SubscribeID != 5 {
			t.Fatalf("GROUP % x, %v", hb, err)
		}
		starts[h.Sequence] = h.FrameStart
		fr := wire.NewFrameReader(ur, wire.Lite06)
		for {
			p, err := fr.Next()
			if err != nil {
				t.Logf("group %d: %v", h.Sequence, err)
				break
			}
			_, codec, _ := hang.DecodeLegacy(p)
			got[h.Sequence] = append(got[h.Sequence], string(codec))
		}
	}
	if strings.Join(got[3], ",") != "g3/f2,g3/f3,g3/f4" || strings.Join(got[4], ",") != "g4/f0" || starts[3] != 2 || starts[4] != 0 {
		t.Fatalf("served %v with frame starts %v; want group 3 from frame 2 (header 2) and group 4 frame 0", got, starts)
	}

	// FETCH group 3 frames 1..2.
	fs, _ := conn.OpenStreamSync(ctx)
	f := wire.Fetch{Broadcast: "bbb", Track: "video", Group: 3, FrameStart: 1, FrameEnd: wire.Some(2)}
	fs.Write(f.AppendFor([]byte{wire.StreamFetch}, wire.Lite06))
	fr := wire.NewFrameReader(bufio.NewReader(fs), wire.Lite06)
	var fetched []string
	for {
		p, err := fr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		_, codec, _ := hang.DecodeLegacy(p)
		fetched = append(fetched, string(codec))
	}
	if strings.Join(fetched, ",") != "g3/f1,g3/f2" {
		t.Fatalf("FETCH frames 1..2 gave %v", fetched)
	}
	// A range the group does not hold is reset, never a shorter run.
	fs, _ = conn.OpenStreamSync(ctx)
	f = wire.Fetch{Broadcast: "bbb", Track: "video", Group: 4, FrameStart: 5}
	fs.Write(f.AppendFor([]byte{wire.StreamFetch}, wire.Lite06))
	if _, err := io.ReadAll(fs); err == nil {
		t.Fatal("FETCH of frames beyond the group: FIN, want a reset")
	}
}

// lite06Broadcast is broadcast "bbb" with track "video": group 3 of five
// frames, group 4 of two, each frame's payload naming it.
func lite06Broadcast(t *testing.T) *model.Broadcast {
	b := model.NewBroadcast("bbb")
	video := b.CreateTrack("video")
	video.SetKeepGroups(100)
	for _, g := range []uint64{3, 4} {
		grp, err := video.CreateGroup(g)
		if err != nil {
			t.Fatal(err)
		}
		for i := range map[uint64]int{3: 5, 4: 2}[g] {
			ts := int64(g)*1_000_000 + int64(i)*33_000
			if err := grp.WriteFrame(model.Frame{Timestamp: ts, Payload: []byte(fmt.Sprintf("g%d/f%d", g, i))}); err != nil {
				t.Fatal(err)
			}
		}
		grp.Close(nil)
	}
	return b
}

// expectBytes reads len(want) bytes from r and compares them.
func expectBytes(t *testing.T, r io.Reader, want string) {
	t.Helper()
	w := mustHex(t, want)
	got := make([]byte, len(w))
	if _, err := io.ReadFull(r, got); err != nil || !bytes.Equal(got, w) {
		t.Fatalf("read % x, %v; want %s", got, err, want)
	}
}

// TestGoAwayRulesCloseTheSession: a client's GOAWAY naming a URI, and a
// second GOAWAY, close the session with PROTOCOL_VIOLATION (lite-06
// §5.1.6); a first empty one does not.
func TestGoAwayRulesCloseTheSession(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		uris  []string
		fatal bool
	}{
		{"one empty GOAWAY", []string{""}, false},
		{"a client names a URI", []string{"moqt://elsewhere/"}, true},
		{"a second GOAWAY", []string{"", ""}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := startVersionServer(t, "lite-06")
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			conn, err := quic.DialAddr(ctx, srv.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"moq-lite-06"}}, quicConfig(0, 0))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.CloseWithError(0, "")
			peer, err := srv.Accept(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer peer.Close()
			for _, uri := range tt.uris {
				str, err := conn.OpenStreamSync(ctx)
				if err != nil {
					t.Fatal(err)
				}
				str.Write((&wire.Goaway{URI: uri}).Append([]byte{wire.StreamGoaway}))
				str.Close()
			}
			select {
			case <-conn.Context().Done():
				var ae *quic.ApplicationError
				if !tt.fatal || !errors.As(context.Cause(conn.Context()), &ae) || ae.ErrorCode != SessionProtocolViolation {
					t.Fatalf("closed with %v", context.Cause(conn.Context()))
				}
			case <-time.After(time.Second):
				if tt.fatal {
					t.Fatal("the session survived")
				}
			}
		})
	}
}
