package session

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/model"
)

// graceHost is a resume test's host with a session's resume window (30 s,
// the default): how far back a restart's fill may reach.
type graceHost struct{ *resumeHost }

func (h graceHost) Config() *RemoteConfig {
	cfg := h.resumeHost.Config()
	cfg.ResumeGrace = 30 * time.Second
	return cfg
}

// TestAResumeOfATrackThatReceivedNothingFillsFromWhereItsSubscriptionStarted:
// the publisher accepted the track's subscription, naming group 100 as its
// first, and the connection was lost before any group of it came (a
// machine stalled past QUIC's idle timeout: seam25's draft-19 matrix cases
// at load 40). The resumed subscription starts at group 110. The track
// holds nothing to compare with the publisher, and the sequence goes on:
// the same publisher, whose groups 100-109 are fetched and read in order,
// then the live ones. Taken for a restarted publisher, the resume reached
// back over its whole resume window instead (the log's "fetched the
// restarted publisher's groups before the live one ... groups=562"), and a
// recording asked for 2.5 s of media from its join recorded 12 s of audio
// from before it. A publisher whose sequence went back did restart: its
// new groups before the live one are fetched as after any restart. A
// publisher that named no start before the loss (our moq-lite publisher
// answers once the group has a frame) leaves the track to start where the
// resumed subscription does.
func TestAResumeOfATrackThatReceivedNothingFillsFromWhereItsSubscriptionStarted(t *testing.T) {
	for _, tc := range []struct {
		name         string
		unnamed      bool // the publisher named no start (moq-lite's answer not come yet)
		start, first uint64
		want         [2]uint64 // the groups read, [from, to)
		newTimeline  bool
	}{
		{"the sequence went on", false, 100, 110, [2]uint64{100, 110}, false},
		{"the resumed subscription starts where the first did", false, 100, 100, [2]uint64{100, 100}, false},
		{"the sequence went back: a restart", false, 100, 40, [2]uint64{0, 40}, true},
		{"no start was named: the resumed subscription's is the track's", true, 0, 110, [2]uint64{110, 110}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// One-frame audio groups, 21.333 ms apart.
			frame := func(seq uint64) model.Frame {
				return model.Frame{Timestamp: int64(seq) * 21_333, Payload: fmt.Appendf(nil, "g%d", seq)}
			}
			fam := &servingFamily{ctx: ctx, groups: map[uint64][]hang.Object{}}
			for seq := range uint64(120) {
				f := frame(seq)
				fam.groups[seq] = []hang.Object{{Payload: hang.AppendLOC(nil, f.Timestamp, f.Payload)}}
			}
			pack, err := hang.NewTrack(hang.LOC, nil)
			if err != nil {
				t.Fatal(err)
			}
			host := &resumeHost{ctx: ctx}
			defer host.wg.Wait()
			tr := model.NewTrack("aac")
			tr.SetKeepGroups(1)
			rt := &Remote{Host: graceHost{host}, Broadcast: "b", Name: "aac", Track: tr, Pack: pack}
			c := tr.Subscribe(time.Hour)
			defer c.Close()

			// The first subscription: accepted, its first group named,
			// then the loss before any group came.
			at := AttemptTrack{R: rt, C: fam}
			at.GoLive()
			if !tc.unnamed {
				at.Start(tc.start)
			}
			rt.hold()

			rt.resume(ctx, fam, hang.Timescale, tc.first)
			rt.release()

			var got []string
			disc := 0
			for ev, ok := c.Next(); ok; ev, ok = c.Next() {
				switch ev.Kind {
				case model.EventFrame:
					got = append(got, string(ev.Frame.Payload))
				case model.EventDiscontinuity:
					disc++
				}
			}
			var want []string
			for seq := tc.want[0]; seq < tc.want[1]; seq++ {
				want = append(want, string(frame(seq).Payload))
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("read %d frames\n got %v\nwant %v\nlog:\n%s", len(got), got, want, host.String())
			}
			if restarted := strings.Contains(host.String(), "restarted publisher"); restarted != tc.newTimeline {
				t.Errorf("taken for a restarted publisher: %v, want %v; log:\n%s", restarted, tc.newTimeline, host.String())
			}
			if n := host.lost.Load(); n != 0 {
				t.Errorf("%d groups counted lost", n)
			}
		})
	}
}
