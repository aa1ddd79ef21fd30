package service_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/service"
	"github.com/moq-export/moq-export/internal/testutil/browsertest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
)

// TestTheStatusPageShowsTheLiveRecordingAndPlaysAFinishedMP4 opens the
// status page in headless Chromium: it lists the recording running, whose
// media time advances without a reload, and the finished MP4 of another
// recording plays in the page's <video> (its currentTime advances).
func TestTheStatusPageShowsTheLiveRecordingAndPlaysAFinishedMP4(t *testing.T) {
	t.Parallel()
	b := browsertest.New(t, browsertest.Options{Flags: []string{"autoplay-policy=no-user-gesture-required"}})
	root := t.TempDir()
	s, base := serve(t, service.Options{Root: root})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	// One recording that finishes an MP4, one that goes on.
	short := record.Local(liveDemo(t, "short"))
	r, done := recordAll(t, s, record.Options{Output: mustFiles(t, filepath.Join(root, "{broadcast}.mp4")), Duration: 3 * time.Second}, short, ctx)
	waitFor(t, "the MP4", func() bool { return len(r.Files()) == 1 })
	short.Close()
	if err := <-done; err != nil && !errors.Is(err, record.ErrSourceClosed) {
		t.Fatal(err)
	}
	_, _ = recordAll(t, s, record.Options{Output: mustFiles(t, filepath.Join(root, "{broadcast}.mkv"))}, record.Local(liveDemo(t, "live")), ctx)

	if err := b.Navigate(base + "/"); err != nil {
		t.Fatal(err)
	}
	media := func() float64 {
		var v float64
		if err := b.Eval(`(async () => {
			for (let i = 0; i < 100; i++) {
				const tr = document.querySelector('#live tr[data-broadcast="live"]');
				if (tr && Number(tr.dataset.media) > 0) return Number(tr.dataset.media);
				await new Promise(r => setTimeout(r, 100));
			}
			throw new Error("the live recording is not listed: " + document.body.innerText);
		})()`, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	first := media()
	time.Sleep(2500 * time.Millisecond)
	if second := media(); second < first+1 {
		t.Errorf("the page's media time went from %.2f to %.2f s in 2.5 s: not refreshed", first, second)
	}
	var played struct {
		Src         string  `json:"src"`
		CurrentTime float64 `json:"currentTime"`
		Duration    float64 `json:"duration"`
	}
	if err := b.Eval(`(async () => {
		let v;
		for (let i = 0; i < 100 && !v; i++) {
			v = document.querySelector('#files video');
			if (!v) await new Promise(r => setTimeout(r, 100));
		}
		if (!v) throw new Error("no player: " + document.body.innerText);
		v.muted = true;
		await v.play();
		for (let i = 0; i < 100 && v.currentTime < 1; i++) await new Promise(r => setTimeout(r, 100));
		return {src: v.currentSrc, currentTime: v.currentTime, duration: v.duration};
	})()`, &played); err != nil {
		t.Fatal(err)
	}
	if played.CurrentTime < 1 || played.Duration < 2.5 || filepath.Base(played.Src) != "short.mp4" {
		t.Errorf("the player: %+v; want short.mp4 playing past 1 s of its ~3 s", played)
	}
}

// hlsJS is hls.js from npm, pinned in interop/package.json and installed
// by scripts/install-test-deps.sh (npm ci).
const hlsJS = "../../interop/node_modules/hls.js/dist/hls.min.js"

// TestChromiumPlaysAPackageFromFilesWhileItIsRecordedToItsEnd: hls.js in
// headless Chromium plays an HLS package through the service's /files/
// while the package is recorded (it sees an EVENT playlist), and reaches
// the end once the broadcast ends: every playlist the service hands it is
// the current one, the final one with ENDLIST. The page and hls.js come
// from a test server; every request under /files/ goes to the service's
// handler. The demo publishes H.264 with B-frames and AAC, as by default
// (it published VP9 until 26f400c: before it, hls.js 1.7.4 in Chromium
// presented B-frame H.264 0.1 s early, so a last segment shorter than that
// never buffered and the player never ended).
func TestChromiumPlaysAPackageFromFilesWhileItIsRecordedToItsEnd(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(hlsJS); err != nil {
		msg := "hls.js not installed in interop/node_modules: scripts/install-test-deps.sh installs it (npm ci)"
		if browsertest.Required() {
			t.Fatalf("%s=1 or CI=true: %s", browsertest.RequiredEnv, msg)
		}
		t.Skip(msg)
	}
	b := browsertest.New(t, browsertest.Options{Flags: []string{"autoplay-policy=no-user-gesture-required"}, Timeout: 90 * time.Second})
	root := t.TempDir()
	s, _ := serve(t, service.Options{Root: root})
	mux := http.NewServeMux()
	mux.Handle("/files/", s.Handler())
	mux.HandleFunc("/lib/hls.js", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, hlsJS) })
	mux.HandleFunc("/page.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><html><body><video id="v" muted playsinline width="320"></video><script src="/lib/hls.js"></script></body></html>`)
	})
	base := browsertest.Serve(t, mux)

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	bc := model.NewBroadcast("live")
	pub, stopPub := context.WithCancel(ctx)
	go demo.Publish(pub, bc, demo.Options{Realtime: true, Renditions: []string{"h264", "aac"}})
	src := record.Local(bc)
	_, done := recordAll(t, s, record.Options{Output: mustFiles(t, filepath.Join(root, "{broadcast}", "index.m3u8")),
		HLSSegmentDuration: time.Second}, src, ctx)
	waitFor(t, "the package's second segment", func() bool {
		b, err := os.ReadFile(filepath.Join(root, "live", "v0.m3u8"))
		return err == nil && strings.Count(string(b), "#EXTINF") >= 2
	})
	if err := b.Navigate(base + "/page.html"); err != nil {
		t.Fatal(err)
	}
	var live struct {
		Live bool    `json:"live"`
		Time float64 `json:"time"`
	}
	if err := b.Eval(fmt.Sprintf(browsertest.HLSLive, 1.0, "/files/live/index.m3u8"), &live); err != nil {
		t.Fatal(err)
	}
	if !live.Live {
		t.Fatalf("hls.js did not see the package as live (EVENT) while it was recorded: %+v", live)
	}
	// Two more segments while hls.js plays, then the broadcast ends.
	time.Sleep(2 * time.Second)
	stopPub()
	bc.Close(nil)
	src.Close()
	if err := <-done; err != nil && !errors.Is(err, record.ErrSourceClosed) {
		t.Fatal(err)
	}
	final, err := os.ReadFile(filepath.Join(root, "live", "v0.m3u8"))
	if err != nil || !strings.Contains(string(final), "#EXT-X-ENDLIST") {
		t.Fatalf("the finished package's video playlist: %v\n%s", err, final)
	}
	var end struct {
		Ended  bool    `json:"ended"`
		Time   float64 `json:"time"`
		Frames int     `json:"frames"`
	}
	if err := b.Eval(browsertest.HLSLiveEnd, &end); err != nil {
		t.Fatalf("%v\nthe package, as ffprobe reads it:\n%s", err, describePackage(filepath.Join(root, "live", "index.m3u8")))
	}
	if length := playlistSeconds(string(final)); !end.Ended || end.Frames == 0 || end.Time < length-0.5 {
		t.Fatalf("the package hls.js played while it was recorded ended at %+v; want its end (%.2f s)", end, length)
	}
}

