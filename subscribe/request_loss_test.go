package subscribe

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/udpproxy"
	"github.com/moq-export/moq-export/model"
)

// The requests a blackhole takes with its connection: made into a dead
// connection that QUIC has not found silent yet, they time out first. A
// timeout is no answer from the peer: the request is made again on the
// next connection, not taken for a refusal that ends the track (or the
// gap fill) for good.

// lossyRequests are the timings of these tests: a request times out after
// 1 s, well before the connection finds its peer silent (at least the
// idle timeout, 3 s after the last packet received).
func lossyRequests(o *Options) {
	o.RequestTimeout = time.Second
	o.KeepAlive, o.IdleTimeout = time.Second, 3*time.Second
}

// blackholeUntilLost returns a gate for the client's log: from the first
// line containing trigger ("": at once) on, the network drops everything
// until the next line that says the connection was lost.
func blackholeUntilLost(r *outageRig, trigger string) func(line []byte) {
	var mu sync.Mutex
	armed := trigger == ""
	if armed {
		r.proxy.Blackhole(true)
	}
	return func(line []byte) {
		mu.Lock()
		defer mu.Unlock()
		s := string(line)
		switch {
		case !armed && strings.Contains(s, trigger):
			armed = true
			r.proxy.Blackhole(true)
		case armed && strings.Contains(s, "connection lost"):
			r.proxy.Blackhole(false)
		}
	}
}

// TestATrackRequestLostWithItsConnectionIsMadeAgainOnTheNextOne: the
// network drops everything right after the dial, before the client asks
// for the track (TRACK on moq-lite, SUBSCRIBE on moq-transport), or for the
// catalog that tells a loc track's container. The request times out before
// the connection is found dead; the client asks again on the next
// connection (the track's wait for the catalog goes on there) and gets the
// track's frames, read in its container. (Before: "request refused ... no
// TRACK_INFO within the request timeout", and the track ended for good;
// with that fixed, "track not in the catalog, assuming the legacy
// container", and the loc payloads were read as legacy.)
func TestATrackRequestLostWithItsConnectionIsMadeAgainOnTheNextOne(t *testing.T) {
	cat, err := demo.CatalogIn([]string{"a=h264"}, catalog.ContainerLOC)
	if err != nil {
		t.Fatal(err)
	}
	data, err := cat.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, lost := range []struct {
		name    string
		catalog bool   // the container comes from the catalog (loc)
		says    string // what the client's log says of the lost request
	}{
		{"the track's request", false, "a request that timed out went with its connection"},
		{"the catalog's wait", true, "the catalog's wait went with its connection"},
	} {
		for _, fam := range fillFamilies {
			t.Run(lost.name+"/"+fam.name, func(t *testing.T) {
				checkGoroutines(t)
				ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
				defer cancel()
				tweak := func(*Options) {}
				if lost.catalog {
					tweak = func(o *Options) { o.container = nil }
				}
				r := newOutageRigThen(t, ctx, 1000, func(r *outageRig) {
					if lost.catalog {
						g, err := r.pb.CreateTrack(catalog.TrackName).AppendGroup()
						if err != nil {
							t.Fatal(err)
						}
						g.WriteFrame(model.Frame{Payload: data})
					}
					r.logs.setGate(blackholeUntilLost(r, ""))
				}, fam.opts, lossyRequests, tweak)
				r.frame(0, 0)
				r.frame(0, 1)
				r.readUntil(10_000)
				r.checkEvery([]string{"g0-f0", "g0-f1"})
				logs := r.logs.String()
				if !strings.Contains(logs, lost.says) {
					t.Fatalf("the log does not say %q:\n%s", lost.says, logs)
				}
				for _, bad := range []string{"subscription failed", "assuming the legacy container"} {
					if strings.Contains(logs, bad) {
						t.Fatalf("the log says %q:\n%s", bad, logs)
					}
				}
			})
		}
	}
}

