package subscribe

import (
	"context"
	"crypto/tls"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/udpproxy"
	"github.com/moq-export/moq-export/model"
)

// TestAVideoTrackIsNotStarvedByTheAudiosStreamsOnALinkTooSlowForBoth: on
// a link that carries less than the broadcast publishes, both tracks fall
// behind; neither may fall behind the other by more than a group. hang's
// audio sends a stream per frame (47 a second), its video a stream per
// group (one a second): when a QUIC sender shares its packets among its
// streams round-robin, the audio gets 47 turns for the video's one, and
// under a CPU hog (which drops packets on loopback and shrinks the
// congestion window) the matrix's video stalled for 13 s while its audio
// kept coming. The recorder holds the audio back for the video up to its
// MaxDelay and then writes it alone: the file lost its video's end.
func TestAVideoTrackIsNotStarvedByTheAudiosStreamsOnALinkTooSlowForBoth(t *testing.T) {
	for _, version := range []string{"moq-lite-03", "moq-lite-06", "moq-transport-22"} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			b := model.NewBroadcast("room/a")
			pubCtx, stopPub := context.WithCancel(ctx)
			var pubDone sync.WaitGroup
			pubDone.Go(func() {
				demo.Publish(pubCtx, b, demo.Options{Realtime: true, Renditions: []string{"h264", "aac"}, KeepGroups: 1000})
			})
			defer pubDone.Wait()
			defer stopPub()
			cert, pin, err := SelfSignedCert()
			if err != nil {
				t.Fatal(err)
			}
			srv, err := Listen("127.0.0.1:0", ServerOptions{Certificates: []tls.Certificate{cert}, Logger: testLogger(t),
				Publish: []*model.Broadcast{b}})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			go func() {
				for {
					if _, err := srv.Accept(ctx); err != nil {
						return
					}
				}
			}()
			px, err := udpproxy.New(srv.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer px.Close()
			client, err := Dial(ctx, fmt.Sprintf("moql://%s/", px.Addr()), Options{TLSFingerprint: pin, Versions: []string{version},
				Logger: testLogger(t), IdleTimeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			rb := client.Broadcast("room/a")
			w, err := catalog.Watch(rb, catalog.WatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if _, err := w.Next(ctx); err != nil {
				t.Fatal(err)
			}
			newest := map[string]*int64{}
			var mu sync.Mutex
			var readers sync.WaitGroup
			for _, name := range []string{"h264", "aac"} {
				tr, err := rb.Track(name)
				if err != nil {
					t.Fatal(err)
				}
				c := tr.Subscribe(time.Hour)
				defer c.Close()
				ts := new(int64)
				*ts = -1
				newest[name] = ts
				rs := model.NewReadySet()
				c.Watch(rs)
				readers.Go(func() {
					for {
						for ev, ok := c.Next(); ok; ev, ok = c.Next() {
							if ev.Kind == model.EventFrame {
								mu.Lock()
								*ts = max(*ts, ev.Frame.Timestamp)
								mu.Unlock()
							}
						}
						select {
						case <-rs.Wakeup():
							rs.Take(nil)
						case <-ctx.Done():
							return
						}
					}
				})
			}
			defer readers.Wait()
			defer cancel()
			waitFor(t, "a frame of each track", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return *newest["h264"] >= 0 && *newest["aac"] >= 0
			})
			// The demo publishes ~45 KB/s on the wire: the link takes
			// half, its queue 100 ms of it, as a router's does.
			px.Limit(22_000, 100*time.Millisecond)
			// Each track's newest frame, every 100 ms for 8 s: the
			// streams go out in the order they were opened, so the
			// video leads the audio by up to a group (1 s), and either
			// may wait a round trip or two for a lost packet.
			const allowed = 2 * time.Second
			worst := time.Duration(0)
			var video, audio int64
			for range 80 {
				time.Sleep(100 * time.Millisecond)
				mu.Lock()
				video, audio = *newest["h264"], *newest["aac"]
				mu.Unlock()
				d := time.Duration(audio-video) * time.Microsecond
				if d < 0 {
					d = -d
				}
				worst = max(worst, d)
			}
			t.Logf("%d datagrams dropped by the link's queue; at the end video at %.3f s, audio at %.3f s; the tracks drifted %v apart at most",
				px.Limited(), float64(video)/1e6, float64(audio)/1e6, worst.Round(time.Millisecond))
			if px.Limited() == 0 {
				t.Errorf("the link dropped nothing: it was not too slow for the broadcast")
			}
			if worst > allowed {
				t.Errorf("one track fell %v behind the other (at the end: video at %.3f s, audio at %.3f s); want %v at most",
					worst.Round(time.Millisecond), float64(video)/1e6, float64(audio)/1e6, allowed)
			}
		})
	}
}
