package faults

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/internal/testutil/udpproxy"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
)

// mediaSpan returns the span of the packet timestamps in path (first to
// last), read with ffprobe: what the recording holds, finalized or not.
func mediaSpan(t *testing.T, path string) time.Duration {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "packet=pts_time", "-of", "csv=p=0", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	first, last := math.Inf(1), math.Inf(-1)
	for _, line := range strings.Fields(string(out)) {
		v, err := strconv.ParseFloat(strings.Trim(line, ","), 64)
		if err != nil {
			continue
		}
		first, last = min(first, v), max(last, v)
	}
	if first > last {
		t.Fatalf("%s: no packets", path)
	}
	return time.Duration((last - first) * float64(time.Second))
}

// TestSIGKILLLeavesAPlayableFileInEachFormat kills the recorder with
// SIGKILL once its progress line says it wrote 3 s of media: the file
// decodes (at most its last frame cut off, when the kill lands inside a
// write) and holds the media written up to about a second before the kill
// (file outputs flush at least every 500 ms; MP4 also keeps the fragment
// being built, at most a GOP).
func TestSIGKILLLeavesAPlayableFileInEachFormat(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	for _, tc := range []struct {
		file  string
		args  []string
		slack time.Duration
	}{
		{"k.flv", nil, time.Second},
		{"k.mkv", nil, time.Second},
		{"k.webm", []string{"--demo-codecs", "vp9,opus"}, time.Second},
		{"k.ts", nil, time.Second},
		{"k.mp4", nil, 3 * time.Second},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r := cmdtest.StartRecorder(t, ctx, dir, append([]string{"-o", tc.file}, tc.args...)...)
			written := r.WaitMedia(3 * time.Second)
			if written == 0 {
				r.Wait()
				t.Fatalf("no progress past 3 s:\n%s", r.Log.String())
			}
			if err := r.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			err := r.Wait()
			if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("exit: %v\n%s", err, r.Log.String())
			}
			path := filepath.Join(dir, tc.file)
			cmdtest.DecodeCutShort(t, path)
			d := mediaSpan(t, path)
			t.Logf("%v of media in the file, %v written by the kill", d, written)
			if d < written-tc.slack {
				t.Errorf("file holds %v of media, the recorder had written %v before the kill", d, written)
			}
		})
	}
}

// TestFullDiskEndsTheRecordingWithExit1AndAPlayableFile: a file size
// limit (ulimit -f, what a full disk looks like to a writer: a write that
// stops part way, then errors) ends the recording with exit 1 and a
// message naming the file, and the file decodes cleanly up to there.
func TestFullDiskEndsTheRecordingWithExit1AndAPlayableFile(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe", "sh")
	for _, file := range []string{"f.flv", "f.mkv", "f.ts", "f.mp4"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			// 200 blocks of 512 bytes: about 3 s of the demo.
			r := cmdtest.RunProgram(t, dir, "sh", "-c", `ulimit -f 200 && exec "$0" "$@"`, cmdtest.Binary, "-o", file, "--duration", "30s")
			if r.Code != 1 {
				t.Fatalf("exit %d, want 1\n%s", r.Code, r.Stderr)
			}
			for _, want := range []string{"writing " + file + " failed", "size limit", "stays playable"} {
				if !strings.Contains(r.Stderr, want) {
					t.Errorf("stderr does not say %q:\n%s", want, r.Stderr)
				}
			}
			path := filepath.Join(dir, file)
			cmdtest.Decode(t, path)
			if d := mediaSpan(t, path); d < time.Second {
				t.Errorf("the file holds %v of media", d)
			}
		})
	}
}

