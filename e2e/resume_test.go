package e2e

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/udpproxy"
	"github.com/moq-export/moq-export/subscribe"
)

// TestTheResumeCasesRecorderConnectsThoughItsRoundTripIsLongerThanASecond
// dials a rig publisher with a resume case's recorder options, through a
// proxy that holds every datagram 1 s each way (a 2 s round trip). Under
// the race detector and a CPU hog the rig's own round trip through its
// proxy took 1.4-2.8 s (qlogs of a failed moq-transport-19 SETUP); a
// recorder whose idle timeout was shorter than that lost each connection
// before the answer to its SETUP could come ("read SERVER_SETUP: timeout:
// no recent network activity", three dials in a row), as quic-go takes no
// RTT sample from an ACK slower than its probe timeout and so keeps the
// idle timeout as configured. The SETUP of each control path (the control
// stream of draft 15, the SETUP streams of draft 17 and later, moq-lite's
// ALPN) must be answered, over QUIC and WebTransport.
func TestTheResumeCasesRecorderConnectsThoughItsRoundTripIsLongerThanASecond(t *testing.T) {
	r := newRig(t)
	for _, tc := range []struct{ version, transport string }{
		{"moq-transport-15", transportQUIC},
		{"moq-transport-22", transportQUIC},
		{"moq-transport-22", transportWebTransport},
		{"moq-lite-06", transportQUIC},
	} {
		t.Run(tc.version+"/"+tc.transport, func(t *testing.T) {
			t.Parallel()
			i := slices.IndexFunc(versions, func(v version) bool { return v.name == tc.version })
			c := matrixCase{version: versions[i], packaging: "cmaf", container: "ts", role: roleDial, path: pathResume, transport: tc.transport}
			logs, pubLogs := &logBuffer{}, &logBuffer{}
			opts, _ := r.options(c, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
			addr, stop := r.serve(t, slog.New(slog.NewTextHandler(pubLogs, &slog.HandlerOptions{Level: slog.LevelDebug})))
			defer stop()
			px, err := udpproxy.New(addr)
			if err != nil {
				t.Fatal(err)
			}
			defer px.Close()
			px.Delay(time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			began := time.Now()
			sess, err := subscribe.Dial(ctx, scheme(c.transport)+"://"+px.Addr()+"/", opts)
			if err != nil {
				t.Fatalf("dial over a 2 s round trip: %v\nlog:\n%spublisher log:\n%s", err, logs.tail(), pubLogs.tail())
			}
			defer sess.Close()
			if took := time.Since(began); took < 2*time.Second {
				t.Fatalf("connected in %v, less than the proxy's round trip: it did not hold the datagrams", took)
			}
			if v := sess.Version(); v != tc.version {
				t.Fatalf("connected with %s, want %s", v, tc.version)
			}
		})
	}
}
