package record_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
)

// TestServerSourceFollowsEveryPublisher: two publishers connect to one
// server; the source's feed announces both broadcasts, serves each from
// its publisher (its catalog arrives), ends the one whose publisher left,
// refuses a path nobody announced, and ends its feeds when closed.
func TestServerSourceFollowsEveryPublisher(t *testing.T) {
	t.Parallel()
	cert, pin, err := subscribe.SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := subscribe.Listen("127.0.0.1:0", subscribe.ServerOptions{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	src := record.NewServerSource(srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	feed, err := src.Announced(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()

	pubs := map[string]*subscribe.Session{}
	for _, name := range []string{"alice", "bob"} {
		pub, err := subscribe.Dial(ctx, "moql://"+srv.Addr().String()+"/", subscribe.Options{Role: subscribe.RolePublisher, TLSFingerprint: pin})
		if err != nil {
			t.Fatal(err)
		}
		defer pub.Close()
		bc := model.NewBroadcast(name)
		go demo.Publish(ctx, bc, demo.Options{Realtime: true})
		if err := pub.Publish(bc); err != nil {
			t.Fatal(err)
		}
		pubs[name] = pub
	}
	seen := map[string]bool{}
	for len(seen) < 2 {
		a, err := feed.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if a.Active {
			seen[a.Path] = true
		}
	}
	for name := range pubs {
		if _, err := record.FirstCatalog(ctx, src.Broadcast(name)); err != nil {
			t.Errorf("%s: no catalog from its publisher: %v", name, err)
		}
	}
	if err := src.Broadcast("carol").Err(); !errors.Is(err, record.ErrNotAnnounced) {
		t.Errorf("a broadcast nobody announced: %v, want ErrNotAnnounced", err)
	}
	pubs["bob"].Close()
	for {
		a, err := feed.Next(ctx)
		if err != nil {
			t.Fatalf("no end of bob's broadcast: %v", err)
		}
		if a.Path == "bob" && !a.Active {
			break
		}
	}
	src.Close()
	// What was queued (alice's end as her session closed) comes first.
	for {
		a, err := feed.Next(ctx)
		if err != nil {
			if !errors.Is(err, record.ErrSourceClosed) {
				t.Errorf("after Close: %v, want ErrSourceClosed", err)
			}
			break
		}
		if a.Active {
			t.Errorf("after Close: %+v announced", a)
		}
	}
}

// TestAContainerOfOnesOwnNeedsANameAndAFactory: Options.Container is
// refused without New, or under a built-in format's name.
func TestAContainerOfOnesOwnNeedsANameAndAFactory(t *testing.T) {
	t.Parallel()
	out := record.Stream(io.Discard)
	newMuxer := func(io.Writer, record.MuxOptions) (mux.Muxer, error) { return nil, nil }
	for _, c := range []struct {
		format record.Format
		c      *record.Container
		ok     bool
	}{
		{"index", &record.Container{New: newMuxer}, true},
		{"index", &record.Container{}, false},
		{record.MKV, &record.Container{New: newMuxer}, false},
	} {
		_, err := record.New(record.Options{Output: out, Format: c.format, Container: c.c})
		if (err == nil) != c.ok {
			t.Errorf("Format %q, Container %+v: %v", c.format, c.c, err)
		}
	}
}