// packetTimes returns, per stream index, the sorted packet timestamps of
// path (seconds).
func packetTimes(t *testing.T, path string) map[int][]float64 {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "packet=stream_index,pts_time", "-of", "csv=p=0", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	times := map[int][]float64{}
	for _, line := range strings.Fields(string(out)) {
		parts := strings.Split(strings.Trim(line, ","), ",")
		if len(parts) != 2 {
			continue
		}
		i, err1 := strconv.Atoi(parts[0])
		v, err2 := strconv.ParseFloat(parts[1], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		times[i] = append(times[i], v)
	}
	for _, ts := range times {
		sort.Float64s(ts)
	}
	return times
}

// largestGap returns the largest distance between neighbouring times.
func largestGap(ts []float64) time.Duration {
	_, gap := mediatest.LargestGap(ts)
	return time.Duration(gap * float64(time.Second))
}

// proxiedDemo publishes the demo as broadcast "live" on loopback QUIC
// behind a UDP proxy, and returns the proxy and the server's pin.
func proxiedDemo(t *testing.T, ctx context.Context, opts demo.Options) (*udpproxy.Proxy, string) {
	t.Helper()
	b := model.NewBroadcast("live")
	go demo.Publish(ctx, b, opts)
	srv, _, pin, err := subscribe.ServeLoopback(b, subscribe.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	px, err := udpproxy.New(srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	return px, pin
}

// TestNetworkOutageOfFourSecondsLosesNoFrame: the recorder reaches the
// publisher through a UDP proxy that drops everything in both directions
// for 4 s while the publisher goes on and keeps its groups. The recorder
// notices (3 s of silence), reconnects as soon as the network is back and
// fetches what it missed: the file has no hole, measured from its packet
// timestamps, and every frame of the 8 s is in it.
func TestNetworkOutageOfFourSecondsLosesNoFrame(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	px, pin := proxiedDemo(t, ctx, demo.Options{Realtime: true, KeepGroups: 100000})
	dir := t.TempDir()
	r := cmdtest.StartRecorder(t, ctx, dir, "moql://"+px.Addr()+"/", "--tls-fingerprint", pin, "-b", "live",
		"--duration", "8s", "-o", "out.mkv", "-v")
	r.WaitMedia(2 * time.Second)
	px.Blackhole(true)
	time.Sleep(4 * time.Second) // the outage itself
	px.Blackhole(false)
	if err := r.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, r.Log.String())
	}
	log := &r.Log
	if !strings.Contains(log.String(), "reconnected") {
		t.Fatalf("no reconnect in the log: the outage was not noticed\n%s", log.String())
	}
	path := filepath.Join(dir, "out.mkv")
	cmdtest.Decode(t, path)
	times := packetTimes(t, path)
	if len(times) != 2 {
		t.Fatalf("%d streams", len(times))
	}
	// 30 fps video and 1024-sample AAC at 48 kHz: neighbours are 33 and
	// 21 ms apart; a lost frame would double that.
	for i, ts := range times {
		t.Logf("stream %d: %d packets over %.2fs, largest gap %v", i, len(ts), ts[len(ts)-1]-ts[0], largestGap(ts))
		if gap := largestGap(ts); gap > 60*time.Millisecond {
			t.Errorf("stream %d: a hole of %v in the packet timestamps\n%s", i, gap, log.String())
		}
		if span := ts[len(ts)-1] - ts[0]; span < 7.5 {
			t.Errorf("stream %d spans %.2fs, want about 8s", i, span)
		}
	}
}

// TestPublisherKilledAndRestartedLosesAtMostTheOutagePlusThreeSeconds: the
// publisher is a process of its own; it is killed with SIGKILL (no
// CONNECTION_CLOSE: its connection just goes silent) after 3 s of
// recording and started again on the same port 2 s later, a new session
// whose groups start over, on the same clock. The recorder finds the dead
// connection by 3 s of silence, reconnects and records on. Measured from
// the file's packet timestamps, each track has one hole, no longer than the
// outage plus 3 s, and the loss the recording reports for it (--summary,
// the progress line) is that hole.
func TestPublisherKilledAndRestartedLosesAtMostTheOutagePlusThreeSeconds(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	epoch := time.Now()
	r, _, killed := cmdtest.RecordAcrossAKill(t, ctx, dir, epoch, nil,
		[]string{"-b", "live", "--duration", "12s", "-o", "out.mkv", "--summary", "sum.json"},
		func(start func(epoch time.Time, env ...string) *cmdtest.PublisherProcess) *cmdtest.PublisherProcess {
			time.Sleep(2 * time.Second) // the outage itself
			return start(epoch)
		})
	outage := time.Since(killed)
	if err := r.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
	log := r.Log.String()
	if !strings.Contains(log, "reconnected") {
		t.Fatal("no reconnect in the log")
	}
	path := filepath.Join(dir, "out.mkv")
	cmdtest.DecodeAtFileTimes(t, path)
	sum := cmdtest.ReadSummary(t, filepath.Join(dir, "sum.json"))
	t.Logf("per track: %+v", sum.PerTrack)
	got := cmdtest.PacketsByCodec(t, path)
	if len(got) != 2 {
		t.Fatalf("streams %v", cmdtest.Keys(got))
	}
	holes := map[string]time.Duration{}
	for codec, sp := range got { // the demo's tracks are named after their codecs
		hole := largestGap(sp.Pts)
		holes[codec] = hole
		var reported time.Duration
		gaps := 0
		for _, pt := range sum.PerTrack {
			if pt.Track == codec {
				reported, gaps = time.Duration(pt.Lost*float64(time.Second)), pt.Gaps
			}
		}
		t.Logf("%s: %d packets over %.2fs; hole %v (%.3f-%.3f), reported lost %v in %d gaps; outage %v", codec, len(sp.Pts),
			sp.Pts[len(sp.Pts)-1]-sp.Pts[0], hole, gapStart(sp.Pts), gapStart(sp.Pts)+hole.Seconds(), reported, gaps, outage.Round(time.Millisecond))
		if hole > outage+3*time.Second {
			t.Errorf("%s: a hole of %v, more than the outage (%v) plus 3 s", codec, hole, outage)
		}
		if hole < outage {
			t.Errorf("%s: a hole of %v, shorter than the outage (%v): the file's timestamps do not show the loss", codec, hole, outage)
		}
		// The report counts from the newest frame received before the
		// break to the first after it: the file's hole, when every frame
		// received was written.
		if d := (hole - reported).Abs(); d > time.Duration(2*cmdtest.FrameDuration[codec]*float64(time.Second)) {
			t.Errorf("%s: the recording reports %v lost, the file has a hole of %v", codec, reported, hole)
		}
		if gaps != 1 {
			t.Errorf("%s: %d gaps reported, want 1", codec, gaps)
		}
		// Everything else is there: the rest of the file has no hole.
		checkContinuousApartFromTheCut(t, codec+" apart from the outage", sp)
	}
	if !strings.Contains(log, "  lost ") {
		t.Error("the progress line does not say what was lost")
	}
	// The audio picks up at the video's keyframe (it is fetched back to
	// it, as at a live join), not at its newest frame up to a GOP (1 s)
	// later: its hole is the video's, give or take where each track's
	// last frame before the kill was.
	if v, a := holes["h264"], holes["aac"]; a > v+100*time.Millisecond {
		t.Errorf("the audio lost %v at the restart, the video %v: the audio did not pick up at the video's keyframe", a, v)
	}
}

// gapStart returns the time before the largest gap of sorted ts.
func gapStart(ts []float64) float64 {
	at, _ := mediatest.LargestGap(ts)
	return ts[max(at-1, 0)]
}

// checkContinuousApartFromTheCut fails when sp (sorted times) has a hole
// other than its largest gap (the cut: an outage, a restart) and those
// whose frames lie within sp.reorder before it. A stream cut in decode
// order keeps, with B-frames, a P-frame whose B-frames shown before it
// were not sent yet: x264's I P B B cut after the first B leaves the
// second one out (once 3.067 s missing between 3.033 and 3.100, the last
// frame before a 40 s outage), cut right after the P both (3.600 and
// 3.633 missing before 3.667, under load). Any other hole is a lost frame.
func checkContinuousApartFromTheCut(t *testing.T, what string, sp *cmdtest.StreamPackets) {
	t.Helper()
	d := cmdtest.FrameDuration[sp.Codec]
	at, _ := mediatest.CutGap(sp.Pts, sp.Reorder, d)
	for i := 1; i < len(sp.Pts); i++ {
		if i == at || mediatest.LeftOutByTheCut(sp.Pts, i, at, sp.Reorder, d) {
			continue
		}
		if gap := sp.Pts[i] - sp.Pts[i-1]; gap > 1.5*d {
			t.Errorf("%s: %s jumps %.3fs at %.3fs: frames are missing", what, sp.Codec, gap, sp.Pts[i-1])
		}
	}
}

// TestNetworkOutageOfFortySecondsIsReportedAndTheRecordingGoesOn: the same
// proxy blackholes both directions for 40 s, longer than the publisher
// keeps its groups (the demo's 3 s, as a relay's cache). The recorder gives
// the dead connection up, keeps redialling, reconnects once the network is
// back, finds the missed groups gone and records on. The file decodes
// clean; each track has one hole, of at least the outage (less the part of
// the group live at the network's return sent before it), and the loss the
// recording reports (the progress line, per track in --json) is that hole;
// the rest of the file has none.
//
// It takes about a minute of wall time, nearly all of it waiting: it runs
// in parallel with the other tests of the package.
func TestNetworkOutageOfFortySecondsIsReportedAndTheRecordingGoesOn(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	const outage = 40 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	px, pin := proxiedDemo(t, ctx, demo.Options{Realtime: true})
	dir := t.TempDir()
	r := cmdtest.StartRecorder(t, ctx, dir, "moql://"+px.Addr()+"/", "--tls-fingerprint", pin, "-b", "live",
		"-o", "out.mkv", "--json", "-v")
	before := r.WaitMedia(3 * time.Second)
	if before == 0 {
		r.Wait()
		t.Fatalf("no progress past 3 s:\n%s", r.Log.String())
	}
	px.Blackhole(true)
	time.Sleep(outage) // the outage itself
	px.Blackhole(false)
	// Record on for 4 s of media after the reconnect, then stop as Ctrl-C
	// does.
	for line := range r.Lines {
		if strings.Contains(line, "reconnected") {
			break
		}
	}
	resumed := r.WaitMedia(before + outage)
	if resumed == 0 || r.WaitMedia(resumed+4*time.Second) == 0 {
		r.Wait()
		t.Fatalf("no progress after the outage:\n%s", r.Log.String())
	}
	if err := r.Cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, r.Log.String())
	}
	log := r.Log.String()
	if !strings.Contains(log, "no longer served: a gap in the recording") {
		t.Errorf("the log does not say that the missed groups are gone:\n%s", log)
	}
	var sum cmdtest.RunSummary
	if err := json.Unmarshal([]byte(cmdtest.LastLine(log)), &sum); err != nil {
		t.Fatalf("--json summary: %v\n%s", err, log)
	}
	path := filepath.Join(dir, "out.mkv")
	cmdtest.DecodeAtFileTimes(t, path)
	got := cmdtest.PacketsByCodec(t, path)
	if len(got) != 2 {
		t.Fatalf("streams %v", cmdtest.Keys(got))
	}
	var maxLost time.Duration
	for codec, sp := range got { // the demo's tracks are named after their codecs
		at, gap := mediatest.LargestGap(sp.Pts)
		hole := time.Duration(gap * float64(time.Second))
		var reported time.Duration
		gaps := 0
		for _, pt := range sum.PerTrack {
			if pt.Track == codec {
				reported, gaps = time.Duration(pt.Lost*float64(time.Second)), pt.Gaps
			}
		}
		maxLost = max(maxLost, reported)
		after := sp.Pts[len(sp.Pts)-1] - sp.Pts[at]
		t.Logf("%s: %d packets; hole %v (%.3f-%.3f), %.1fs recorded after it; reported lost %v in %d gaps; groups up to %v", codec, len(sp.Pts),
			hole, sp.Pts[at-1], sp.Pts[at], after, reported, gaps, longestGroup(sp))
		// The track resumes at the start of the group that was live when
		// the network came back: a video group (a GOP) began up to its
		// length before that, so the hole may be shorter than the outage
		// by up to a GOP (once 39.9 s for 40 s), never by more.
		if gop := longestGroup(sp); hole < outage-gop {
			t.Errorf("%s: a hole of %v, shorter than the %v outage less a group (%v): the file's timestamps do not show the loss",
				codec, hole, outage, gop)
		}
		// After so long the redials have backed off to their longest wait
		// (5-10 s), but the probes notice the network's return within a
		// second (issue 26 item 3: before them, up to ~14 s passed).
		if hole > outage+3*time.Second {
			t.Errorf("%s: a hole of %v after a %v outage: more than the outage plus 3 s\n%s", codec, hole, outage, log)
		}
		if d := (hole - reported).Abs(); d > time.Duration(2*cmdtest.FrameDuration[codec]*float64(time.Second)) || gaps != 1 {
			t.Errorf("%s: the recording reports %v lost in %d gaps, the file has one hole of %v", codec, reported, gaps, hole)
		}
		if after < 3.5 {
			t.Errorf("%s: %.1fs recorded after the outage, want about 4 s", codec, after)
		}
		checkContinuousApartFromTheCut(t, codec+" apart from the outage", sp)
	}
	// The progress line shows the largest loss of a track.
	m := regexp.MustCompile(`  lost (\d+\.\d)s`).FindAllStringSubmatch(log, -1)
	if len(m) == 0 {
		t.Fatalf("no progress line says what was lost:\n%s", log)
	}
	if shown, _ := strconv.ParseFloat(m[len(m)-1][1], 64); math.Abs(shown-maxLost.Seconds()) > 0.051 {
		t.Errorf("the progress line says lost %.1fs, the tracks lost at most %v", shown, maxLost)
	}
}

