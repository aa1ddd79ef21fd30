package interop

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
<script>
// Every video and audio encoder the page makes logs each chunk it outputs
// (its timestamp in µs, and when on the page's clock in ms): what the page
// published, for the test to compare the file with.
window.encoded = {video: [], audio: []};
for (const [kind, name] of [["video", "VideoEncoder"], ["audio", "AudioEncoder"]]) {
  const Base = window[name];
  window[name] = class extends Base {
    constructor(init) {
      const log = [];
      window.encoded[kind].push(log);
      super({...init, output: (chunk, meta) => { log.push([chunk.timestamp, performance.now()]); init.output(chunk, meta); }});
    }
  };
}
</script>
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
// file decodes with ffmpeg and holds, at its time, every video frame the
// page's encoder output from the file's first frame to its last (not the
// camera's nominal rate: a loaded machine encodes fewer), and audio.
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
	if video.frames < 2 || video.duration < 2 {
		t.Fatalf("video %d frames over %.2f s: want at least 2 s of frames; stderr:\n%s", video.frames, video.duration, log)
	}
	var encoded struct{ Video, Audio [][][2]float64 }
	if err := b.Eval(`window.encoded`, &encoded); err != nil {
		t.Fatal(err)
	}
	for _, chunks := range append(encoded.Video, encoded.Audio...) {
		slices.SortFunc(chunks, func(a, b [2]float64) int { return cmp.Compare(a[0], b[0]) })
	}
	e, first, last, err := framesMissing(video.pts, timestamps(encoded.Video))
	if err != nil {
		t.Fatalf("video %d frames over %.2f s: %v", video.frames, video.duration, err)
	}
	if _, _, _, err := framesMissing(audio.pts, timestamps(encoded.Audio)); err != nil {
		t.Errorf("audio %d frames over %.2f s: %v", audio.frames, audio.duration, err)
	}
	// The audio the page encoded while it encoded the file's video, on
	// the page's clock: the file holds at least half of its span.
	from, to := encoded.Video[e][first][1], encoded.Video[e][last][1]
	var encodedAudio []float64
	for _, chunks := range encoded.Audio {
		for _, c := range chunks {
			if c[1] >= from && c[1] <= to {
				encodedAudio = append(encodedAudio, c[0]/1e6)
			}
		}
	}
	span := 0.0
	if len(encodedAudio) > 0 {
		span = slices.Max(encodedAudio) - slices.Min(encodedAudio)
	}
	if audio.frames == 0 || audio.duration < span/2 {
		t.Errorf("audio %d frames over %.2f s: the page encoded %.2f s of audio beside the file's video", audio.frames, audio.duration, span)
	}
	got := float64(video.frames-1) / video.duration
	t.Logf("recorded %s: video %s %d frames over %.2f s (%.1f/s, camera %.1f/s), audio %s %d frames over %.2f s (of %.2f s encoded beside the video); the page encoded video %s, audio %s",
		filepath.Base(files[0]), video.codec, video.frames, video.duration, got, rate, audio.codec, audio.frames, audio.duration, span,
		chunkSpans(encoded.Video), chunkSpans(encoded.Audio))
}

// probed is one stream of a file as ffprobe decodes it.
type probed struct {
	codec    string
	frames   int
	duration float64   // seconds from the first to the last frame's timestamp
	pts      []float64 // each frame's presentation time in seconds
}

// timestamps returns the timestamps of each encoder's chunks.
func timestamps(encoders [][][2]float64) [][]int64 {
	out := make([][]int64, len(encoders))
	for i, chunks := range encoders {
		for _, c := range chunks {
			out[i] = append(out[i], int64(c[0]))
		}
	}
	return out
}

// chunkSpans describes each encoder's chunks: how many, and when on the
// page's clock the first and the last came out.
func chunkSpans(encoders [][][2]float64) string {
	var b strings.Builder
	for i, chunks := range encoders {
		if i > 0 {
			b.WriteString(", ")
		}
		if len(chunks) == 0 {
			b.WriteString("0 chunks")
			continue
		}
		fmt.Fprintf(&b, "%d chunks from %.2f s to %.2f s", len(chunks), chunks[0][1]/1000, chunks[len(chunks)-1][1]/1000)
	}
	return b.String()
}

// framesMissing says which frames the page encoded are not in the file
// between its first frame and its last. pts are the file's presentation
// times in seconds (a millisecond time base); encoded holds, per encoder
// the page made, its chunks' timestamps in microseconds. The file may
// start anywhere on the publisher's clock, so each chunk is tried as the
// file's first frame; nil if, for one of them, every chunk from there to
// the file's last frame is in the file and every frame of the file is
// one of them, within the millisecond's rounding.
func framesMissing(pts []float64, encoded [][]int64) (enc, first, last int, err error) {
	if len(pts) == 0 {
		return 0, 0, 0, fmt.Errorf("no frame in the file")
	}
	const tol = 1500 // µs
	pts = slices.Sorted(slices.Values(pts))
	rel := make([]int64, len(pts))
	for i, p := range pts {
		rel[i] = int64(math.Round((p - pts[0]) * 1e6))
	}
	final := rel[len(rel)-1]
	bestMatched, bestErr := -1, error(nil)
	for e, chunks := range encoded {
		chunks = slices.Sorted(slices.Values(chunks))
		for k := range chunks {
			var missing []int64
			matched, j, end := 0, 0, k
			for i, c := range chunks[k:] {
				at := c - chunks[k]
				if at > final+tol {
					break
				}
				end = k + i
				for j < len(rel) && rel[j] < at-tol {
					j++ // a frame of the file that is no chunk
				}
				if j < len(rel) && rel[j] <= at+tol {
					matched++
					j++
				} else {
					missing = append(missing, at)
				}
			}
			if matched == len(rel) && len(missing) == 0 {
				return e, k, end, nil
			}
			if matched > bestMatched {
				bestMatched = matched
				bestErr = fmt.Errorf("encoder %d from its chunk %d of %d: %d of the file's %d frames are its chunks, "+
					"%d chunks are not in the file (at %v µs after the file's first frame)",
					e, k, len(chunks), matched, len(rel), len(missing), missing)
			}
		}
	}
	if bestErr == nil {
		return 0, 0, 0, fmt.Errorf("the page's %d encoders output no chunk", len(encoded))
	}
	return 0, 0, 0, bestErr
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
		for _, f := range r.Frames {
			pts, _ := strconv.ParseFloat(f.PTS, 64)
			s.out.pts = append(s.out.pts, pts)
		}
		if n := len(s.out.pts); n > 1 {
			s.out.duration = s.out.pts[n-1] - s.out.pts[0]
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
