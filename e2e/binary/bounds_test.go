package binary

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
)

// The bounds tests check that no run waits silently or forever (issue
// 15): --wait, --timeout, --reconnect-for, --record-all --duration, and
// selections with nothing to record refused before any file exists.

func noFiles(t *testing.T, dir string) {
	t.Helper()
	if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) != 0 {
		t.Errorf("files left behind: %v", files)
	}
}

// TestSelectionsWithNothingToRecordAreRefusedBeforeAnyFile: a named
// rendition the container cannot carry, or a selection of nothing, is an
// error that names the cause, and no file is created.
func TestSelectionsWithNothingToRecordAreRefusedBeforeAnyFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--demo-codecs", "vp8,aac", "--video", "vp8", "-o", "x.flv"}, 1, `--video vp8: rendition "vp8": flv cannot carry codec "vp8"`},
		{[]string{"--demo-codecs", "h264,flac", "--audio", "flac", "-o", "x.webm"}, 1, `--audio flac: rendition "flac"`},
		{[]string{"--demo-codecs", "vp8,aac", "--video", "vp8", "-o", "x.ts"}, 1, `--video vp8: rendition "vp8": ts cannot carry codec "vp8"`},
		{[]string{"--video", "none", "--audio", "none", "-o", "x.mkv"}, 2, "--video none --audio none selects nothing to record"},
		{[]string{"--demo-codecs", "h264", "--video", "none", "-o", "x.mkv"}, 2, "the selection leaves nothing"},
		{[]string{"--demo-codecs", "vp8", "-o", "x.ts"}, 1, "record with -f mkv or -f webm"},
	} {
		dir := t.TempDir()
		r := cmdtest.Run(t, dir, append(tc.args, "--duration", "1s")...)
		if r.Code != tc.code || !strings.Contains(r.Stderr, tc.says) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, r.Code, r.Stderr, tc.code, tc.says)
		}
		if strings.Contains(r.Stderr, "mkv cannot carry") {
			t.Errorf("%v: the container is blamed: %q", tc.args, r.Stderr)
		}
		noFiles(t, dir)
	}
}