// TestPublisherRestartedOnAFreshClockRecordsCleanlyIntoEveryContainer: the
// publisher is killed with SIGKILL after 3 s and started again 1 s later
// as a new session whose clock starts afresh (its timestamps go back to
// about 0), as a restarted process's do. The recording, of one broadcast
// (-b) or of every one (--record-all), goes on in one file of each
// container:
//   - the restarted publisher sees every track subscribed again (issue 26
//     item 0: a recorder once resubscribed only the catalog and recorded
//     nothing more), and both tracks resume, each with one hole, at the
//     restart, and more than a second of media after it;
//   - the file decodes without a message (the new timeline never repeats
//     a time the old one wrote: MKV once got "non monotonically increasing
//     dts 180 >= 180" there), and no packet time is written twice (item 1);
//   - the audio picks up at the video's keyframe, not at its newest frame
//     up to a GOP later (item 2): it is backfilled there, as at a live
//     join.
func TestPublisherRestartedOnAFreshClockRecordsCleanlyIntoEveryContainer(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	forEverySelectionAndContainer(t, func(t *testing.T, dir, file string, args []string) {
		log := cmdtest.RecordAcrossAFreshClockRestart(t, dir, args...)
		got := restartedRecording(t, filepath.Join(dir, file), log)
		holes := map[string]float64{}                               // each track's largest gap: the restart
		before, after := map[string]float64{}, map[string]float64{} // its ends
		for codec, sp := range got {
			pts := sp.Pts // sorted (packetsByCodec)
			for i := 1; i < len(pts); i++ {
				if pts[i] == pts[i-1] {
					t.Errorf("%s: two packets at %.3f s", codec, pts[i])
				}
			}
			at, gap := mediatest.LargestGap(pts)
			holes[codec] = gap
			before[codec], after[codec] = pts[max(at-1, 0)], pts[at]
			t.Logf("%s: %d packets over %.2fs, largest gap %.3fs at %.3fs", codec, len(pts), pts[len(pts)-1]-pts[0], gap, pts[max(at-1, 0)])
			// The kill came after 3 s of the 10 s: a track that
			// did not resume ends there.
			if span := pts[len(pts)-1] - pts[0]; span < 7 {
				t.Errorf("%s spans %.2fs of the 10 s: the track did not resume after the restart", codec, span)
			}
			// One hole (the restart), the rest continuous.
			checkContinuousApartFromTheCut(t, codec+" apart from the restart", &cmdtest.StreamPackets{Codec: codec, Pts: pts, Reorder: sp.Reorder})
		}
		// On a fresh clock the new timeline goes on right after
		// the old one: the tracks' holes are a few frames, from
		// where each track's last frame before the kill was. An
		// audio that picked up at its newest frame instead of the
		// video's keyframe would add up to a GOP (1 s) to its own.
		if v, a := holes["h264"], holes["aac"]; a > v+0.1 {
			// Which end of the hole: the audio's last frame before the
			// kill far behind the video's is what the recorder never
			// received or dropped before the kill; its first after the
			// restart behind the video's is item 2's.
			t.Errorf("the audio's hole at the restart is %.3fs, the video's %.3fs: the audio did not pick up at the video's keyframe "+
				"(before the kill the audio's last frame is %.3fs, the video's %.3fs; after the restart the audio's first is %.3fs, the video's %.3fs)",
				a, v, before["aac"], before["h264"], after["aac"], after["h264"])
		}
	})
}