// describePackage says, per stream of the package ffprobe reads from
// playlist, its packets, each step between neighbouring packet times over
// 0.1 s and (when not every packet is one) its keyframes' times: whether a
// hole a player met is in the package.
func describePackage(playlist string) string {
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "packet=stream_index,pts_time,flags", "-of", "csv=p=0", playlist).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("ffprobe: %v: %s", err, out)
	}
	type stream struct{ pts, keys []float64 }
	streams := map[string]*stream{}
	var order []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, ",")
		if len(f) < 3 {
			continue
		}
		pts, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		st := streams[f[0]]
		if st == nil {
			st = &stream{}
			streams[f[0]] = st
			order = append(order, f[0])
		}
		st.pts = append(st.pts, pts)
		if strings.HasPrefix(f[2], "K") {
			st.keys = append(st.keys, pts)
		}
	}
	var b strings.Builder
	for _, id := range order {
		st := streams[id]
		slices.Sort(st.pts)
		var steps []string
		for i := 1; i < len(st.pts); i++ {
			if st.pts[i]-st.pts[i-1] > 0.1 {
				steps = append(steps, fmt.Sprintf("%.3f-%.3f", st.pts[i-1], st.pts[i]))
			}
		}
		fmt.Fprintf(&b, "stream %s: %d packets %.3f-%.3f, steps over 0.1 s %v", id, len(st.pts), st.pts[0], st.pts[len(st.pts)-1], steps)
		if len(st.keys) < len(st.pts) {
			fmt.Fprintf(&b, ", keyframes at %v", st.keys)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// playlistSeconds sums the EXTINF durations of a media playlist.
func playlistSeconds(playlist string) float64 {
	var sum float64
	for _, line := range strings.Split(playlist, "\n") {
		if d, ok := strings.CutPrefix(line, "#EXTINF:"); ok {
			d, _, _ = strings.Cut(d, ",")
			f, _ := strconv.ParseFloat(d, 64)
			sum += f
		}
	}
	return sum
}
