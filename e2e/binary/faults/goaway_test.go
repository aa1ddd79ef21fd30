package faults

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
)

// TestRelayGoAwayMidRecordingLosesNoFrame: the relay the recorder reads
// from sends GOAWAY 2 s into the recording and stops 2 s later, as a relay
// drains before a deploy. Without a URI ("reconnect to me") it comes back
// on the same address at once (a restart); with one, the URI names another
// relay serving the same broadcast. Either way the file has no missing
// frame: every stream's packets are evenly spaced from its first to its
// last (no gap as long as one and a half frame durations) over the whole
// recording.
func TestRelayGoAwayMidRecordingLosesNoFrame(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	for _, redirect := range []bool{false, true} {
		name := "SameRelayRestarts"
		if redirect {
			name = "GoAwayNamesAnotherRelay"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			b := model.NewBroadcast("live")
			go demo.Publish(ctx, b, demo.Options{Realtime: true, KeepGroups: 100000})
			cert, pin, err := subscribe.SelfSignedCert()
			if err != nil {
				t.Fatal(err)
			}
			serve := func(addr string) *subscribe.Server {
				srv, err := subscribe.Listen(addr, subscribe.ServerOptions{Certificates: []tls.Certificate{cert},
					Publish: []*model.Broadcast{b}, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { srv.Close() })
				go func() {
					for {
						if _, err := srv.Accept(ctx); err != nil {
							return
						}
					}
				}()
				return srv
			}
			relay := serve("127.0.0.1:0")
			dir := t.TempDir()
			r := cmdtest.StartRecorder(t, ctx, dir, "moql://"+relay.Addr().String()+"/", "--tls-fingerprint", pin, "-b", "live",
				"--duration", "7s", "-o", "out.mkv", "-v")
			r.WaitMedia(2 * time.Second)
			uri := ""
			var next *subscribe.Server
			if redirect {
				next = serve("127.0.0.1:0")
				uri = fmt.Sprintf("moql://%s/", next.Addr())
			}
			if n := relay.GoAway(uri); n != 1 {
				t.Fatalf("GOAWAY sent to %d sessions, want 1", n)
			}
			time.Sleep(2 * time.Second)
			addr := relay.Addr().String()
			relay.Close()
			if !redirect {
				serve(addr) // the relay back after its restart
			}
			if err := r.Wait(); err != nil {
				t.Fatalf("exit: %v\n%s", err, r.Log.String())
			}
			log := r.Log.String()
			if !strings.Contains(log, "GOAWAY") {
				t.Fatalf("the GOAWAY is not in the log\n%s", log)
			}
			path := filepath.Join(dir, "out.mkv")
			cmdtest.Decode(t, path)
			times := packetTimes(t, path)
			if len(times) != 2 {
				t.Fatalf("%d streams", len(times))
			}
			for i, ts := range times {
				step := medianStep(ts)
				gap := largestGap(ts)
				t.Logf("stream %d: %d packets over %.2fs, frame step %v, largest gap %v", i, len(ts), ts[len(ts)-1]-ts[0], step, gap)
				if gap > step*3/2 {
					t.Errorf("stream %d: a gap of %v after %.3fs (frames %v apart): frames are missing\n%s", i, gap, gapStart(ts), step, log)
				}
				if span := ts[len(ts)-1] - ts[0]; span < 6.5 {
					t.Errorf("stream %d spans %.2fs, want about 7s", i, span)
				}
			}
		})
	}
}

// medianStep returns the median distance between neighbouring times: a
// stream's frame duration.
func medianStep(ts []float64) time.Duration {
	var d []float64
	for i := 1; i < len(ts); i++ {
		d = append(d, ts[i]-ts[i-1])
	}
	if len(d) == 0 {
		return 0
	}
	sort.Float64s(d)
	return time.Duration(d[len(d)/2] * float64(time.Second))
}