// forEverySelectionAndContainer runs test in parallel subtests, one per
// selection (-b, --record-all) and container: args select the broadcast
// "live" and write it to file, in dir.
func forEverySelectionAndContainer(t *testing.T, test func(t *testing.T, dir, file string, args []string)) {
	for _, mode := range []string{"b", "record-all"} {
		for _, ext := range []string{"mkv", "mp4", "ts", "flv"} {
			t.Run(mode+"/"+ext, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				file := "out." + ext
				args := []string{"-b", "live", "-o", file}
				if mode == "record-all" {
					file = filepath.Join("rec", "live."+ext)
					args = []string{"--record-all", "-o", "rec/{broadcast}." + ext}
				}
				test(t, dir, file, args)
			})
		}
	}
}

// restartedRecording checks that the recorder's log saw a new timeline and
// that path decodes clean, and returns its packets of both tracks.
func restartedRecording(t *testing.T, path, log string) map[string]*cmdtest.StreamPackets {
	t.Helper()
	if !strings.Contains(log, "new timeline") {
		t.Fatal("the restart was not seen as a new timeline")
	}
	cmdtest.DecodeAtFileTimes(t, path)
	got := cmdtest.PacketsByCodec(t, path)
	if len(got) != 2 {
		t.Fatalf("streams %v", cmdtest.Keys(got))
	}
	return got
}

