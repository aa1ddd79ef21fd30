package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/cli"
	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
)

// looped repeats every track of m until it spans d: each track on its own
// sample's length, timestamps and send times moved by one length per loop.
func (m *manifest) looped(d time.Duration) *manifest {
	out := &manifest{Broadcast: m.Broadcast}
	for _, tr := range m.Tracks {
		// The sample's length: its last presentation time and one frame
		// (the frames are in decode order).
		ts := make([]int64, len(tr.Frames))
		for i, f := range tr.Frames {
			ts[i] = f.TS
		}
		slices.Sort(ts)
		length := 2*ts[len(ts)-1] - ts[len(ts)-2]
		loop := tr
		loop.Frames = nil
		for base := int64(0); base < d.Microseconds(); base += length {
			for _, f := range tr.Frames {
				f.TS += base
				f.At += base
				loop.Frames = append(loop.Frames, f)
			}
		}
		out.Tracks = append(out.Tracks, loop)
	}
	return out
}

// TestReferencePublisherKilledAndRestartedLosesAtMostTheOutagePlusThreeSeconds:
// moq-export records @moq/net's publisher (raw QUIC, moq-lite-05), which is
// killed with SIGKILL after 3 s (no CONNECTION_CLOSE) and started again on
// the same port 2 s later; both runs stamp their frames on one wall clock
// (--epoch-ms), as a live encoder does. The recording is of the one
// broadcast (-b) or of every one (--record-all), into each container (issue
// 26 items 0 and 1: a recorder once resubscribed only the catalog after
// such a restart). Measured from the file's packet timestamps, each track
// resumes and has one hole, no longer than the outage plus 3 s, and the
// loss the recording reports for it is that hole. (@moq/net serves no
// FETCH, so its audio cannot be fetched back to the video's keyframe.)
//
// The outage is the publisher's: from the kill until the new one serves,
// that is until it sends its first media object, and the media ends before
// the kill by as much as the old one ran behind its schedule (a starved
// Deno sends late what it stamped on time: its "group" events say how late). Deno takes 5.5-10 s to
// start and listen under load, and is slow to accept and to begin then
// too (once 4 s between every track subscribed and its first frame); the
// "listening" line alone, which this test once measured to, charged all
// of that after it to the recorder (7 of 8 cases failed at load 40-52).
// The recorder's own share is logged apart: when it noticed the loss and
// when it had reconnected, against when the new publisher listened. The recording runs until the new publisher has sent 4 s of
// media: a fixed --duration ran out before the restart on such a machine.
func TestReferencePublisherKilledAndRestartedLosesAtMostTheOutagePlusThreeSeconds(t *testing.T) {
	ref := needReference(t)
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	for _, mode := range []string{"b", "record-all"} {
		for _, ext := range []string{"mkv", "mp4", "ts", "flv"} {
			t.Run(mode+"/"+ext, func(t *testing.T) {
				t.Parallel()
				referenceRestart(t, ref, mode, ext, false)
			})
		}
	}
}

// TestReferencePublisherRestartedAtOnceLosesOnlyItsOutage: as above, but
// the publisher is started again at once after the kill and sends its
// media at once, before any peer connects, as a live encoder does; the
// recorder notices the loss seconds later (QUIC's silence). @moq/net holds
// what it sent for its latency window (5 s): it serves a FETCH of it, and
// replays it to a subscription that asks for it with a start group. With
// FETCH refused ("without FETCH": the rig's publisher rejects it, as
// @moq/net's wire does over a transport without FETCH), the recorder asks
// the new publisher's groups before the live one by such a subscription;
// when the new timeline's group numbers reached the old ones before the
// recorder came back (audio, a group a frame, after ~4 s of silence), a
// span subscription of the newest group it held tells the restart first:
// the new publisher's group of that number starts at another time.
// Either way each track of the new timeline is recorded from its first
// group: the recording loses only the outage (kill to the new publisher's
// first media object) and the old publisher's lag; without FETCH it lost,
// before, also what the new publisher sent until the recorder noticed the
// loss and came back (the recorder took the new timeline for the old one
// going on, and the FETCHes of the groups between were refused: issue
// 26). (A time bound tighter than the other test's would not hold: a
// starved Deno sends its first groups late.)
func TestReferencePublisherRestartedAtOnceLosesOnlyItsOutage(t *testing.T) {
	ref := needReference(t)
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	for _, c := range []struct{ mode, ext, fetch string }{
		{"b", "mkv", "with FETCH"}, {"record-all", "mp4", "with FETCH"},
		{"b", "mkv", "without FETCH"}, {"record-all", "mp4", "without FETCH"},
	} {
		t.Run(c.mode+"/"+c.ext+"/"+c.fetch, func(t *testing.T) {
			t.Parallel()
			var flags []string
			if c.fetch == "without FETCH" {
				flags = []string{"--no-fetch=1"}
			}
			referenceRestart(t, ref, c.mode, c.ext, true, flags...)
		})
	}
}

