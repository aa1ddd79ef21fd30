package subscribe

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/model"
)

// TestALossBeforeTheFirstGroupResumesFromWhereTheSubscriptionStarted: the
// publisher accepted the track's subscription and named its start, and
// the network dropped before the first group came (a machine stalled past
// the idle timeout right after SUBSCRIBE_OK: seam25's draft-19 matrix
// cases at load 40). The publisher wrote groups meanwhile. After the
// reconnect the reader gets every frame from the group the first
// subscription started at, in order, each its own bytes, and none from
// before it. Taken for a restarted publisher, the resume fetched back over
// its whole resume window, and the recording began with the media of the
// seconds before it was started (groups 0-4 here, on moq-transport and on
// moq-lite-06, whose track goes live before our publisher names its start).
// A moq-transport publisher that refuses FETCH (NOT_SUPPORTED) is asked
// those groups by a SUBSCRIBE of their absolute range instead: before,
// the refused FETCHes marked them lost.
func TestALossBeforeTheFirstGroupResumesFromWhereTheSubscriptionStarted(t *testing.T) {
	for _, c := range []struct {
		v       string
		noFetch bool
	}{
		{"moq-transport-19", false}, {"moq-transport-22", false}, {"moq-lite-06", false}, {"moq-lite-05", false},
		{"moq-transport-19", true}, {"moq-transport-22", true},
	} {
		v, name := c.v, c.v
		if c.noFetch {
			name += " without FETCH"
		}
		t.Run(name, func(t *testing.T) {
			checkGoroutines(t)
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			// Five complete groups before the subscription, and the
			// sixth begun without a frame yet: the subscription starts
			// there, and nothing of it can come before the outage.
			r := newOutageRigThen(t, ctx, 1000, func(r *outageRig) {
				for seq := range uint64(5) {
					for i := range 3 {
						r.frame(seq, i)
					}
				}
				r.open.Close(nil)
				g, err := r.src.CreateGroup(5)
				if err != nil {
					t.Fatal(err)
				}
				r.open = g
			}, func(o *Options) { o.Versions, o.noFetch = []string{v}, c.noFetch })
			// moq-transport's SUBSCRIBE_OK names the group (Largest) at
			// once: the outage waits for it, so that the track is live
			// with nothing received. Our moq-lite publisher answers once
			// the group has a frame, so on moq-lite the outage comes
			// before the answer: lite-06's track is live with no start
			// named, lite-05's subscription is made again on the next
			// connection.
			subscribed := regexp.MustCompile(`msg="moq: subscribed".* track=a group=(\d+)`)
			if strings.HasPrefix(v, "moq-transport") {
				waitFor(t, "the subscription to start", func() bool { return subscribed.MatchString(r.logs.String()) })
			}
			r.outage(func() {
				for seq := uint64(5); seq < 9; seq++ {
					for i := range 3 {
						if seq == 5 {
							// The group is open already.
							ts := int64(seq)*r.step + int64(i)*10_000
							if err := r.open.WriteFrame(model.Frame{Timestamp: ts, Payload: fmt.Appendf(nil, "g%d-f%d", seq, i)}); err != nil {
								t.Fatal(err)
							}
							continue
						}
						r.frame(seq, i)
					}
				}
				r.frame(9, 0)
			})
			r.frame(9, 1)
			r.frame(9, 2)
			r.frame(10, 0)
			r.readUntil(10 * r.step)
			// The line is written once the start is applied, which can
			// be after the reader got the frames (a resumed start logs
			// after the resume): it is waited for.
			var m []string
			waitFor(t, "a subscription to start", func() bool {
				m = subscribed.FindStringSubmatch(r.logs.String())
				return m != nil
			})
			start, _ := strconv.ParseUint(m[1], 10, 64)

			var got, want []string
			for _, e := range r.events {
				switch e.Kind {
				case model.EventFrame:
					if exp := fmt.Sprintf("g%d-f%d", e.Frame.Timestamp/r.step, e.Frame.Timestamp%r.step/10_000); string(e.Frame.Payload) != exp {
						t.Fatalf("frame at %d carries %q", e.Frame.Timestamp, e.Frame.Payload)
					}
					got = append(got, string(e.Frame.Payload))
				default:
					t.Fatalf("event %+v in a recording that lost nothing", e)
				}
			}
			for seq := start; seq <= 10; seq++ {
				for i := range 3 {
					if seq < 10 || i == 0 {
						want = append(want, fmt.Sprintf("g%d-f%d", seq, i))
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("the subscription started at group %d; frames\n got %v\nwant %v", start, got, want)
			}
			if n := r.client.LostGroups(); n != 0 {
				t.Fatalf("LostGroups() = %d", n)
			}
			t.Logf("started at group %d; resumed %d times", start, strings.Count(r.logs.String(), "resuming after"))
		})
	}
}
