package subscribe

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/model"
)

// joinLive publishes two seconds of the h264 and aac samples (video GOPs of
// one second, one audio frame per group; the publisher keeps keep groups
// per track), then subscribes to both from a dialled session, as a recorder
// joining a live broadcast does. It returns the subscribed tracks, each
// with a consumer that has not started, once both hold their first group:
// video the GOP that began a second ago, audio its newest frame.
func joinLive(t *testing.T, ctx context.Context, keep int) (video, audio *model.Track, vc, ac *model.Consumer) {
	video, audio, vc, ac, _ = joinLiveSession(t, ctx, keep)
	return
}

func joinLiveSession(t *testing.T, ctx context.Context, keep int) (video, audio *model.Track, vc, ac *model.Consumer, client *Session) {
	t.Helper()
	srv, pin := startServer(t, "127.0.0.1:0")
	t.Cleanup(func() { srv.Close() })
	client, peer := dialAndAccept(t, ctx, srv, fmt.Sprintf("moql://%s/", srv.Addr()), Options{TLSFingerprint: pin, Logger: testLogger(t)})
	t.Cleanup(func() { client.Close() })
	sb := newSampleBroadcast(t, "live", "h264", "aac")
	sb.tracks["aac"].SetKeepGroups(keep)
	sb.fillFrames(t, "h264", 0, 0, 60) // GOPs at 0 s and 1 s
	sb.fillFrames(t, "aac", 0, 0, 94)  // up to 1.98 s
	if err := peer.Publish(sb.b); err != nil {
		t.Fatal(err)
	}
	b := client.Broadcast("live")
	var err error
	if video, err = b.Track("h264"); err != nil {
		t.Fatal(err)
	}
	if audio, err = b.Track("aac"); err != nil {
		t.Fatal(err)
	}
	vc, ac = video.Subscribe(time.Second), audio.Subscribe(time.Second)
	t.Cleanup(func() { vc.Close(); ac.Close() })
	waitFor(t, "first frames", func() bool {
		_, okv := video.OldestTimestamp()
		_, oka := audio.OldestTimestamp()
		return okv && oka
	})
	return video, audio, vc, ac, client
}

func TestBackfillFetchesAudioBackToTheVideoKeyframe(t *testing.T) {
	checkGoroutines(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	video, audio, _, ac := joinLive(t, ctx, 100000)
	key, _ := video.OldestTimestamp()
	if key != 1_000_000 {
		t.Fatalf("video starts at %d, want the keyframe at 1 s", key)
	}
	if ts, _ := audio.OldestTimestamp(); ts < 1_900_000 {
		t.Fatalf("audio starts at %d before backfill, want its newest frame", ts)
	}
	bctx, bcancel := context.WithTimeout(ctx, time.Second)
	defer bcancel()
	if err := audio.Backfill(bctx, key); err != nil {
		t.Fatal(err)
	}
	if ts, _ := audio.OldestTimestamp(); ts > key {
		t.Fatalf("audio starts at %d after backfill, want at or before the video keyframe %d", ts, key)
	}
	evs, err := readEvents(ctx, ac, func(evs []model.Event) bool { return frameCount(evs) >= 48 })
	if err != nil {
		t.Fatal(err)
	}
	const frame = 21_333 // 1024 samples at 48 kHz
	first := evs[0].Frame.Timestamp
	if evs[0].Kind != model.EventFrame || first > key || key-first >= frame {
		t.Fatalf("audio starts at %d (%v), want within one frame before the video keyframe %d", first, evs[0].Kind, key)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Kind != model.EventFrame || evs[i].Frame.Timestamp-evs[i-1].Frame.Timestamp > frame+1 {
			t.Fatalf("event %d: %v at %d after %d: a gap in the backfilled audio", i, evs[i].Kind, evs[i].Frame.Timestamp, evs[i-1].Frame.Timestamp)
		}
	}
}

// TestBackfillStopsQuietlyAtAGroupThePublisherNoLongerHolds: the publisher
// keeps only its 8 newest audio groups and resets the FETCH of older ones;
// the backfill adds the 7 it can get, without a gap, and returns nil.
func TestBackfillStopsQuietlyAtAGroupThePublisherNoLongerHolds(t *testing.T) {
	checkGoroutines(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, audio, _, ac := joinLive(t, ctx, 8)
	if err := audio.Backfill(ctx, 1_000_000); err != nil {
		t.Fatalf("Backfill = %v, want a quiet stop", err)
	}
	seq, ts, _ := audio.OldestGroup()
	if want := mustSample(t, "aac").Frames[86].Timestamp; seq != 86 || ts != want {
		t.Fatalf("oldest audio group %d at %d, want 86, the oldest the publisher kept", seq, ts)
	}
	evs, err := readEvents(ctx, ac, func(evs []model.Event) bool { return frameCount(evs) >= 8 })
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if ev.Kind != model.EventFrame || ev.Group != 86+uint64(i) {
			t.Fatalf("event %d: %v of group %d, want a frame of group %d", i, ev.Kind, ev.Group, 86+i)
		}
	}
}

// TestFetchOfAGroupNotHeldIsResetWithNotFound: FETCH of a group the
// publisher never had is reset with 13, as the reference does, and the
// group the subscription delivered is served whole.
func TestFetchOfAGroupNotHeldIsResetWithNotFound(t *testing.T) {
	checkGoroutines(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, _, _, _, client := joinLiveSession(t, ctx, 100000)
	client.mu.Lock()
	rt := client.remotes["live"].tracks["h264"]
	client.mu.Unlock()
	f, timescale, _ := rt.Current()
	v := wire.ByName(client.Version())
	_, err := rt.Fetch(ctx, f, timescale, 1000)
	if !errors.Is(err, session.ErrNoFetch) || !isResetCode(err, wire.StreamCode(v, CodeNotFound)) ||
		f.RetryReset(err) != session.ResetNotFound {
		t.Fatalf("FETCH of group 1000 (%s): %v, want errNoFetch with reset NOT_FOUND", v.Name, err)
	}
	frames, err := rt.Fetch(ctx, f, timescale, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := mustSample(t, "h264")
	if len(frames) != 30 {
		t.Fatalf("FETCH of group 0: %d frames, want 30", len(frames))
	}
	for i, f := range frames {
		if f.Timestamp != s.Frames[i].Timestamp || string(f.Payload) != string(s.Frames[i].Payload) {
			t.Fatalf("frame %d: ts %d, %d bytes; want ts %d, %d bytes", i, f.Timestamp, len(f.Payload), s.Frames[i].Timestamp, len(s.Frames[i].Payload))
		}
	}
}

func isResetCode(err error, code uint64) bool {
	re, ok := errors.AsType[*ResetError](err)
	return ok && re.Code == code
}
