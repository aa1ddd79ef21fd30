package subscribe

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/model"
)

// TestAPublisherRestartedDuringAnOutageIsRecordedFromItsFirstGroupStillHeld:
// while the network is down the publisher restarts (a new timeline, its
// groups numbered from 0 again, its clock elsewhere) and writes groups
// 0-2 and the start of group 3 before the client notices the loss, as a
// publisher back at once does. The resumed subscription starts at group
// 3; the client gets the old timeline, one discontinuity, then every
// frame of the new timeline from group 0 on, in order: the groups sent
// before the client came back are fetched, not lost. The new timeline
// starts below the old one's newest group, and past it (then the group
// the client held last is fetched to tell the publishers apart). A group
// older than the outage could hold (its start 100 s before the next) is
// not fetched: the new timeline starts after it. A publisher that refuses
// FETCH is asked for those groups by a second subscription from Group
// Start 0 through the group before the live one, within
// the same bounds (moq-transport: a SUBSCRIBE of an absolute range); where
// its new numbers passed the old ones, a span subscription of the group
// the client held last tells the publishers apart first, by its timestamps
// (before, the refused probe left the sequence to go by, which took the
// new timeline for the old one going on: issue 26, the reference publisher
// restarted at once; over moq-transport, until its span subscription, the
// refused FETCHes lost the new timeline's groups before the live one).
func TestAPublisherRestartedDuringAnOutageIsRecordedFromItsFirstGroupStillHeld(t *testing.T) {
	cases := []struct {
		name  string
		old   uint64 // groups of the old timeline
		early bool   // the new timeline's group 0 lies 100 s before its group 1
	}{
		{"the new timeline below the old one's newest group", 6, false},
		{"the new timeline past the old one's newest group", 2, false},
		{"a group older than the outage", 6, true},
	}
	const clock = 60_000_000 // where the new timeline's timestamps start
	type family struct {
		name    string
		opts    func(*Options)
		noFetch bool
	}
	var families []family
	for _, fam := range fillFamilies {
		families = append(families, family{fam.name, fam.opts, false})
	}
	for _, fam := range noFetchFamilies {
		families = append(families, family{fam.name + " without FETCH", func(o *Options) { fam.opts(o); o.noFetch = true }, true})
	}
	for _, tc := range cases {
		for _, fam := range families {
			t.Run(tc.name+"/"+fam.name, func(t *testing.T) {
				checkGoroutines(t)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				r := newOutageRig(t, ctx, 1000, fam.opts)
				for seq := range tc.old {
					r.group(seq, 5).Close(nil)
				}
				r.readUntil(int64(tc.old-1)*r.step + 40_000)

				// restarted writes frames [from, to) of the new
				// timeline's group g.
				restarted := func(g *model.Group, from, to int) {
					t.Helper()
					for i := from; i < to; i++ {
						ts := clock + int64(g.Sequence())*r.step + int64(i)*10_000
						if tc.early && g.Sequence() == 0 {
							ts -= 100_000_000
						}
						if err := g.WriteFrame(model.Frame{Timestamp: ts, Payload: fmt.Appendf(nil, "n%d-f%d", g.Sequence(), i)}); err != nil {
							t.Fatal(err)
						}
					}
				}
				create := func(seq uint64) *model.Group {
					t.Helper()
					g, err := r.src.CreateGroup(seq)
					if err != nil {
						t.Fatal(err)
					}
					return g
				}
				var live *model.Group
				r.outage(func() {
					r.src.Discontinuity()
					for seq := range uint64(3) {
						g := create(seq)
						restarted(g, 0, 5)
						g.Close(nil)
					}
					live = create(3)
					restarted(live, 0, 1)
				})
				r.waitLog("resumed on a new timeline", 1)
				restarted(live, 1, 5)
				live.Close(nil)
				restarted(create(4), 0, 1)
				r.readUntil(clock + 4*r.step)

				// The old timeline as far as the client read it (over
				// moq-transport the first subscription started at group 1
				// in 2 of 240 runs under -race: where a first
				// subscription starts is not this test's matter), then
				// the new one.
				want := []string{"discontinuity"}
				from := uint64(0)
				if tc.early {
					from = 1
				}
				for seq := from; seq < 4; seq++ {
					for i := range 5 {
						want = append(want, fmt.Sprintf("n%d-f%d", seq, i))
					}
				}
				want = append(want, "n4-f0")
				var got []string
				for _, e := range r.events {
					switch e.Kind {
					case model.EventFrame:
						got = append(got, string(e.Frame.Payload))
					case model.EventDiscontinuity:
						got = append(got, "discontinuity")
					default:
						t.Fatalf("event %+v", e)
					}
				}
				disc := slices.Index(got, "discontinuity")
				if disc < 1 || got[disc-1] != fmt.Sprintf("g%d-f4", tc.old-1) {
					t.Fatalf("the old timeline does not end with its last frame before the discontinuity: %v", got)
				}
				if old := payloads(0, tc.old, 5); !slices.Equal(got[:disc], old[len(old)-disc:]) {
					t.Fatalf("the old timeline\n got %v\nwant the end of %v", got[:disc], old)
				}
				if got = got[disc:]; fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("frames\n got %v\nwant %v", got, want)
				}
				if how := "subscribed the restarted publisher's groups"; fam.noFetch && !strings.Contains(r.logs.String(), how) {
					t.Fatalf("no line %q", how)
				}
			})
		}
	}
}