// TestAFetchOfTheGapFillLostWithItsConnectionIsMadeAgainOnTheNextOne:
// after an outage the client resubscribes; then the network drops
// everything again, before the FETCH that checks the publisher is the same
// one (of the newest group the client holds), or before the FETCHes of
// the groups missed. The FETCH times out before the connection is found
// dead; the next connection's resume checks and fills again, and the
// client gets every frame, in order, with nothing lost. (Before, on
// moq-transport, whose FETCH has a request timeout: the missed groups
// were "no longer served", a gap.)
func TestAFetchOfTheGapFillLostWithItsConnectionIsMadeAgainOnTheNextOne(t *testing.T) {
	for _, lost := range []struct{ name, before string }{
		{"the check", "resuming after the connection's loss"},
		{"the fill", "fetching the groups missed"},
	} {
		for _, fam := range fillFamilies {
			t.Run(lost.name+"/"+fam.name, func(t *testing.T) {
				checkGoroutines(t)
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				r := newOutageRig(t, ctx, 1000, fam.opts, lossyRequests)
				r.group(0, 5).Close(nil)
				r.group(1, 5).Close(nil)
				r.readUntil(r.step + 40_000)
				r.outage(func() {
					for seq := uint64(2); seq <= 5; seq++ {
						r.group(seq, 5).Close(nil)
					}
					// The second loss, as the resumed subscription
					// asks its first FETCH.
					r.logs.setGate(blackholeUntilLost(r, lost.before))
				})
				r.waitLog("the connection was lost while", 1)
				waitWithin(t, 2*r.silenceTimeout()+10*time.Second, "the second reconnect",
					func() bool { return strings.Count(r.logs.String(), "reconnected") >= 2 })
				r.waitLog("fetched the groups missed", 1)
				r.group(6, 5).Close(nil)
				r.group(7, 1)
				r.readUntil(7 * r.step)
				r.checkEvery(append(payloads(0, 7, 5), "g7-f0"))
			})
		}
	}
}

// TestARequestUnansweredOnALiveConnectionIsATimeout: a publisher that
// never answers TRACK or SUBSCRIBE (as @moq/net does for a track it does
// not have) on a connection that stays up: the track ends with ErrTimeout,
// not ErrRefused, once the connection outlived the time it takes to find
// a silent peer; nothing is dialled again.
func TestARequestUnansweredOnALiveConnectionIsATimeout(t *testing.T) {
	for _, fam := range fillFamilies {
		t.Run(fam.name, func(t *testing.T) {
			checkGoroutines(t)
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			// The connection proves alive within twice its silence
			// timeout: 2 s here.
			r := newOutageRig(t, ctx, 1000, fam.opts, func(o *Options) {
				o.RequestTimeout, o.KeepAlive, o.IdleTimeout = time.Second, 500*time.Millisecond, 1500*time.Millisecond
			})
			// A track the publisher does not answer: looking it up
			// (TRACK on moq-lite, SUBSCRIBE on moq-transport) waits
			// until the test ends.
			release := make(chan struct{})
			r.pb.HandleRequests(func(name string) (*model.Track, error) {
				<-release
				return nil, model.ErrNotFound
			})
			t.Cleanup(func() { close(release) })
			end := trackEnd(t, ctx, r.client, "silent")
			if !errors.Is(end, ErrTimeout) || errors.Is(end, ErrRefused) {
				t.Fatalf("track ended with %v, want ErrTimeout", end)
			}
			if n := strings.Count(r.logs.String(), "reconnected"); n != 0 {
				t.Fatalf("reconnected %d times", n)
			}
		})
	}
}

