package subscribe

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/model"
)

// TestIETFOutageGapIsFetched: over moq-transport, the network drops
// everything while the publisher finishes the group the client had half of
// and writes two more; after the reconnect the missed objects come by
// FETCH (the cut group completed, the missed ones whole) and the client
// has every frame in order with no discontinuity.
func TestIETFOutageGapIsFetched(t *testing.T) {
	for _, alpn := range []string{ietf.Draft14.ALPN(), "moqt-20"} {
		t.Run(alpn, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			r := newOutageRig(t, ctx, 1000, func(o *Options) { o.alpns = []string{alpn} })
			if !strings.HasPrefix(r.client.Version(), "moq-transport-") {
				t.Fatalf("the session runs %s", r.client.Version())
			}
			r.frame(0, 0)
			r.frame(0, 1)
			r.readUntil(10_000)
			r.outage(func() {
				r.frame(0, 2)
				for seq := uint64(1); seq < 3; seq++ {
					for i := range 3 {
						r.frame(seq, i)
					}
				}
				r.frame(3, 0) // the live edge, still open
			})
			waitFor(t, "the resumed subscription", func() bool { return strings.Contains(r.logs.String(), "fetched the groups missed") })
			r.frame(3, 1)
			r.frame(4, 0)
			r.readUntil(400_000)
			var want, got []string
			for seq := range 5 {
				n := 3
				if seq == 3 {
					n = 2
				} else if seq == 4 {
					n = 1
				}
				for i := range n {
					want = append(want, fmt.Sprintf("g%d-f%d", seq, i))
				}
			}
			for _, e := range r.events {
				if e.Kind != model.EventFrame {
					t.Fatalf("event %+v in a recording that lost nothing", e)
				}
				got = append(got, string(e.Frame.Payload))
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("frames\n got %v\nwant %v", got, want)
			}
			if n := r.client.LostGroups(); n != 0 {
				t.Fatalf("LostGroups() = %d", n)
			}
		})
	}
}
