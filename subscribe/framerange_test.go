package subscribe

import (
	"context"
	"crypto/tls"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/model"
)

// fetchesServed returns what the publisher's log says it served for each
// FETCH of group seq: the first frame asked and the frames sent.
func fetchesServed(log string, seq uint64) (from, frames []int) {
	re := regexp.MustCompile(fmt.Sprintf(`msg="moq: fetch served" track=a group=%d from=(\d+) frames=(\d+)`, seq))
	for _, m := range re.FindAllStringSubmatch(log, -1) {
		f, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[2])
		from, frames = append(from, f), append(frames, n)
	}
	return from, frames
}

// TestAResumeFetchesOnlyTheFramesAnOutageCutFromAGroup: the client holds
// the first two of group 1's five frames when the network drops; the
// publisher finishes group 1 and writes groups 2-5 during the outage. Over
// lite-06 the resumed subscription first fetches group 1's newest held
// frame (frame 1: its timestamp proves the publisher is the same one and
// still holds the group), asks from group 1 frame 2 (the publisher starts
// at its latest group, 6), and fetches group 1 from frame 2: the 3 frames
// it missed. lite-05 has no frame range and fetches all 5. Either way the
// client ends with every frame, in order, and nothing lost.
func TestAResumeFetchesOnlyTheFramesAnOutageCutFromAGroup(t *testing.T) {
	for _, tc := range []struct {
		version      string
		from, frames []int // the FETCHes of cut group 1
	}{
		{version: "lite-06", from: []int{1, 2}, frames: []int{1, 3}},
		{version: "lite-05", from: []int{0}, frames: []int{5}},
	} {
		t.Run(tc.version, func(t *testing.T) {
			checkGoroutines(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			r := newOutageRig(t, ctx, 1000, func(o *Options) { o.Versions = []string{tc.version} })
			for i := range 3 {
				r.frame(0, i)
			}
			r.frame(1, 0)
			r.frame(1, 1)
			r.readUntil(110_000)
			r.outage(func() {
				for i := 2; i < 5; i++ {
					r.frame(1, i)
				}
				for seq := uint64(2); seq < 6; seq++ {
					for i := range 5 {
						r.frame(seq, i)
					}
				}
				r.frame(6, 0)
			})
			waitFor(t, "the resumed subscription", func() bool { return strings.Contains(r.logs.String(), "fetched the groups missed") })
			r.frame(6, 1)
			r.readUntil(610_000)
			if !strings.Contains(r.logs.String(), " version=moq-"+tc.version) {
				t.Fatalf("the session did not speak moq-%s", tc.version)
			}

			var got, want []int64
			for seq := range int64(7) {
				n := int64(5)
				switch seq {
				case 0:
					n = 3
				case 6:
					n = 2
				}
				for i := range n {
					want = append(want, seq*100_000+i*10_000)
				}
			}
			for _, e := range r.events {
				if e.Kind != model.EventFrame {
					t.Fatalf("event %+v in a recording that lost nothing", e)
				}
				got = append(got, e.Frame.Timestamp)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("frames\n got %v\nwant %v", got, want)
			}
			from, frames := fetchesServed(r.served.String(), 1)
			if fmt.Sprint(from, frames) != fmt.Sprint(tc.from, tc.frames) {
				t.Fatalf("FETCHes of cut group 1: from %v, frames %v; want from %v, frames %v", from, frames, tc.from, tc.frames)
			}
			for seq := uint64(2); seq < 6; seq++ {
				if from, frames := fetchesServed(r.served.String(), seq); fmt.Sprint(from, frames) != "[0] [5]" {
					t.Fatalf("FETCHes of missed group %d: from %v, frames %v; want the whole group once", seq, from, frames)
				}
			}
			if n := r.client.LostGroups(); n != 0 {
				t.Fatalf("LostGroups() = %d", n)
			}
		})
	}
}

// TestAResumeInsideTheLiveGroupGetsOnlyItsMissingFrames: the network drops
// while the publisher writes group 1, of which the client holds two frames,
// and group 1 is still being written when the client resubscribes. Over
// lite-06 it checks the publisher with one frame (a FETCH of frame 1) and
// asks from that frame, group 1 frame 1: the group's stream brings frames
// 1 on (GROUP Frame Start 1), the reader skips frame 1, which it holds,
// nothing else of the group is sent again, and every frame arrives in
// order, once.
func TestAResumeInsideTheLiveGroupGetsOnlyItsMissingFrames(t *testing.T) {
	checkGoroutines(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := newOutageRig(t, ctx, 1000, func(o *Options) { o.Versions = []string{"lite-06"} })
	for i := range 3 {
		r.frame(0, i)
	}
	r.frame(1, 0)
	r.frame(1, 1)
	r.readUntil(110_000)
	r.outage(func() {
		r.frame(1, 2)
		r.frame(1, 3)
	})
	r.frame(1, 4)
	r.readUntil(140_000) // group 1 is the latest group until the client is back
	r.frame(2, 0)
	r.readUntil(200_000)
	var got []int64
	for _, e := range r.events {
		if e.Kind != model.EventFrame {
			t.Fatalf("event %+v in a recording that lost nothing", e)
		}
		got = append(got, e.Frame.Timestamp)
	}
	if want := "[0 10000 20000 100000 110000 120000 130000 140000 200000]"; fmt.Sprint(got) != want {
		t.Fatalf("frames\n got %v\nwant %s", got, want)
	}
	if from, frames := fetchesServed(r.served.String(), 1); fmt.Sprint(from, frames) != "[1] [1]" {
		t.Fatalf("FETCHes of group 1: from %v, frames %v; want only the check of frame 1", from, frames)
	}
	if !strings.Contains(r.logs.String(), `msg="moq: completing a cut group"`) || !strings.Contains(r.logs.String(), "group=1 have=2 frame_start=1") {
		t.Fatalf("group 1's stream did not resume at frame 1, the newest held")
	}
	if n := r.client.LostGroups(); n != 0 {
		t.Fatalf("LostGroups() = %d", n)
	}
}

// TestALiveJoinWithAMaxAgeGetsTheGroupsItDoesNotExpire: the publisher
// holds groups 0-9 of 100 ms (five frames 10 ms apart; the newest frame
// at 940 ms). A live join gets the newest group only; over lite-06 a max
// age of 350 ms hands back every group whose successor began less than
// 350 ms before that frame, groups 5-8, with the live one: the client's
// track holds them, whole, and none older. lite-05 has no max age (its
// max latency does not reach back): the newest group only.
func TestALiveJoinWithAMaxAgeGetsTheGroupsItDoesNotExpire(t *testing.T) {
	for _, tc := range []struct {
		version string
		maxAge  time.Duration
		first   uint64
	}{
		{version: "lite-06", maxAge: 350 * time.Millisecond, first: 5},
		{version: "lite-06", maxAge: 0, first: 9},
		{version: "lite-06", maxAge: time.Hour, first: 0},
		{version: "lite-05", maxAge: 350 * time.Millisecond, first: 9},
	} {
		t.Run(fmt.Sprintf("%s/%v", tc.version, tc.maxAge), func(t *testing.T) {
			checkGoroutines(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			pb := model.NewBroadcast("live")
			src := pb.CreateTrack("a")
			src.SetKeepGroups(100)
			var open *model.Group
			for seq := range uint64(10) {
				g, err := src.CreateGroup(seq)
				if err != nil {
					t.Fatal(err)
				}
				for i := range 5 {
					if err := g.WriteFrame(model.Frame{Timestamp: int64(seq)*100_000 + int64(i)*10_000, Payload: fmt.Appendf(nil, "g%d-f%d", seq, i)}); err != nil {
						t.Fatal(err)
					}
				}
				if seq < 9 {
					g.Close(nil)
				}
				open = g
			}
			cert, pin, err := SelfSignedCert()
			if err != nil {
				t.Fatal(err)
			}
			srv, err := Listen("127.0.0.1:0", ServerOptions{Certificates: []tls.Certificate{cert}, Logger: testLogger(t),
				DisableWebTransport: true, Publish: []*model.Broadcast{pb}})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			go func() {
				for {
					if _, err := srv.Accept(context.Background()); err != nil {
						return
					}
				}
			}()
			client, err := Dial(ctx, "moql://"+srv.Addr().String()+"/", Options{TLSFingerprint: pin, Logger: testLogger(t), Versions: []string{tc.version},
				MaxLatency: tc.maxAge, container: func(string, string) string { return "legacy" }})
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			tr, err := client.Broadcast("live").Track("a")
			if err != nil {
				t.Fatal(err)
			}
			tr.SetKeepGroups(100) // no reader: the groups stay to be looked at
			// The live frame comes after the subscription is served.
			waitFor(t, "the first group", func() bool { return tr.NewestGroup() != nil })
			if err := open.WriteFrame(model.Frame{Timestamp: 950_000, Payload: []byte("g9-f5")}); err != nil {
				t.Fatal(err)
			}
			held := func(seq uint64) []int64 {
				g := tr.Group(seq)
				if g == nil {
					return nil
				}
				frames, _, _ := g.Frames(0)
				var ts []int64
				for _, f := range frames {
					ts = append(ts, f.Timestamp)
				}
				return ts
			}
			want := func(seq uint64) []int64 {
				var ts []int64
				for i := range int64(5) {
					ts = append(ts, int64(seq)*100_000+i*10_000)
				}
				if seq == 9 {
					ts = append(ts, 950_000)
				}
				return ts
			}
			waitFor(t, "the groups the max age keeps, whole", func() bool {
				for seq := tc.first; seq < 10; seq++ {
					if fmt.Sprint(held(seq)) != fmt.Sprint(want(seq)) {
						return false
					}
				}
				return true
			})
			for seq := range tc.first {
				if h := held(seq); h != nil {
					t.Fatalf("group %d, older than the max age keeps, arrived: %v", seq, h)
				}
			}
		})
	}
}