// stampedLog is a log that remembers when each of its lines was written.
type stampedLog struct {
	lockedBuffer
	mu    sync.Mutex
	lines []stampedLine
}

type stampedLine struct {
	at   time.Time
	text string
}

func (l *stampedLog) Write(p []byte) (int, error) {
	now := time.Now()
	l.mu.Lock()
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		l.lines = append(l.lines, stampedLine{now, line})
	}
	l.mu.Unlock()
	return l.lockedBuffer.Write(p)
}

// stamped returns the log with each line's wall time in front.
func (l *stampedLog) stamped() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, line := range l.lines {
		fmt.Fprintf(&b, "%s %s\n", line.at.Format("15:04:05.000"), line.text)
	}
	return b.String()
}

// first returns when the first line holding text after from was written,
// as a time since from (-1: none).
func (l *stampedLog) first(from time.Time, text string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if line.at.After(from) && strings.Contains(line.text, text) {
			return line.at.Sub(from)
		}
	}
	return -1
}

// referenceRestart runs the restart (atOnce: see
// TestReferencePublisherRestartedAtOnceLosesOnlyItsOutage), the restarted
// publisher with flags.
func referenceRestart(t *testing.T, ref *reference, mode, ext string, atOnce bool, flags ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// Cancelling stops the recording as Ctrl-C does.
	recording, stopRecording := context.WithCancel(ctx)
	defer stopRecording()
	cert := newTestCert(t)
	m := sampleBroadcast("interop/restart.hang", 1).looped(30 * time.Second)
	manifest := m.write(t)
	epoch := strconv.FormatInt(time.Now().UnixMilli(), 10)
	publish := func(addr string, flags ...string) *refProcess {
		return ref.start(ctx, t, "publish", append([]string{"--manifest", manifest, "--listen", addr,
			"--cert", cert.certFile, "--key", cert.keyFile, "--epoch-ms", epoch}, flags...)...)
	}
	pub := publish("127.0.0.1:0")
	addr := fmt.Sprintf("127.0.0.1:%d", pub.expect(ctx, "listening", nil).Port)
	dir := t.TempDir()
	stderr := &stampedLog{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("moq-export's log:\n%s", stderr.stamped())
		}
	})
	done := make(chan int, 1)
	go func() {
		sel := []string{"-b", m.Broadcast, "-o", filepath.Join(dir, "out."+ext)}
		if mode == "record-all" {
			sel = []string{"--record-all", "-o", filepath.Join(dir, "rec", "{broadcast}."+ext)}
		}
		done <- cli.Execute(recording, append([]string{"moql://" + addr + "/", "--tls-fingerprint", cert.fingerprint,
			"--summary", filepath.Join(dir, "sum.json"), "-vv"}, sel...),
			cli.Env{Stdout: &bytes.Buffer{}, Stderr: stderr})
	}()
	// 3 s of video published, and subscribed meanwhile: kill it.
	video := m.track("video")
	pub.expect(ctx, "subscribed", nil)
	var lag time.Duration // how late the old publisher sent what it sent last
	for {
		ev := pub.expect(ctx, "group", nil)
		lag = time.Duration(ev.Late) * time.Millisecond
		if ev.Track == "video" && video.Frames[ev.Frame].TS >= 3_000_000 {
			break
		}
	}
	if err := pub.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-pub.exited
	killed := time.Now()
	t.Logf("the publisher was killed at %s", killed.Format("15:04:05.000"))
	var listening, accepted, subscribed, outage time.Duration
	if atOnce {
		// Each step of the restart, as a time since the kill. The media
		// starts at once: the outage ends with its first object, before
		// the recorder's session; the recording runs until 3 s of media
		// after the recorder came back.
		pub = publish(addr, append([]string{"--at-once=1"}, flags...)...)
		pub.expect(ctx, "listening", nil)
		listening = time.Since(killed)
		var sent int64 // the newest video timestamp sent
		seen := func(ev event) {
			if ev.Event == "group" {
				if outage == 0 {
					outage = time.Since(killed)
				}
				if ev.Track == "video" {
					sent = video.Frames[ev.Frame].TS
				}
			}
		}
		pub.expect(ctx, "published", seen)
		accepted = time.Since(killed)
		subscribed = accepted
		until := sent + 3_000_000
		for {
			ev := pub.expect(ctx, "group", nil)
			seen(ev)
			if ev.Track == "video" && video.Frames[ev.Frame].TS >= until {
				break
			}
		}
	} else {
		time.Sleep(2 * time.Second) // the outage itself
		pub = publish(addr)
		// Each step of the restart, as a time since the kill.
		pub.expect(ctx, "listening", nil)
		listening = time.Since(killed)
		pub.expect(ctx, "published", nil) // the recorder's session, accepted
		accepted = time.Since(killed)
		pub.expect(ctx, "subscribed", nil) // every track subscribed
		subscribed = time.Since(killed)
		// The outage ends with the new publisher's first media object: it
		// reports each keyframe it sent ("group"), the first frame of each
		// track is one.
		for {
			ev := pub.expect(ctx, "group", nil)
			if outage == 0 {
				outage = time.Since(killed)
			}
			if ev.Track == "video" && video.Frames[ev.Frame].TS >= 4_000_000 {
				break
			}
		}
	}
	stopRecording()
	var code int
	select {
	case code = <-done:
	case <-ctx.Done():
		t.Fatal("moq-export did not finish")
	}
	log := stderr.String()
	noticed, reconnected := stderr.first(killed, "connection lost"), stderr.first(killed, "reconnected")
	t.Logf("since the kill: the recorder noticed the loss at %v; the new publisher listened at %v; the recorder reconnected at %v (%v after both); the publisher accepted its session at %v, had every track subscribed at %v, sent its first media at %v; the old publisher sent its last keyframe %v behind its schedule",
		noticed.Round(time.Millisecond), listening.Round(time.Millisecond), reconnected.Round(time.Millisecond),
		(reconnected - max(noticed, listening)).Round(time.Millisecond), accepted.Round(time.Millisecond),
		subscribed.Round(time.Millisecond), outage.Round(time.Millisecond), lag)
	if code != 0 || !strings.Contains(log, "reconnected") {
		t.Fatalf("exit %d, want 0 after a reconnect", code)
	}
	path := filepath.Join(dir, "out."+ext)
	if mode == "record-all" {
		paths, _ := filepath.Glob(filepath.Join(dir, "rec", "*."+ext))
		if len(paths) != 1 {
			t.Fatalf("record-all wrote %v, want one file", paths)
		}
		path = paths[0]
	}
	// At the file's own times: the restart moves the timeline by a time
	// that is not a whole number of frames, which ffmpeg's null output at
	// the nominal frame rate would round two frames onto one tick.
	// ffmpeg "corrects" the timestamps of an MPEG-TS input at a jump (its
	// demuxer is flagged AVFMT_TS_DISCONT), stream by stream, and then
	// reports "non monotonically increasing dts" for a file whose own are:
	// the TS cases failed so with restart holes of 10.9-17.7 s (a loaded
	// machine's), and an ffmpeg-made TS with a jump fails alike. -copyts
	// decodes at the file's own times, where a repeated DTS still fails.
	args := []string{"-nostdin", "-v", "error"}
	if ext == "ts" {
		args = append(args, "-copyts")
	}
	args = append(args, "-i", path, "-enc_time_base:v", "1/1000", "-fps_mode", "passthrough", "-f", "null", "-")
	if out, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("ffmpeg decoding %s: %v\n%s", path, err, out)
	}
	var sum struct {
		PerTrack []struct {
			Track string  `json:"track"`
			Gaps  int     `json:"gaps"`
			Lost  float64 `json:"lost_seconds"`
		} `json:"per_track"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "sum.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	p := mediatest.Probe(t, path)
	if len(p.Streams) != 2 {
		t.Fatalf("%d streams", len(p.Streams))
	}
	frame := map[string]float64{"video": 1 / samples.MustLoadSample("h264").Framerate, "audio": 1024.0 / 48000}
	for _, s := range p.Streams {
		track := s.CodecType // the tracks are named "video" and "audio"
		var pts []float64
		for _, pk := range p.PacketsOf(s.Index) {
			if v, err := strconv.ParseFloat(pk.PTSTime, 64); err == nil {
				pts = append(pts, v)
			}
		}
		// A stream cut in decode order may lack, with B-frames, frames up
		// to this far before the last one it holds (the cut's, not a loss).
		reorder := mediatest.Reorder(pts)
		slices.Sort(pts)
		at, gap := mediatest.LargestGap(pts)
		hole := time.Duration(gap * float64(time.Second))
		var reported time.Duration
		gaps := 0
		for _, pt := range sum.PerTrack {
			if pt.Track == track {
				reported, gaps = time.Duration(pt.Lost*float64(time.Second)), pt.Gaps
			}
		}
		t.Logf("%s: %d packets; hole %v (%.3f-%.3f), reported lost %v in %d gaps; outage %v: %v more, %v past the accepted session",
			track, len(pts), hole, pts[max(at-1, 0)], pts[at], reported, gaps, outage.Round(time.Millisecond),
			(hole - outage).Round(time.Millisecond), (hole - accepted).Round(time.Millisecond))
		if atOnce && !fromFirstGroup(log, track) {
			t.Errorf("%s: the new publisher's timeline is not recorded from its first group (group 0): what it sent before the recorder came back is lost", track)
		}
		// The media the old publisher never sent ends lag before the kill.
		least := listening
		if atOnce {
			// The media began before the new publisher listened, as soon
			// as it ran.
			least = 0
		}
		if hole < least || hole > outage+lag+3*time.Second {
			t.Errorf("%s: a hole of %v, want between the time the new publisher listened (%v) and the outage (%v) plus the old publisher's lag (%v) plus 3 s",
				track, hole, listening, outage, lag)
		}
		if d := (hole - reported).Abs(); d > time.Duration(2*frame[track]*float64(time.Second)) || gaps != 1 {
			t.Errorf("%s: the recording reports %v lost in %d gaps, the file has one hole of %v", track, reported, gaps, hole)
		}
		for i := 1; i < len(pts); i++ {
			// Within a cut's reorder window (x264's I P B B cut after the P
			// or the first B): the kill's, and the end's, which stops the
			// recording mid-GOP as Ctrl-C does.
			if mediatest.LeftOutByTheCut(pts, i, at, reorder, frame[track]) || mediatest.LeftOutByTheCut(pts, i, len(pts), reorder, frame[track]) {
				continue
			}
			if i != at && pts[i]-pts[i-1] > 1.5*frame[track] {
				t.Errorf("%s: another hole of %.3fs at %.3fs", track, pts[i]-pts[i-1], pts[i-1])
			}
		}
	}
}

// fromFirstGroup reports whether the recorder's log says it recorded the
// new timeline of track from its group 0: the resume started there, or the
// groups before the live one were fetched or subscribed from 0.
func fromFirstGroup(log, track string) bool {
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, "track="+track+" ") && !strings.HasSuffix(line, "track="+track+")") {
			continue
		}
		if strings.Contains(line, "resumed on a new timeline") && strings.Contains(line, " first=0") ||
			strings.Contains(line, "the restarted publisher's groups before the live one") && strings.Contains(line, " from=0 ") {
			return true
		}
	}
	return false
}
