package service

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
)

// sameFramesAsSample compares the packets of the stream of kind ("video",
// "audio") in the file at path, frame by frame, with the frames of the
// test sample the demo published: the same count (the whole sample, or its
// last want frames), each pts within 1 ms of the published one (both from
// the first), and the same key flags.
func sameFramesAsSample(t *testing.T, path, kind, sample string, want int) {
	t.Helper()
	p := mediatest.Probe(t, path)
	var pkts []mediatest.Packet
	for _, s := range p.Streams {
		if s.CodecType == kind {
			pkts = p.PacketsOf(s.Index)
		}
	}
	frames := samples.MustLoadSample(sample).Frames
	if want > 0 && want < len(frames) {
		frames = frames[len(frames)-want:]
	}
	if len(pkts) != len(frames) {
		t.Fatalf("%s: %d %s packets, published %d frames", path, len(pkts), kind, len(frames))
	}
	// File order is decode order; compare in presentation order.
	slices.SortFunc(pkts, func(a, b mediatest.Packet) int { return strings.Compare(pad(a.PTSTime), pad(b.PTSTime)) })
	pub := slices.Clone(frames)
	slices.SortFunc(pub, func(a, b samples.SampleFrame) int { return int(a.Timestamp - b.Timestamp) })
	first, _ := strconv.ParseFloat(pkts[0].PTSTime, 64)
	for i, pk := range pkts {
		got, err := strconv.ParseFloat(pk.PTSTime, 64)
		if err != nil {
			t.Fatalf("packet %d: pts_time %q", i, pk.PTSTime)
		}
		at := time.Duration((got - first) * float64(time.Second))
		exp := time.Duration(pub[i].Timestamp-pub[0].Timestamp) * time.Microsecond
		if d := at - exp; d > time.Millisecond || d < -time.Millisecond {
			t.Fatalf("%s %s packet %d at %v, published at %v", path, kind, i, at, exp)
		}
		if key := strings.Contains(pk.Flags, "K"); kind == "video" && key != pub[i].Keyframe {
			t.Fatalf("%s %s packet %d: key %v, published %v", path, kind, i, key, pub[i].Keyframe)
		}
	}
}

// pad makes a pts_time sort as a number.
func pad(s string) string {
	f, _ := strconv.ParseFloat(s, 64)
	return fmt.Sprintf("%020.6f", f+1e6)
}

// TestTheDemoPublishesIntoListen is the README's way to try a listening
// service on one machine: one moq-export listens, a second publishes the
// built-in demo into it with --demo-to, pinning the fingerprint the first
// printed. The listener records the broadcast frame for frame and both
// exit 0 when the demo ends.
func TestTheDemoPublishesIntoListen(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	l := cmdtest.StartListener(t, dir, "-b", "alice", "-o", "alice.mkv")
	r := cmdtest.Run(t, dir, "--demo-to", "moql://"+l.Addr+"/", "--tls-fingerprint", l.Pin, "-b", "alice", "--demo-loops", "1")
	if r.Code != 0 || !strings.Contains(r.Stderr, `publishing the built-in demo broadcast "alice" into moql://`+l.Addr) {
		t.Fatalf("--demo-to: exit %d\n%s", r.Code, r.Stderr)
	}
	if err := l.Wait(t, 20*time.Second); err != nil {
		t.Fatalf("listener: %v\n%s", err, strings.Join(l.Log, "\n"))
	}
	path := filepath.Join(dir, "alice.mkv")
	cmdtest.Decode(t, path)
	// -b names the broadcast, so the listener subscribes the moment it is
	// announced, before its first frame: every video frame is recorded.
	sameFramesAsSample(t, path, "video", "h264", 0)
	if n := cmdtest.Probe(t, path).Frames(t, "aac"); n < len(samples.MustLoadSample("aac").Frames)-47 {
		t.Errorf("aac: %d frames", n)
	}
}

// TestDemoToRefusesRecordingFlags: --demo-to records nothing, so the
// output flags are a mistake (exit 2), as is a second URL.
func TestDemoToRefusesRecordingFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--demo-to", "moql://127.0.0.1:1/", "-o", "x.mkv"},
		{"--demo-to", "moql://127.0.0.1:1/", "--segment", "2s"},
		{"moql://127.0.0.1:1/", "--demo-to", "moql://127.0.0.1:2/"},
		{"--demo-to", "ftp://127.0.0.1:1/"},
	} {
		r := cmdtest.Run(t, t.TempDir(), args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, "--demo-to") {
			t.Errorf("%v: exit %d, stderr %q", args, r.Code, r.Stderr)
		}
	}
}

var demoServedLine = regexp.MustCompile(`served over loopback QUIC at (moql://\S+) \(SHA-256 fingerprint ([0-9a-f]{64})`)

// TestASecondMoqExportRecordsTheDemoByItsFingerprint: the built-in demo
// prints its server's URL and fingerprint, and a second moq-export records
// from it with that pin (no --tls-insecure).
func TestASecondMoqExportRecordsTheDemoByItsFingerprint(t *testing.T) {
	cmdtest.NeedTools(t, "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	cmd, lines := cmdtest.Start(t, dir, "-o", "first.ts", "--duration", "30s")
	lines.WaitFor(t, "served over loopback QUIC")
	m := demoServedLine.FindStringSubmatch(lines.String())
	if m == nil {
		t.Fatalf("no URL and fingerprint in:\n%s", lines.String())
	}
	r := cmdtest.Run(t, dir, m[1], "--tls-fingerprint", m[2], "-b", "demo", "-o", "second.mkv", "--duration", "2s")
	cmd.Process.Signal(os.Interrupt)
	cmdtest.ExitCode(t, cmd, 20*time.Second)
	if r.Code != 0 {
		t.Fatalf("second moq-export: exit %d\n%s", r.Code, r.Stderr)
	}
	cmdtest.Decode(t, filepath.Join(dir, "second.mkv"))
	cmdtest.ExpectFrames(t, cmdtest.Probe(t, filepath.Join(dir, "second.mkv")), "h264", 2)
}
