package subscribe

import (
	"context"
	"testing"
	"time"

	"github.com/moq-export/moq-export/model"
)

// TestEndedAnnouncementLetsTheTracksFinish: an "ended" announcement travels
// on its own stream and can overtake the last group streams, so it does not
// cut the broadcast's tracks: a frame the publisher still sends arrives,
// and the broadcast ends when its tracks do (the publisher ending them), or
// at the latest the drain grace period after the announcement.
func TestEndedAnnouncementLetsTheTracksFinish(t *testing.T) {
	for _, tc := range []struct {
		name      string
		endTrack  bool          // the publisher ends the track after the announcement
		grace     time.Duration // drainGrace
		wantEnded time.Duration // the broadcast ends within this of the announcement...
		notBefore time.Duration // ...and not before this
	}{
		{name: "the publisher ends the track", endTrack: true, grace: time.Minute, wantEnded: 20 * time.Second},
		{name: "a track nobody ends", grace: 500 * time.Millisecond, wantEnded: 20 * time.Second, notBefore: 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, pin := startServer(t, "127.0.0.1:0")
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			opts := Options{TLSFingerprint: pin, Logger: testLogger(t), container: func(string, string) string { return "legacy" }}
			opts.drainGrace = tc.grace
			client, peer := dialAndAccept(t, ctx, srv, "moql://"+srv.Addr().String()+"/", opts)
			defer client.Close()
			pb := model.NewBroadcast("b")
			src := pb.CreateTrack("video")
			if err := peer.Publish(pb); err != nil {
				t.Fatal(err)
			}
			remote := client.Broadcast("b")
			tr, err := remote.Track("video")
			if err != nil {
				t.Fatal(err)
			}
			c := tr.Subscribe(time.Hour)
			waitFor(t, "the subscription", func() bool { return peer.pub.pubs.ServingAll() >= 1 })
			g, err := src.AppendGroup()
			if err != nil {
				t.Fatal(err)
			}
			g.WriteFrame(model.Frame{Timestamp: 0, Payload: []byte{1}})
			collect(t, ctx, c, 1)

			peer.Unpublish("b")
			announced := time.Now()
			// The publisher still sends on the track after announcing its end.
			g.WriteFrame(model.Frame{Timestamp: 33_000, Payload: []byte{2}})
			if evs := collect(t, ctx, c, 1); evs[0].Kind != model.EventFrame || evs[0].Frame.Timestamp != 33_000 {
				t.Fatalf("after the ended announcement: %+v, want the frame at 33 ms", evs)
			}
			if tc.endTrack {
				g.Close(nil)
				src.Close(nil)
			}
			select {
			case <-remote.Done():
			case <-time.After(tc.wantEnded):
				t.Fatalf("the broadcast is still open %v after its end was announced", tc.wantEnded)
			}
			if took := time.Since(announced); took < tc.notBefore {
				t.Fatalf("the broadcast ended %v after the announcement, before the grace of %v", took, tc.notBefore)
			}
			if _, err := remote.Track("audio"); err == nil {
				t.Fatal("a track of the ended broadcast could still be requested")
			}
		})
	}
}