// TestABroadcastThatIsNotAnnouncedIsNotWaitedForSilently: -b nosuch says
// once that it waits and for what; --wait ends the wait with exit 1, Ctrl-C
// with 130; no file is created.
func TestABroadcastThatIsNotAnnouncedIsNotWaitedForSilently(t *testing.T) {
	t.Parallel()
	_, url, pin := cmdtest.Relay(t, "room/alice")
	dir := t.TempDir()
	r := cmdtest.Run(t, dir, url, "--tls-fingerprint", pin, "-b", "nosuch", "--wait", "3s", "-o", "x.mkv")
	if r.Code != 1 || !strings.Contains(r.Stderr, `waiting for broadcast "nosuch" to be announced under moql://`) ||
		!strings.Contains(r.Stderr, `broadcast "nosuch" was not announced`) || strings.Count(r.Stderr, "waiting for") != 1 {
		t.Errorf("--wait 3s: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if r.Elapsed > 10*time.Second {
		t.Errorf("--wait 3s took %v", r.Elapsed)
	}
	noFiles(t, dir)

	cmd, errOut := cmdtest.Start(t, dir, url, "--tls-fingerprint", pin, "-b", "nosuch", "-o", "x.mkv")
	errOut.WaitFor(t, "until Ctrl-C; --wait DURATION gives up")
	cmd.Process.Signal(os.Interrupt)
	if code := cmdtest.ExitCode(t, cmd, 10*time.Second); code != 130 || !strings.Contains(errOut.String(), "interrupted before anything was recorded") {
		t.Errorf("Ctrl-C while waiting: exit %d, stderr %q; want 130", code, errOut.String())
	}
	noFiles(t, dir)

	// --listen --record-all where no publisher comes.
	r = cmdtest.Run(t, dir, "--listen", "127.0.0.1:0", "--record-all", "-o", "{broadcast}.mkv", "--wait", "3s")
	if r.Code != 1 || !strings.Contains(r.Stderr, "no publisher announced a broadcast on --listen 127.0.0.1:0 within --wait 3s") {
		t.Errorf("--listen --record-all --wait 3s: exit %d, stderr %q", r.Code, r.Stderr)
	}
	noFiles(t, dir)
}

// TestRecordAllWithADurationExits: --record-all --duration records each
// broadcast announced for the duration, then exits 0.
func TestRecordAllWithADurationExits(t *testing.T) {
	cmdtest.NeedTools(t, "ffprobe")
	t.Parallel()
	_, url, pin := cmdtest.Relay(t, "room/alice", "room/bob")
	dir := t.TempDir()
	r := cmdtest.Run(t, dir, url, "--tls-fingerprint", pin, "--record-all", "-o", "rec/{broadcast}.mkv", "--duration", "1s")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	for _, name := range []string{"room_alice", "room_bob"} {
		p := cmdtest.Probe(t, filepath.Join(dir, "rec", name+".mkv"))
		if d := p.Duration(t); d < 800*time.Millisecond || d > 1200*time.Millisecond {
			t.Errorf("%s: duration %v, want 1s", name, d)
		}
	}
}

// TestTimeoutBoundsTheRun: --timeout stops a recording that has no
// --duration and finishes its file (exit 0), and fails a run that recorded
// nothing (exit 1).
func TestTimeoutBoundsTheRun(t *testing.T) {
	cmdtest.NeedTools(t, "ffprobe", "mkvinfo")
	t.Parallel()
	dir := t.TempDir()
	r := cmdtest.Run(t, dir, "-o", "x.mkv", "--timeout", "2s")
	if r.Code != 0 || !strings.Contains(r.Stderr, "stopped after --timeout 2s") {
		t.Fatalf("exit %d, stderr %q", r.Code, r.Stderr)
	}
	p := cmdtest.Probe(t, filepath.Join(dir, "x.mkv"))
	if d := p.Duration(t); d < 1*time.Second || d > 2100*time.Millisecond {
		t.Errorf("duration %v, want about 2s", d)
	}
	if out, err := exec.Command("mkvinfo", "--all", filepath.Join(dir, "x.mkv")).Output(); err != nil || !bytes.Contains(out, []byte("Cue point")) {
		t.Errorf("the file was not finalized: %v", err)
	}

	_, url, pin := cmdtest.Relay(t, "room/alice")
	r = cmdtest.Run(t, t.TempDir(), url, "--tls-fingerprint", pin, "-b", "nosuch", "--timeout", "2s", "-o", "y.mkv")
	if r.Code != 1 || !strings.Contains(r.Stderr, "nothing was recorded within --timeout 2s") {
		t.Errorf("nothing to record: exit %d, stderr %q", r.Code, r.Stderr)
	}
}

// TestReconnectForGivesUp: when the relay goes away for longer than
// --reconnect-for, the command stops trying, finishes the file and exits 1.
func TestReconnectForGivesUp(t *testing.T) {
	cmdtest.NeedTools(t, "ffprobe", "mkvinfo")
	t.Parallel()
	srv, url, pin := cmdtest.Relay(t, "room/alice")
	dir := t.TempDir()
	cmd, errOut := cmdtest.Start(t, dir, url, "--tls-fingerprint", pin, "-b", "room/alice", "-o", "x.mkv", "--reconnect-for", "1s", "--progress", "always")
	errOut.WaitForMedia(t, time.Second)
	srv.Close()
	if code := cmdtest.ExitCode(t, cmd, 25*time.Second); code != 1 || !strings.Contains(errOut.String(), "gave up reconnecting after 1s") {
		t.Errorf("exit %d, stderr %q; want 1 and the give-up", code, errOut.String())
	}
	path := filepath.Join(dir, "x.mkv")
	if d := cmdtest.Probe(t, path).Duration(t); d < time.Second {
		t.Errorf("duration %v: the media before the relay went is not in the file", d)
	}
	if out, err := exec.Command("mkvinfo", "--all", path).Output(); err != nil || !bytes.Contains(out, []byte("Cue point")) {
		t.Errorf("the file was not finalized: %v", err)
	}
}

// TestShortDemoSamplesDoNotFreeze: the 2-3 s samples (av1, vp9, flac, ac3)
// loop on their own length: 5 s of a recording hold 5 s of each, without a
// gap between two frames of a track, and the tracks start together.
func TestShortDemoSamplesDoNotFreeze(t *testing.T) {
	cmdtest.NeedTools(t, "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	r := cmdtest.Run(t, dir, "--demo-fast", "--demo-loops", "3", "--demo-codecs", "av1,vp9,flac,ac3", "--duration", "5s", "-o", "x.mkv")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "packet=stream_index,pts_time", "-of", "csv=p=0", filepath.Join(dir, "x.mkv")).Output()
	if err != nil {
		t.Fatal(err)
	}
	pts := map[string][]float64{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var idx string
		var ts float64
		if _, err := fmt.Sscanf(strings.Replace(l, ",", " ", 1), "%s %g", &idx, &ts); err != nil {
			t.Fatalf("packet %q: %v", l, err)
		}
		pts[idx] = append(pts[idx], ts)
	}
	if len(pts) != 4 {
		t.Fatalf("%d streams, want 4", len(pts))
	}
	for idx, ts := range pts {
		sort.Float64s(ts)
		gap := 0.0
		for i := 1; i < len(ts); i++ {
			gap = max(gap, ts[i]-ts[i-1])
		}
		// Frames are 33 ms (video) to 96 ms (flac) apart.
		if first, last := ts[0], ts[len(ts)-1]; first > 0.1 || last < 4.8 || gap > 0.1 {
			t.Errorf("stream %s: frames from %.3fs to %.3fs, largest gap %.3fs; want 0 to 5s without a gap", idx, first, last, gap)
		}
	}
}

// TestKeptTimestampsGiveTheFLVItsRecordingsDuration: a broadcast joined 30
// minutes into its timeline, recorded for 2 s with --keep-timestamps, is an
// FLV whose onMetaData duration is those 2 s, not the 30 minutes.
func TestKeptTimestampsGiveTheFLVItsRecordingsDuration(t *testing.T) {
	cmdtest.NeedTools(t, "ffprobe")
	t.Parallel()
	_, url, pin := cmdtest.RelayWith(t, demo.Options{Realtime: true, Offset: 30 * time.Minute}, "room/alice")
	dir := t.TempDir()
	r := cmdtest.Run(t, dir, url, "--tls-fingerprint", pin, "-b", "room/alice", "--keep-timestamps", "--duration", "2s", "-o", "x.flv")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	path := filepath.Join(dir, "x.flv")
	meta := flvMetaDuration(t, path)
	if meta < 1.9 || meta > 2.1 {
		t.Errorf("onMetaData duration %.3fs, want the 2s recorded", meta)
	}
	p := cmdtest.Probe(t, path)
	if st := p.StartTime(t); st < 30*time.Minute || st > 30*time.Minute+5*time.Second {
		t.Errorf("the file starts at %v, want the broadcast's 30 minutes", st)
	}
	cmdtest.Decode(t, path)
}