// TestBlipUnderRecordAllLosesNoFrame: one --record-all recorder of three
// broadcasts (legacy, loc and cmaf) loses the network for 20 s while the
// publisher goes on and keeps its groups. Each track fills its gap by
// FETCH while the live groups that land meanwhile wait; released all at
// once, those become groups in any order, and the recorder once skipped
// the older ones as stalled when a newer one came first: about a second
// of audio lost right after the outage in most runs of 8 s (found by the
// chaos soak). Past about 15 s the video lost 4 s more, every time: the
// oldest groups of its fill lagged the newest by over model.MaxLag while
// the reader waited for the audio's fill, and were dropped (the model
// counts a held track's groups from its release now). A blackhole of
// 1.5 s, under the 3 s idle timeout, is one the connection survives: no
// reconnect, QUIC retransmits what it swallowed, and the groups made
// meanwhile land at once, in any order; each track must wait for its own
// (it lost single AAC frames, up to 0.9 s of audio skipped as stalled and
// a GOP of cmaf video dropped as late, 3 runs of 3, before the model's
// stall rule counted wall time and the jitter buffer told a track that
// went quiet with all the others from a silent one). Now every track of
// every file runs on without a hole.
func TestBlipUnderRecordAllLosesNoFrame(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	for _, versions := range []string{"", "moq-transport-22"} {
		for _, outage := range []time.Duration{1500 * time.Millisecond, 20 * time.Second} {
			t.Run(fmt.Sprintf("%s/%v", cmp.Or(versions, "moq-lite"), outage), func(t *testing.T) {
				t.Parallel()
				blipUnderRecordAll(t, versions, outage)
			})
		}
	}
}

