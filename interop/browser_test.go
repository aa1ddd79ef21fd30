package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/cli"
	"github.com/moq-export/moq-export/internal/testutil/browsertest"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
)

// publishPage embeds @moq/publish 0.2.17's element as its README shows,
// pointed at our --listen through the http:// dev bootstrap, and reads the
// fake camera's frame rate for the test.
const publishPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>moq-export browser publisher</title></head>
<body>
<moq-publish url="http://127.0.0.1:%d/" name="room/alice" source="camera" audio video></moq-publish>
<script type="module" src="publish.js"></script>
<script>
window.cameraRate = navigator.mediaDevices.getUserMedia({video: true}).then((s) => {
  const rate = s.getVideoTracks()[0].getSettings().frameRate;
  s.getTracks().forEach((t) => t.stop());
  return rate;
});
</script>
</body></html>
`

// TestBrowserPublisherIntoListen: headless Chromium with a fake camera and
// microphone loads a page (served from another origin) that embeds
// @moq/publish 0.2.17, whose bundled @moq/net 0.1.9 offers moq-lite-04,
// -03 and moql over WebTransport after fetching /certificate.sha256 (which
// needs our CORS headers). moq-export --listen --record-all records it; the
// file decodes with ffmpeg and has video at the camera's frame rate and
// audio.
func TestBrowserPublisherIntoListen(t *testing.T) {
	needReference(t)
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	bundle := filepath.Join("dist", "browser", "publish.js")
	if _, err := os.Stat(bundle); err != nil {
		t.Fatalf("%s: %v; %s", bundle, err, setupHint)
	}
	b := browsertest.New(t, browsertest.Options{
		Flags:   []string{"use-fake-device-for-media-stream", "use-fake-ui-for-media-stream", "autoplay-policy=no-user-gesture-required"},
		Timeout: 90 * time.Second,
	})

	port := freeDualPort(t)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
	defer cancel()
	// Cancelling run is Ctrl-C: --listen serves until then.
	run, stop := context.WithCancel(ctx)
	defer stop()
	stderr := &lockedBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- cli.Execute(run, []string{"--listen", fmt.Sprintf("127.0.0.1:%d", port), "--record-all",
			"-o", filepath.Join(out, "{broadcast}.mkv"), "--duration", "8s", "-v"},
			cli.Env{Stdout: &bytes.Buffer{}, Stderr: stderr})
	}()
	waitText(t, ctx, stderr, "listening on")

	page := t.TempDir()
	js, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(page, "publish.js"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(page, "index.html"), fmt.Appendf(nil, publishPage, port), 0o644); err != nil {
		t.Fatal(err)
	}
	origin := browsertest.ServeDir(t, page)
	if strings.Contains(origin, fmt.Sprintf(":%d", port)) {
		t.Fatalf("page origin %s is the relay's", origin)
	}
	if err := b.Navigate(origin + "/index.html"); err != nil {
		t.Fatal(err)
	}
	var rate float64
	if err := b.Eval(`window.cameraRate`, &rate); err != nil || rate <= 0 {
		t.Fatalf("camera frame rate %v, %v", rate, err)
	}

	// --duration ends the recording; then the listener is stopped.
	waitText(t, ctx, stderr, "output finished")
	stop()
	var code int
	select {
	case code = <-done:
	case <-ctx.Done():
		t.Fatalf("moq-export --listen did not finish; stderr:\n%s", stderr.String())
	}
	log := stderr.String()
	if code != 0 {
		t.Fatalf("moq-export exit %d; stderr:\n%s", code, log)
	}
	if !strings.Contains(log, "moq-lite-04") {
		t.Errorf("the browser session did not run moq-lite-04; stderr:\n%s", log)
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.mkv"))
	if len(files) != 1 {
		t.Fatalf("recordings %v, want one; stderr:\n%s", files, log)
	}
	mediatest.SystemFFmpeg(t)
	// Every frame decoded, at its own time (a millisecond time base and
	// passthrough: the camera's timestamps jitter around its rate, which
	// an output at 1/rate would take for duplicates).
	if msg, err := exec.Command("ffmpeg", "-v", "error", "-i", files[0], "-enc_time_base:v", "1/1000", "-fps_mode", "passthrough",
		"-f", "null", "-").CombinedOutput(); err != nil || len(bytes.TrimSpace(msg)) > 0 {
		t.Errorf("ffmpeg decoding %s: %v: %s", files[0], err, msg)
	}
	video, audio := probeStreams(t, files[0])
	if video.frames < 30 || video.duration < 2 {
		t.Fatalf("video %+v: want at least 2 s of frames; stderr:\n%s", video, log)
	}
	got := float64(video.frames-1) / video.duration
	if got < rate*0.8 || got > rate*1.2 {
		t.Errorf("video runs at %.1f frames/s (%d frames over %.2f s), the camera at %.1f", got, video.frames, video.duration, rate)
	}
	if audio.frames == 0 || audio.duration < video.duration/2 {
		t.Errorf("audio %+v next to video %+v", audio, video)
	}
	t.Logf("recorded %s: video %s %d frames over %.2f s (%.1f/s, camera %.1f/s), audio %s %d frames over %.2f s",
		filepath.Base(files[0]), video.codec, video.frames, video.duration, got, rate, audio.codec, audio.frames, audio.duration)
}

// probed is one stream of a file as ffprobe decodes it.
type probed struct {
	codec    string
	frames   int
	duration float64 // seconds from the first to the last frame's timestamp
}

// probeStreams decodes every frame of path's first video and audio stream
// and returns their count and time span.
func probeStreams(t *testing.T, path string) (video, audio probed) {
	t.Helper()
	for _, s := range []struct {
		sel string
		out *probed
	}{{"v:0", &video}, {"a:0", &audio}} {
		raw, err := exec.Command("ffprobe", "-v", "error", "-select_streams", s.sel, "-show_entries",
			"frame=pts_time:stream=codec_name", "-of", "json", path).Output()
		if err != nil {
			t.Fatalf("ffprobe %s %s: %v", s.sel, path, err)
		}
		var r struct {
			Streams []struct {
				Codec string `json:"codec_name"`
			} `json:"streams"`
			Frames []struct {
				PTS string `json:"pts_time"`
			} `json:"frames"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Streams) > 0 {
			s.out.codec = r.Streams[0].Codec
		}
		s.out.frames = len(r.Frames)
		if n := len(r.Frames); n > 1 {
			first, _ := strconv.ParseFloat(r.Frames[0].PTS, 64)
			last, _ := strconv.ParseFloat(r.Frames[n-1].PTS, 64)
			s.out.duration = last - first
		}
	}
	return video, audio
}

// freeDualPort returns a port free for both UDP and TCP on loopback
// (--listen serves QUIC on UDP and the dev bootstrap on TCP).
func freeDualPort(t *testing.T) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if err == nil {
			u.Close()
			return port
		}
	}
	t.Fatal("no port free for UDP and TCP")
	return 0
}

// waitText waits until buf holds text.
func waitText(t *testing.T, ctx context.Context, buf *lockedBuffer, text string) {
	t.Helper()
	for !strings.Contains(buf.String(), text) {
		select {
		case <-ctx.Done():
			t.Fatalf("no %q; output:\n%s", text, buf.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