// TestATrackRequestOfAnAcceptedSessionLostWithItsConnectionEndsWithIt: a
// publisher dialled us, and the network drops everything before we ask
// for its track. The request times out before the connection is found
// dead; the accepted session ends with its connection, and so does the
// track: with the connection's loss, not as a refusal or a timeout.
// (Before: ErrRefused, "no TRACK_INFO within the request timeout".)
func TestATrackRequestOfAnAcceptedSessionLostWithItsConnectionEndsWithIt(t *testing.T) {
	for _, fam := range fillFamilies {
		t.Run(fam.name, func(t *testing.T) {
			checkGoroutines(t)
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			cert, pin, err := SelfSignedCert()
			if err != nil {
				t.Fatal(err)
			}
			logs := &logBuffer{}
			srv, err := Listen("127.0.0.1:0", ServerOptions{Certificates: []tls.Certificate{cert}, Logger: logs.logger(),
				DisableWebTransport: true, RequestTimeout: time.Second, KeepAlive: time.Second, IdleTimeout: 3 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			px, err := udpproxy.New(srv.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer px.Close()
			opts := Options{TLSFingerprint: pin, Role: RolePublisher, Logger: testLogger(t), Reconnect: Backoff{Disabled: true}}
			fam.opts(&opts)
			client, peer := dialAndAccept(t, ctx, srv, "moql://"+px.Addr()+"/", opts)
			defer client.Close()
			pb := model.NewBroadcast("live")
			pb.CreateTrack("a")
			if err := client.Publish(pb); err != nil {
				t.Fatal(err)
			}
			expectAnnounced(t, ctx, peer, "live").Close()
			px.Blackhole(true)
			end := trackEnd(t, ctx, peer, "a")
			if errors.Is(end, ErrRefused) || errors.Is(end, ErrTimeout) {
				t.Fatalf("track ended with %v, want the connection's loss\n%s", end, logs.String())
			}
			t.Logf("track ended with %v", end)
		})
	}
}

// trackEnd subscribes track name of s's broadcast "live" and returns the
// error it ends with.
func trackEnd(t *testing.T, ctx context.Context, s *Session, name string) error {
	t.Helper()
	tr, err := s.Broadcast("live").Track(name)
	if err != nil {
		t.Fatal(err)
	}
	c := tr.Subscribe(time.Minute)
	defer c.Close()
	evs, err := readEvents(ctx, c, func(e []model.Event) bool { return e[len(e)-1].Kind == model.EventEnd })
	if err != nil {
		t.Fatalf("%v: %+v", err, evs)
	}
	return evs[len(evs)-1].Err
}

// TestAGroupCutAfterItsLastFrameIsCompletedThoughThePublisherWritesNothingNew:
// the connection is lost after the client read every frame of the
// publisher's newest group but before that group's end; meanwhile the
// publisher ends the group and writes nothing after it (a sparse track, or
// a publisher that pauses). The next connection must complete the group
// and resume at once, not when the publisher's next group comes. (Before,
// on moq-lite-06: the resumed SUBSCRIBE asked from the group's first frame
// not held, which does not exist; the publisher, rightly, started the
// subscription at its next group and sent SUBSCRIBE_OK only then, so the
// resume, and the fill of any groups missed before it, waited for a group
// that may never come: the hang of
// TestAFetchOfTheGapFillLostWithItsConnectionIsMadeAgainOnTheNextOne
// under load, whose publisher writes its next group only after the fill.)
func TestAGroupCutAfterItsLastFrameIsCompletedThoughThePublisherWritesNothingNew(t *testing.T) {
	for _, fam := range fillFamilies {
		t.Run(fam.name, func(t *testing.T) {
			checkGoroutines(t)
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			r := newOutageRig(t, ctx, 1000, fam.opts)
			r.group(0, 5).Close(nil)
			g1 := r.group(1, 5) // every frame written, its end not yet
			r.readUntil(r.step + 40_000)
			tr, err := r.client.Broadcast("live").Track("a")
			if err != nil {
				t.Fatal(err)
			}
			r.outage(func() { g1.Close(nil) })
			// Nothing new is written: the group's end is all there is
			// to get, and it must come within the resume's request
			// timeout and FETCH (the rig's 10 s wait bounds both).
			waitFor(t, "group 1 to be completed on the next connection", func() bool {
				g := tr.Group(1)
				if g == nil {
					return false
				}
				_, finished, _ := g.Frames(0)
				return finished
			})
			r.group(2, 5).Close(nil)
			r.group(3, 1)
			r.readUntil(3 * r.step)
			r.checkEvery(append(payloads(0, 3, 5), "g3-f0"))
		})
	}
}