func blipUnderRecordAll(t *testing.T, versions string, outage time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second+outage)
	defer cancel()
	dir := t.TempDir()
	certFile, keyFile, pin := cmdtest.PublisherCert(t, dir)
	pub := cmdtest.StartPublisher(t, ctx, "127.0.0.1:0", certFile, keyFile, time.Now(),
		"MOQ_EXPORT_TEST_BROADCASTS="+cmdtest.SoakBroadcasts, "MOQ_EXPORT_TEST_KEEP=4000", "MOQ_EXPORT_TEST_VERSIONS="+versions)
	px, err := udpproxy.New(pub.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	r := cmdtest.StartRecorder(t, ctx, dir, "moql://"+px.Addr()+"/", "--tls-fingerprint", pin, "--record-all",
		"-o", "rec/{broadcast}.mkv", "-v")
	// The outage comes once every recording is well under way (a loaded
	// machine under -race may take seconds to start them).
	at := r.WaitMedia(5 * time.Second)
	if at == 0 {
		t.Fatalf("no progress past 5 s:\n%s", r.Log.String())
	}
	px.Blackhole(true)
	time.Sleep(outage) // the outage itself
	px.Blackhole(false)
	// The six tracks fill their gaps (20 s of audio is 940 groups, which
	// takes seconds on a loaded machine under -race), then the recording
	// runs a few seconds past them before it is stopped. An outage under
	// the idle timeout has no gap to fill: QUIC brings what it held back,
	// and the recording runs 4 s of media past it.
	if outage <= 3*time.Second && r.WaitMedia(at+outage+4*time.Second) == 0 {
		t.Fatalf("no progress past the outage:\n%s", r.Log.String())
	}
	for deadline := time.Now().Add(60 * time.Second); outage > 3*time.Second; time.Sleep(100 * time.Millisecond) {
		log := r.Log.String()
		if strings.Count(log, "fetched the groups missed")+strings.Count(log, "no longer served") >= 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tracks did not fill the outage within 60 s:\n%s", log)
		}
	}
	if outage > 3*time.Second {
		time.Sleep(4 * time.Second)
	}
	if err := r.Cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, r.Log.String())
	}
	log := r.Log.String()
	defer func() {
		if t.Failed() {
			t.Log(log)
		}
	}()
	for _, b := range []string{"legacy", "loc", "cmaf"} {
		path := filepath.Join(dir, "rec", b+".mkv")
		cmdtest.DecodeAtFileTimes(t, path)
		got := cmdtest.PacketsByCodec(t, path)
		if len(got) != 2 {
			t.Fatalf("%s: streams %v", b, cmdtest.Keys(got))
		}
		spans := map[string]float64{}
		for codec, sp := range got {
			pts := slices.Clone(sp.Pts)
			slices.Sort(pts)
			spans[codec] = pts[len(pts)-1] - pts[0]
			// Up to the last second: the interrupt that ends the
			// recording, seconds after the outage, cuts the group
			// streams in flight, and a newer group's first frames may
			// have come before an older one's last (1 run in 40 left
			// out two video frames there).
			end, _ := slices.BinarySearch(pts, pts[len(pts)-1]-1)
			cmdtest.CheckContinuous(t, b, &cmdtest.StreamPackets{Codec: codec, Pts: pts[:end]})
		}
		// The file covers the outage and the seconds around it, audio as
		// far as video.
		if v, a := spans["h264"], spans["aac"]; v < (outage+8*time.Second).Seconds() || a < v-1.5 {
			t.Errorf("%s spans %.1f s of video and %.1f s of audio, want over %.0f s of both", b, v, a, (outage + 8*time.Second).Seconds())
		}
	}
}

// longestGroup returns the longest span between two neighbouring
// keyframes of sp (the longest GOP; an audio frame for audio) apart from
// the one across its largest gap, plus a frame: how long a group of sp
// lasts at most.
func longestGroup(sp *cmdtest.StreamPackets) time.Duration {
	at, _ := mediatest.LargestGap(sp.Pts)
	var longest float64
	for i := 1; i < len(sp.KeyPts); i++ {
		if at > 0 && sp.KeyPts[i-1] <= sp.Pts[at-1] && sp.KeyPts[i] >= sp.Pts[at] {
			continue // across the hole
		}
		longest = max(longest, sp.KeyPts[i]-sp.KeyPts[i-1])
	}
	return time.Duration((longest + cmdtest.FrameDuration[sp.Codec]) * float64(time.Second))
}
