package interop

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/subscribe"
)

// TestIETFBackfillAgainstTheReferencePublisher: @moq/net 0.3.4 as a
// moq-transport publisher serves no FETCH (its publisher aborts the request
// as an unexpected stream; only draft 20's one-group fill on SUBSCRIBE is
// served, which our live join does not need: its relative filter already
// starts at the current group's first object). A backfill of earlier audio
// must stop quietly within the request timeout, adding nothing, while the
// subscription goes on delivering. (Our own publisher serves FETCH ranges:
// subscribe.TestIETFBackfillFetchesEarlierGroups,
// TestIETFPublisherServesFetchRanges.)
func TestIETFBackfillAgainstTheReferencePublisher(t *testing.T) {
	t.Parallel()
	ref := needReference(t)
	for _, d := range ietfDraftsNamed("Draft14", "Draft20") {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			_, cert := ourCert(t)
			m := sampleBroadcast("interop/ietf-backfill.hang", 1)
			pub := ref.start(ctx, t, "publish", "--manifest", m.write(t), "--listen", "127.0.0.1:0",
				"--cert", cert.certFile, "--key", cert.keyFile, "--alpn", d.alpn)
			port := pub.expect(ctx, "listening", nil).Port
			const requestTimeout = 2 * time.Second
			logs := &lockedBuffer{}
			sess, err := subscribe.Dial(ctx, fmt.Sprintf("moqt://127.0.0.1:%d/", port), subscribe.Options{
				TLSFingerprint: cert.fingerprint, Reconnect: subscribe.Backoff{Disabled: true},
				Versions: []string{d.version}, RequestTimeout: requestTimeout,
				Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			})
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			defer sess.Close()
			audio := audioPastItsFirstSecond(ctx, t, sess, m)
			ac := audio.Subscribe(time.Minute)
			defer ac.Close()
			seq, oldest, _ := audio.OldestGroup()
			if err := audio.Backfill(ctx, oldest-500_000); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(logs.String(), "moq: backfill stopped") || !strings.Contains(logs.String(), "FETCH") {
				t.Fatalf("no refused FETCH in the session log:\n%s", logs.String())
			}
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, "backfill stopped") {
					t.Log(line)
				}
			}
			if s, ts, _ := audio.OldestGroup(); s != seq || ts != oldest {
				t.Fatalf("after the refused backfill the track starts at group %d (%d us), want %d (%d us) unchanged", s, ts, seq, oldest)
			}
			// The subscription still delivers: frames past the ones held.
			_, newest, _ := audio.OldestGroup()
			for {
				ev, ok := ac.Next()
				if ok && ev.Frame.Timestamp > newest+1_000_000 {
					break
				}
				if ctx.Err() != nil {
					t.Fatal("the subscription stopped after the refused backfill")
				}
				if !ok {
					time.Sleep(5 * time.Millisecond)
				}
			}
			checkNegotiated(t, pub, d.version)
		})
	}
}
