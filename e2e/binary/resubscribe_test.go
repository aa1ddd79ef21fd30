package binary

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAPublisherRestartedOnItsPortGetsEveryTrackSubscribedAgain (issue 26
// item 0): a publisher killed with SIGKILL after 3 s of recording and
// started again on the same port holds its media until every track is
// subscribed, as tools/fleetpub does. A recorder that resubscribed only the
// catalog after the reconnect (what the issue saw: "model: duplicate group"
// for the catalog's group 0, then nothing more for as long as it ran) gets
// no media from it at all. So the new publisher must see the catalog and
// both media tracks subscribed, by one broadcast's recording (-b) and by
// --record-all, and the recording must go on to its end.
func TestAPublisherRestartedOnItsPortGetsEveryTrackSubscribedAgain(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	for _, mode := range []string{"b", "record-all"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			dir := t.TempDir()
			certFile, keyFile, pin := publisherCert(t, dir)
			epoch := time.Now()
			pub := startPublisher(t, ctx, "127.0.0.1:0", certFile, keyFile, epoch)
			file, sel := "out.mkv", []string{"-b", "live", "-o", "out.mkv"}
			if mode == "record-all" {
				file, sel = filepath.Join("rec", "live.mkv"), []string{"--record-all", "-o", "rec/{broadcast}.mkv"}
			}
			r := startRecorder(t, ctx, dir, append([]string{"moql://" + pub.addr + "/", "--tls-fingerprint", pin,
				"--duration", "10s", "-v"}, sel...)...)
			if r.waitMedia(3*time.Second) == 0 {
				r.wait()
				t.Fatalf("no progress past 3 s:\n%s", r.log.String())
			}
			if err := pub.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			pub.cmd.Wait()
			time.Sleep(time.Second)
			pub = startPublisher(t, ctx, pub.addr, certFile, keyFile, epoch, "MOQ_EXPORT_TEST_HOLD=1")
			// The recorder finds the dead connection by its idle timeout
			// (3 s), reconnects and resubscribes; on a loaded machine that
			// may take several seconds more.
			want := []string{"live/catalog.json", "live/h264", "live/aac"}
			var got []string
			for deadline := time.Now().Add(45 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				got = got[:0]
				for _, line := range strings.Split(pub.log.String(), "\n") {
					if id, ok := strings.CutPrefix(line, "subscribed "); ok {
						got = append(got, id)
					}
				}
				if len(got) == len(want) || time.Now().After(deadline) {
					break
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				r.cmd.Process.Kill()
				r.wait()
				t.Fatalf("the restarted publisher saw %v subscribed, want %v: the recorder did not resubscribe every track\n%s",
					got, want, r.log.String())
			}
			if err := r.wait(); err != nil {
				t.Fatalf("exit: %v\n%s", err, r.log.String())
			}
			path := filepath.Join(dir, file)
			decodeAtFileTimes(t, path)
			streams := packetsByCodec(t, path)
			if len(streams) != 2 {
				t.Fatalf("streams %v\n%s", keys(streams), r.log.String())
			}
			for codec, sp := range streams {
				first, last := slices.Min(sp.pts), slices.Max(sp.pts)
				t.Logf("%s: %d packets, %.3f-%.3f s", codec, len(sp.pts), first, last)
				if span := last - first; span < 7 {
					t.Errorf("%s spans %.2fs of the 10 s: the track did not resume after the restart\n%s", codec, span, r.log.String())
				}
			}
		})
	}
}
