package interop

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
)

// TestBackfillFetchesPastAudioFromTheReferencePublisher: our session
// subscribes to the reference publisher's audio (one frame per group) and
// keeps only its newest groups, as a track does before anyone reads it.
// Backfilling half a second before the oldest group it holds must FETCH the
// groups in between from @moq/net, with the published bytes.
func TestBackfillFetchesPastAudioFromTheReferencePublisher(t *testing.T) {
	ref := needReference(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_, cert := ourCert(t)
	m := sampleBroadcast("interop/backfill.hang", 1)
	pub := ref.start(ctx, t, "publish",
		"--manifest", m.write(t), "--listen", "127.0.0.1:0",
		"--cert", cert.certFile, "--key", cert.keyFile, "--close-delay-ms", "1000")
	port := pub.expect(ctx, "listening", nil).Port
	sess, err := subscribe.Dial(ctx, fmt.Sprintf("moql://127.0.0.1:%d/", port), subscribe.Options{
		TLSFingerprint: cert.fingerprint, Reconnect: subscribe.Backoff{Disabled: true},
	})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer sess.Close()
	audio := audioPastItsFirstSecond(ctx, t, sess, m)
	ac := audio.Subscribe(time.Minute) // holds what the backfill adds
	defer ac.Close()
	seq, oldest, _ := audio.OldestGroup()
	target := oldest - 500_000
	bctx, bcancel := context.WithTimeout(ctx, 5*time.Second)
	defer bcancel()
	if err := audio.Backfill(bctx, target); err != nil {
		t.Fatal(err)
	}
	const frame = 21_334
	got, _ := audio.OldestTimestamp()
	if got > target || target-got >= frame {
		t.Fatalf("audio starts at %d after backfill from group %d at %d, want within one frame before %d", got, seq, oldest, target)
	}
	want := map[int64]string{}
	for _, f := range m.track("audio").Frames {
		want[f.TS] = string(f.Data)
	}
	last := got - frame
	for n := 0; ; n++ {
		ev, ok := ac.Next()
		if !ok || ev.Kind != model.EventFrame || ev.Frame.Timestamp >= oldest {
			if n < 23 {
				t.Fatalf("%d frames before %d, want the 24 backfilled", n, oldest)
			}
			break
		}
		ts := ev.Frame.Timestamp
		if want[ts] != string(ev.Frame.Payload) || ts-last > frame {
			t.Fatalf("backfilled frame at %d (after %d) is not the published one that follows", ts, last)
		}
		last = ts
	}
}

// audioPastItsFirstSecond subscribes m's video and audio on sess once the
// broadcast is announced and returns the audio track once it dropped its
// first second (it keeps 8 groups while nobody reads it), so that earlier
// groups are left to a backfill.
func audioPastItsFirstSecond(ctx context.Context, t *testing.T, sess *subscribe.Session, m *manifest) *model.Track {
	t.Helper()
	waitAnnounced(ctx, t, sess, m.Broadcast)
	b := sess.Broadcast(m.Broadcast)
	if _, err := b.Track("video"); err != nil {
		t.Fatal(err)
	}
	audio, err := b.Track("audio")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if seq, _, ok := audio.OldestGroup(); ok && seq >= 60 {
			return audio
		}
		if ctx.Err() != nil {
			t.Fatal("the audio never reached group 60")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
