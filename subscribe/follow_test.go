package subscribe

import (
	"context"
	"testing"
	"time"

	"github.com/moq-export/moq-export/model"
)

// feedCount is how many announcement feeds s runs.
func (s *Session) feedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.feeds)
}

// followedActive reports whether the feed that the broadcast at path
// follows has it active.
func (s *Session) followedActive(path string) bool {
	s.mu.Lock()
	rb := s.remotes[path]
	var feed *Announcements
	if rb != nil {
		feed = rb.feed
	}
	s.mu.Unlock()
	if feed == nil {
		return false
	}
	feed.mu.Lock()
	defer feed.mu.Unlock()
	return feed.active[path]
}

// TestBroadcastsFollowTheFeedThatCoversThem: a remote broadcast follows
// its announcements on a feed the session already runs under a prefix
// covering its path (the caller's Announced, or another broadcast's), and
// opens one for its own path only when none does. Each one still ends at
// once when its end is announced, also after the caller closed the feed it
// shares, and a feed ends with the last broadcast that follows it.
func TestBroadcastsFollowTheFeedThatCoversThem(t *testing.T) {
	cases := []struct {
		name   string
		caller bool   // the caller follows announcements under prefix
		prefix string //
		paths  []string
		feeds  int // feeds running once every broadcast was made
	}{
		{name: "under the caller's feed", caller: true, prefix: "", paths: []string{"a", "b", "room/c"}, feeds: 1},
		{name: "partly under the caller's feed", caller: true, prefix: "room", paths: []string{"room/a", "room/b", "c"}, feeds: 2},
		{name: "no feed yet", paths: []string{"a", "b"}, feeds: 2},
		{name: "under another broadcast's feed", paths: []string{"room", "room/a", "room/b"}, feeds: 1},
	}
	transports := []struct {
		name string
		dial func(t *testing.T, ctx context.Context, srv *Server, pin string) (client, peer *Session)
	}{
		{"moq-lite", func(t *testing.T, ctx context.Context, srv *Server, pin string) (*Session, *Session) {
			client, peer := dialAndAccept(t, ctx, srv, "moql://"+srv.Addr().String()+"/", Options{TLSFingerprint: pin,
				Logger: testLogger(t), container: func(string, string) string { return "legacy" }})
			t.Cleanup(func() { client.Close() })
			return client, peer
		}},
		{"Draft14", func(t *testing.T, ctx context.Context, srv *Server, pin string) (*Session, *Session) {
			return dialIETF(t, ctx, srv, pin, "moq-00", "", Options{})
		}},
		{"Draft20", func(t *testing.T, ctx context.Context, srv *Server, pin string) (*Session, *Session) {
			return dialIETF(t, ctx, srv, pin, "moqt-20", "", Options{})
		}},
	}
	for _, tr := range transports {
		for _, tc := range cases {
			t.Run(tr.name+"/"+tc.name, func(t *testing.T) {
				srv, pin := startServer(t, "127.0.0.1:0")
				defer srv.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				client, peer := tr.dial(t, ctx, srv, pin)
				for _, p := range tc.paths {
					if err := peer.Publish(model.NewBroadcast(p)); err != nil {
						t.Fatal(err)
					}
				}
				var ann *Announcements
				if tc.caller {
					var err error
					if ann, err = client.Announced(ctx, tc.prefix); err != nil {
						t.Fatal(err)
					}
					defer ann.Close()
					// Every covered path seen active on the caller's feed.
					want := map[string]bool{}
					for _, p := range tc.paths {
						if _, ok := stripPrefix(p, tc.prefix); ok {
							want[p] = true
						}
					}
					for len(want) > 0 {
						a, err := ann.Next(ctx)
						if err != nil {
							t.Fatal(err)
						}
						if !a.Active || !want[a.Path] {
							t.Fatalf("announcement %+v, want one of %v active", a, want)
						}
						delete(want, a.Path)
					}
				}
				remotes := map[string]*model.Broadcast{}
				for _, p := range tc.paths {
					remotes[p] = client.Broadcast(p)
				}
				for _, p := range tc.paths {
					// A feed opened now reports what is active once the
					// peer answered it.
					waitFor(t, p+" active on the feed it follows", func() bool { return client.followedActive(p) })
				}
				if got := client.feedCount(); got != tc.feeds {
					t.Fatalf("%d announcement feeds for %v, want %d", got, tc.paths, tc.feeds)
				}
				if ann != nil {
					// The broadcasts keep following the feed the caller
					// lets go of.
					ann.Close()
					if _, err := ann.Next(ctx); err != ErrClosed {
						t.Fatalf("Next after Close: %v, want ErrClosed", err)
					}
				}
				for i, p := range tc.paths {
					peer.Unpublish(p)
					select {
					case <-remotes[p].Done():
					case <-ctx.Done():
						t.Fatalf("broadcast %q stays open after its end was announced", p)
					}
					for _, q := range tc.paths[i+1:] {
						select {
						case <-remotes[q].Done():
							t.Fatalf("broadcast %q ended with %q", q, p)
						default:
						}
					}
				}
				waitFor(t, "the feeds to end with their broadcasts", func() bool { return client.feedCount() == 0 })
			})
		}
	}
}
