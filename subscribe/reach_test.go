package subscribe

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/udpproxy"
	"github.com/moq-export/moq-export/model"
)

// TestLongOutageLosesAtMostTheOutagePlusThreeSeconds: the network between
// a recorder and its publisher drops everything for 7 s, longer than the
// publisher keeps its groups, while the redial backoff stands where a long
// outage leaves it (backoffFrom: 10-30 s between dials here, 5-10 s by
// default). The first redial, at once, times out in its handshake; the
// next would come 10-30 s later. The probes notice the network's return
// instead, and the session redials at once: the video's hole, from the
// last frame before the outage to the first after it, is at most the
// outage plus 3 s (measured, not assumed: the outage is timed as it
// happened). Before the probes the hole was at least the outage plus 8 s.
func TestLongOutageLosesAtMostTheOutagePlusThreeSeconds(t *testing.T) {
	t.Parallel()
	checkGoroutines(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := model.NewBroadcast("live")
	pubCtx, stopPub := context.WithCancel(ctx)
	defer stopPub()
	go demo.Publish(pubCtx, b, demo.Options{Realtime: true, Renditions: []string{"h264"}, KeepGroups: 1})
	srv, _, pin, err := ServeLoopback(b, ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	px, err := udpproxy.New(srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	logs := &logBuffer{}
	s, err := Dial(ctx, "moql://"+px.Addr()+"/", Options{TLSFingerprint: pin, Logger: logs.logger(),
		KeepAlive: 200 * time.Millisecond, IdleTimeout: time.Second,
		Reconnect:   Backoff{Min: 250 * time.Millisecond, Max: 30 * time.Second},
		backoffFrom: 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	}()
	tr, err := s.Broadcast("live").Track("h264")
	if err != nil {
		t.Fatal(err)
	}
	c := tr.Subscribe(time.Hour)
	defer c.Close()
	var last int64
	frames := func(stop func(model.Frame) bool) {
		t.Helper()
		if _, err := readEvents(ctx, c, func(evs []model.Event) bool {
			ev := evs[len(evs)-1]
			if ev.Kind != model.EventFrame {
				return false
			}
			last = ev.Frame.Timestamp
			return stop(ev.Frame)
		}); err != nil {
			t.Fatal(err)
		}
	}
	var first int64 = -1
	frames(func(f model.Frame) bool {
		if first < 0 {
			first = f.Timestamp
		}
		return f.Timestamp-first >= 2_000_000
	})

	px.Blackhole(true)
	began := time.Now()
	waitFor(t, "the loss to be noticed", func() bool { return strings.Contains(logs.String(), "connection lost") })
	// What arrived before the outage.
	for {
		ev, ok := c.Next()
		if !ok {
			break
		}
		if ev.Kind == model.EventFrame {
			last = ev.Frame.Timestamp
		}
	}
	before := last
	time.Sleep(7*time.Second - time.Since(began))
	px.Blackhole(false)
	outage := time.Since(began)
	back := time.Now()
	frames(func(f model.Frame) bool { return f.Timestamp > before+outage.Microseconds()/2 })
	after := last
	hole := time.Duration(after-before) * time.Microsecond
	t.Logf("outage %v; video hole %v (%.3f-%.3f s); reconnected %v after the network came back",
		outage.Round(time.Millisecond), hole.Round(time.Millisecond), float64(before)/1e6, float64(after)/1e6,
		time.Since(back).Round(time.Millisecond))
	if hole > outage+3*time.Second {
		t.Errorf("a hole of %v after a %v outage: more than the outage plus 3 s", hole, outage)
	}
	if hole < outage-time.Second {
		t.Errorf("a hole of %v after a %v outage: the publisher kept groups it should not have", hole, outage)
	}
	if !strings.Contains(logs.String(), "the peer answers again") {
		t.Errorf("the return was not noticed by a probe")
	}
}
