package subscribe

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/model"
)

// TestAGroupWhoseStreamIsReadLateIsNotLostAtTheStartOfASubscription forces
// what a loaded machine does now and then: the streams of AAC groups 0 and
// 1 (a group per frame) are accepted in order, but the goroutine of group 0
// is held after its header until the reader got a frame of group 1 or the
// stream of group 1 waits for group 0. A reader that started at group 1
// would lose group 0: SUBSCRIBE_OK named no first group (the track was empty
// when subscribed), so nothing told the reader where to begin.
func TestAGroupWhoseStreamIsReadLateIsNotLostAtTheStartOfASubscription(t *testing.T) {
	for _, c := range []struct{ name, alpn, version string }{
		{"moq-transport-16", "moqt-16", ""},
		{"moq-transport-22", "moqt-22", ""},
		{"moq-lite-06", "", "moq-lite-06"},
		{"moq-lite-03", "", "moq-lite-03"},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkGoroutines(t)
			srv, pin := startServer(t, "127.0.0.1:0")
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var client, peer *Session
			if c.alpn != "" {
				client, peer = dialIETF(t, ctx, srv, pin, c.alpn, "", Options{})
			} else {
				client, peer = dialAndAccept(t, ctx, srv, fmt.Sprintf("moql://%s/", srv.Addr()),
					Options{TLSFingerprint: pin, Versions: []string{c.version}, Logger: testLogger(t)})
				defer client.Close()
			}
			sb := newSampleBroadcast(t, "room/a", "aac")
			if err := peer.Publish(sb.b); err != nil {
				t.Fatal(err)
			}
			ann := expectAnnounced(t, ctx, client, "room/a")
			defer ann.Close()
			b := client.Broadcast("room/a")
			w, err := catalog.Watch(b, catalog.WatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if _, err := w.Next(ctx); err != nil {
				t.Fatal(err)
			}
			tr, err := b.Track("aac")
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the subscription", func() bool { return peer.pub.pubs.ServingAll() == 2 })

			// Hold group 0's stream after its header until group 1 was
			// read or waits for it (at most 10 s: a test that cannot end
			// otherwise).
			release := make(chan struct{})
			var once sync.Once
			free := func() { once.Do(func() { close(release) }) }
			zeroNamed := make(chan struct{})
			named := func(seq uint64) {
				if seq == 0 {
					close(zeroNamed)
					select {
					case <-release:
					case <-time.After(10 * time.Second):
						t.Error("group 0 was held 10 s: neither was group 1 read nor did it wait")
					}
				}
			}
			waiting := func(seq uint64) {
				if seq == 1 {
					free()
				}
			}
			session.HookGroupNamed.Store(&named)
			session.HookOrderWaiting.Store(&waiting)
			defer session.HookGroupNamed.Store(nil)
			defer session.HookOrderWaiting.Store(nil)
			defer free()

			c := tr.Subscribe(time.Hour)
			defer c.Close()
			read := make(chan []model.Event, 1)
			go func() {
				evs, err := readEvents(ctx, c, func(evs []model.Event) bool {
					if e := evs[len(evs)-1]; e.Kind == model.EventFrame && e.Group >= 1 {
						free()
					}
					return false
				})
				if err != nil {
					t.Error(err)
				}
				read <- evs
			}()
			// Group 0 first; groups 1 and 2 once its stream was read up
			// to its header (the publisher may open the streams of groups
			// written at once in any order).
			const groups = 3
			sb.fillFrames(t, "aac", 0, 0, 1)
			select {
			case <-zeroNamed:
			case <-ctx.Done():
				t.Fatal("the stream of group 0 never came")
			}
			sb.fillFrames(t, "aac", 0, 1, groups)
			sb.tracks["aac"].Close(nil)
			evs := <-read
			compareFrames(t, "aac", evs, expectedEvents(sb.samples[0], 0)[:groups])
		})
	}
}
