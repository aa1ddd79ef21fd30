package binary

import (
	"bytes"
	"context"
	be "encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/proctest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
)

// The end-to-end tests build the binary once and run it against the
// built-in demo, checking what it writes with ffmpeg, ffprobe and mkvinfo.

// commandPkg is the command these tests build and run.
const commandPkg = "github.com/moq-export/moq-export/cmd/moq-export"

var binary string

func TestMain(m *testing.M) {
	if os.Getenv(publisherEnv) != "" {
		// Re-executed as the publisher process of a fault test.
		os.Exit(publisherMain())
	}
	if usePrebuilt() {
		// Re-executed by proctest.KillMidRun.
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "moq-export-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "moq-export")
	build := exec.Command("go", "build", "-o", binary, commandPkg)
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building moq-export:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed; the end-to-end checks need it (apt-get install ffmpeg mkvtoolnix)", tool)
		}
	}
}

type result struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
}

// run runs the binary with args in dir and a timeout.
func run(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return runProgram(t, dir, binary, args...)
}

// runProgram runs prog (the binary, or a shell around it) like run.
func runProgram(t *testing.T, dir, prog string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := proctest.CommandContext(ctx, prog, args...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String(), elapsed: time.Since(start)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("moq-export %v: %v", args, err)
	}
	return r
}

type probeStream struct {
	CodecName    string `json:"codec_name"`
	CodecType    string `json:"codec_type"`
	NbReadFrames string `json:"nb_read_frames"`
	StartTime    string `json:"start_time"`
}

type probeResult struct {
	Streams []probeStream `json:"streams"`
	Format  struct {
		FormatName string `json:"format_name"`
		Duration   string `json:"duration"`
		StartTime  string `json:"start_time"`
	} `json:"format"`
}

// probe runs ffprobe over path (a file, or "-" with stdin) counting frames.
func probe(t *testing.T, path string) probeResult {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-count_frames", "-show_entries",
		"stream=codec_name,codec_type,nb_read_frames,start_time:format=format_name,duration,start_time", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	var p probeResult
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	return p
}

func (p probeResult) duration(t *testing.T) time.Duration {
	t.Helper()
	return seconds(t, "duration", p.Format.Duration)
}

func (p probeResult) startTime(t *testing.T) time.Duration {
	t.Helper()
	return seconds(t, "start time", p.Format.StartTime)
}

// seconds parses ffprobe's seconds value v of what.
func seconds(t *testing.T, what, v string) time.Duration {
	t.Helper()
	d, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("ffprobe reports no %s (%q)", what, v)
	}
	return time.Duration(d * float64(time.Second))
}

// streamStart returns the start time of the stream with that codec.
func (p probeResult) streamStart(t *testing.T, codec string) time.Duration {
	t.Helper()
	for _, s := range p.Streams {
		if s.CodecName == codec {
			return seconds(t, codec+" start time", s.StartTime)
		}
	}
	t.Fatalf("no %s stream in %+v", codec, p.Streams)
	return 0
}

// frames returns the frame count of the stream with that codec.
func (p probeResult) frames(t *testing.T, codec string) int {
	t.Helper()
	for _, s := range p.Streams {
		if s.CodecName == codec {
			n, _ := strconv.Atoi(s.NbReadFrames)
			return n
		}
	}
	t.Fatalf("no %s stream in %+v", codec, p.Streams)
	return 0
}

// decode runs the file through ffmpeg's decoders; ffmpeg must have nothing
// to complain about.
func decode(t *testing.T, path string) {
	t.Helper()
	cmd := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-i", path, "-f", "null", "-")
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Run(); err != nil || errOut.Len() > 0 {
		t.Errorf("ffmpeg decoding %s: %v\n%s", filepath.Base(path), err, errOut.String())
	}
}

// Frame counts of the demo media (H.264 at 30 fps, AAC and Opus at 48 kHz
// in 1024- and 960-sample frames) per second, with slack for where the cut
// falls in a B-frame group.
func expectFrames(t *testing.T, p probeResult, codec string, seconds float64) {
	t.Helper()
	perSecond := map[string]float64{"h264": 30, "vp9": 30, "aac": 48000.0 / 1024, "opus": 50}[codec]
	want := perSecond * seconds
	if got := float64(p.frames(t, codec)); got < want-3 || got > want+1 {
		t.Errorf("%s: %v frames, want about %.0f for %vs", codec, got, want, seconds)
	}
}

func TestRecordsTheDemoToAFileInEachFormatForTheDuration(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	for _, tc := range []struct {
		file   string
		extra  []string
		codecs []string
		format string
	}{
		{"demo.flv", nil, []string{"h264", "aac"}, "flv"},
		{"demo.mkv", nil, []string{"h264", "aac"}, "matroska,webm"},
		{"demo.ts", nil, []string{"h264", "aac"}, "mpegts"},
		{"demo.webm", []string{"--demo-codecs", "vp9,opus"}, []string{"vp9", "opus"}, "matroska,webm"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			r := run(t, dir, append([]string{"-o", tc.file, "--duration", "2s"}, tc.extra...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, "built-in demo") {
				t.Errorf("stderr does not say the demo is recorded: %q", r.stderr)
			}
			path := filepath.Join(dir, tc.file)
			p := probe(t, path)
			if p.Format.FormatName != tc.format {
				t.Errorf("format %q, want %q", p.Format.FormatName, tc.format)
			}
			if len(p.Streams) != len(tc.codecs) {
				t.Errorf("streams %+v, want %v", p.Streams, tc.codecs)
			}
			for _, c := range tc.codecs {
				expectFrames(t, p, c, 2)
			}
			if d := p.duration(t); d < 1900*time.Millisecond || d > 2100*time.Millisecond {
				t.Errorf("duration %v, want 2s", d)
			}
			decode(t, path)
		})
	}
}

// TestVideoAndAudioPickRenditions: by default every rendition the
// container carries is recorded (one of each kind in FLV); --video and
// --audio narrow that, "none" drops a kind, and an unknown name is a usage
// error that lists the renditions there are.
func TestVideoAndAudioPickRenditions(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	for _, tc := range []struct {
		name  string
		args  []string
		kinds map[string]int // codec_type -> streams
		want  []string       // codecs, sorted; empty: any of the kind
	}{
		{"mkv carries all", []string{"-o", "x.mkv"}, map[string]int{"video": 2, "audio": 2}, []string{"aac", "h264", "opus", "vp9"}},
		{"video only", []string{"-o", "x.mkv", "--video", "vp9", "--audio", "none"}, map[string]int{"video": 1}, []string{"vp9"}},
		{"two audio", []string{"-o", "x.mkv", "--video", "none", "--audio", "opus,aac"}, map[string]int{"audio": 2}, []string{"aac", "opus"}},
		{"flv one of each", []string{"-o", "x.flv"}, map[string]int{"video": 1, "audio": 1}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			r := run(t, dir, append([]string{"--demo-codecs", "h264,vp9,aac,opus", "--duration", "1s"}, tc.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			path := filepath.Join(dir, tc.args[1])
			p := probe(t, path)
			kinds := map[string]int{}
			var codecs []string
			for _, s := range p.Streams {
				kinds[s.CodecType]++
				codecs = append(codecs, s.CodecName)
			}
			sort.Strings(codecs)
			if fmt.Sprint(kinds) != fmt.Sprint(tc.kinds) || tc.want != nil && strings.Join(codecs, ",") != strings.Join(tc.want, ",") {
				t.Errorf("streams %v (%v), want %v (%v)", codecs, kinds, tc.want, tc.kinds)
			}
			decode(t, path)
		})
	}
	t.Run("unknown rendition", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		r := run(t, dir, "--demo-codecs", "h264,aac", "--video", "hd", "-o", "x.mkv")
		if r.code != 2 || !strings.Contains(r.stderr, `no video rendition "hd" (it has h264)`) || !strings.Contains(r.stderr, "--list") {
			t.Errorf("exit %d, stderr %q; want 2 and the renditions there are", r.code, r.stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "x.mkv")); err == nil {
			t.Error("x.mkv was created for a recording that never started")
		}
	})
}

func TestStdoutPipesIntoFFmpeg(t *testing.T) {
	needTools(t, "ffmpeg")
	for _, format := range []string{"", "mkv", "flv"} {
		t.Run("format="+format, func(t *testing.T) {
			t.Parallel()
			args := []string{"--duration", "2s"}
			if format != "" {
				args = append(args, "-f", format)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			exp := proctest.CommandContext(ctx, binary, args...)
			ff := proctest.CommandContext(ctx, "ffmpeg", "-nostdin", "-v", "error", "-i", "-", "-f", "null", "-")
			pipe, err := exp.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			ff.Stdin = pipe
			var expErr, ffErr bytes.Buffer
			exp.Stderr, ff.Stderr = &expErr, &ffErr
			if err := exp.Start(); err != nil {
				t.Fatal(err)
			}
			if err := ff.Run(); err != nil {
				t.Errorf("ffmpeg: %v", err)
			}
			if err := exp.Wait(); err != nil {
				t.Errorf("moq-export: %v: %s", err, expErr.String())
			}
			if ffErr.Len() > 0 {
				t.Errorf("ffmpeg complained:\n%s", ffErr.String())
			}
		})
	}
}

func TestStdoutIsTSAndProbes(t *testing.T) {
	needTools(t, "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	r := run(t, dir, "--duration", "1s")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	path := filepath.Join(dir, "out")
	if err := os.WriteFile(path, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	p := probe(t, path)
	if p.Format.FormatName != "mpegts" {
		t.Errorf("stdout format %q, want mpegts", p.Format.FormatName)
	}
	expectFrames(t, p, "h264", 1)
	expectFrames(t, p, "aac", 1)
}

func TestListPrintsTheRenditionsAndExits(t *testing.T) {
	t.Parallel()
	r := run(t, t.TempDir(), "--list", "--demo-codecs", "h264,vp8,aac,flac")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	want := map[string]string{
		"h264": "video  avc1.64000d  320x180 30fps  flv,mkv,ts,mp4,hls/dash",
		"vp8":  "video  vp8          320x180 30fps  mkv,webm",
		"aac":  "audio  mp4a.40.2    48000Hz 2ch    flv,mkv,ts,mp4,hls/dash",
		"flac": "audio  flac         48000Hz 1ch    mkv,mp4,hls/dash",
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("table:\n%s", r.stdout)
	}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if w, ok := want[f[0]]; !ok || strings.Join(strings.Fields(w), " ") != strings.Join(f[1:], " ") {
			t.Errorf("row %q, want %q", l, w)
		}
	}
	if r.elapsed > 5*time.Second {
		t.Errorf("--list took %v", r.elapsed)
	}
}

func TestSegmentsAreSeparateDecodableFiles(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	r := run(t, dir, "-o", "rec/{broadcast}-{n}.mkv", "--segment", "1s", "--duration", "3.5s")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "rec", "*"))
	if len(files) < 3 {
		t.Fatalf("files %v, want at least 3 segments", files)
	}
	total := 0
	for i := range files {
		path := filepath.Join(dir, "rec", fmt.Sprintf("demo-%d.mkv", i))
		p := probe(t, path)
		n := p.frames(t, "h264")
		total += n
		if d := p.duration(t); d < 900*time.Millisecond && i < len(files)-1 {
			t.Errorf("%s: duration %v, want at least the 1s segment", filepath.Base(path), d)
		}
		// Every segment starts with a keyframe: ffmpeg decodes it from its
		// first byte without errors.
		decode(t, path)
	}
	if total < 100 || total > 106 {
		t.Errorf("%d video frames over all segments, want about 105 (3.5s)", total)
	}
}

// recordUntilSignal records the demo into file in a new directory and
// sends sig once the progress line says 2 s of media were written (on a
// loaded machine the recording may start seconds after the process did:
// a fixed 2.5 s wait once gave a 0.94 s file). It returns the file's path
// and the media span the file must hold: from what was written at the
// signal to that plus the media the exit let through, at real time.
func recordUntilSignal(t *testing.T, file string, sig os.Signal) (path string, low, high time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	r := startRecorder(t, ctx, dir, "-o", file)
	at := r.waitMedia(2 * time.Second)
	if at == 0 {
		r.wait()
		t.Fatalf("no progress past 2 s:\n%s", r.log.String())
	}
	signalled := time.Now()
	if err := r.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	if err := r.wait(); err != nil {
		t.Fatalf("exit after %v: %v\n%s", sig, err, r.log.String())
	}
	took := time.Since(signalled)
	if took > 10*time.Second {
		t.Errorf("exit %v after %v", took, sig)
	}
	// The progress line is up to its interval (500 ms) behind the file.
	return filepath.Join(dir, file), at - 100*time.Millisecond, at + took + time.Second
}

func TestInterruptFinalizesTheMKV(t *testing.T) {
	needTools(t, "ffprobe", "mkvinfo")
	t.Parallel()
	path, low, high := recordUntilSignal(t, "live.mkv", os.Interrupt)
	p := probe(t, path)
	if d := p.duration(t); d < low || d > high {
		t.Errorf("duration %v, want %v-%v (what was written at the signal, and after it until the exit)", d, low, high)
	}
	out, err := exec.Command("mkvinfo", "--all", path).Output()
	if err != nil {
		t.Fatalf("mkvinfo: %v", err)
	}
	for _, want := range []string{"Duration", "Cue point", "KaxCues"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("mkvinfo shows no %s: the file was not finalized", want)
		}
	}
}

// TestSIGTERMFinalizesTheFLV: SIGTERM stops like Ctrl-C, and the FLV file
// gets its onMetaData duration patched in (a file cut short keeps 0).
func TestSIGTERMFinalizesTheFLV(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	path, low, high := recordUntilSignal(t, "live.flv", syscall.SIGTERM)
	meta := flvMetaDuration(t, path)
	if meta < low.Seconds() || meta > high.Seconds() {
		t.Errorf("onMetaData duration %.3fs, want %v-%v: the file was not finalized", meta, low, high)
	}
	p := probe(t, path)
	if d := p.duration(t).Seconds(); d < meta-0.1 || d > meta+0.1 {
		t.Errorf("ffprobe duration %.3fs, onMetaData %.3fs", d, meta)
	}
	decode(t, path)
}

// flvMetaDuration returns the onMetaData duration of the FLV file, in
// seconds.
func flvMetaDuration(t *testing.T, path string) float64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// onMetaData is an AMF0 ECMA array: the key "duration" (16-bit length,
	// name), then a number (marker 0, 64-bit big-endian float).
	key := []byte("\x00\x08duration\x00")
	i := bytes.Index(data, key)
	if i < 0 || len(data) < i+len(key)+8 {
		t.Fatal("no onMetaData duration in the FLV file")
	}
	return math.Float64frombits(be.BigEndian.Uint64(data[i+len(key):]))
}

func TestSecondInterruptQuitsAtOnce(t *testing.T) {
	t.Parallel()
	// Nobody reads stdout: once the pipe is full the recording blocks, and
	// so does finishing it after the first SIGINT.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := proctest.Command(binary, "--demo-fast", "--demo-loops", "50")
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	time.Sleep(1500 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	time.Sleep(200 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
			t.Errorf("exit %v, want 130", err)
		}
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		t.Fatal("a second SIGINT did not end the process")
	}
}

func TestClosedStdoutEndsCleanly(t *testing.T) {
	t.Parallel()
	cmd := proctest.Command(binary)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Like a player that quits: read a little, then close the pipe.
	if _, err := io.ReadFull(pipe, make([]byte, 20000)); err != nil {
		t.Fatal(err)
	}
	pipe.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after the reader left: %v\n%s", err, errOut.String())
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("still running 10s after the reader left")
	}
	// The demo's note and the summary; a track's line too when a frame
	// was in flight as the pipe closed ("dropped by the muxer 1, after the
	// end 1", seen under load), which is the recording's account, not an
	// error.
	s := errOut.String()
	other := 0
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		if !strings.HasPrefix(line, "moq-export: track ") {
			other++
		}
	}
	if strings.Contains(s, "goroutine") || strings.Contains(s, "panic") || other > 2 {
		t.Errorf("stderr after a closed pipe:\n%s", s)
	}
}

func TestUsageErrorsExitWith2(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--no-such-flag"},
		{"-o", "x.avi"},
		{"-f", "avi"},
		{"--segment", "5s"},
		{"a://x", "b://y"},
		{"--demo-codecs", "h266"},
		{"--progress", "maybe"},
		{"--tls-cert", "c.pem", "--tls-key", "k.pem"},
	} {
		r := run(t, t.TempDir(), args...)
		if r.code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, r.code, r.stderr)
		}
		if !strings.HasPrefix(r.stderr, "moq-export: ") || !strings.Contains(r.stderr, "--help") {
			t.Errorf("%v: stderr %q", args, r.stderr)
		}
	}
}

func TestRuntimeErrorsExitWith1(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// WebM cannot carry the default H.264 and AAC demo.
	r := run(t, dir, "-o", "x.webm")
	if r.code != 1 || !strings.Contains(r.stderr, "-f mkv") {
		t.Errorf("exit %d, stderr %q; want 1 and advice", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.webm")); err == nil {
		t.Error("an empty x.webm was left behind")
	}
}

func TestTokensNeverReachStderr(t *testing.T) {
	t.Parallel()
	const token = "SUPERSECRETTOKEN42"
	r := run(t, t.TempDir(), "moql://127.0.0.1:9/room?jwt="+token, "-b", "x", "-vv", "--duration", "1s")
	if r.code == 0 {
		t.Errorf("recording from a closed port succeeded")
	}
	if strings.Contains(r.stderr, token) {
		t.Errorf("token on stderr:\n%s", r.stderr)
	}
}

func TestProgressGoesToStderrOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := run(t, dir, "--duration", "1.5s", "--progress", "always", "-o", "p.ts")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("stdout %q", r.stdout)
	}
	last := lastLine(r.stderr)
	for _, want := range []string{"00:00:01.", "2 tracks", "frames", "kB", "kbit/s", "late 0", "dropped 0", "reconnects 0"} {
		if !strings.Contains(last, want) {
			t.Errorf("progress %q has no %q", last, want)
		}
	}
}

// lastLine returns the last progress line in s (the summary follows it).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i > 0; i-- {
		if !strings.HasPrefix(lines[i], "moq-export: ") {
			return lines[i]
		}
	}
	return lines[0]
}

// TestRecordsFromAURL serves two broadcasts on a loopback publisher and
// points the binary at its URL: --list names both, -b records one, and
// without -b the choice is refused with a hint.
func TestRecordsFromAURL(t *testing.T) {
	needTools(t, "ffprobe")
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	a, b := model.NewBroadcast("room/alice"), model.NewBroadcast("room/bob")
	began := time.Now()
	go demo.Publish(ctx, a, demo.Options{Realtime: true})
	go demo.Publish(ctx, b, demo.Options{Realtime: true, Renditions: []string{"opus"}})
	srv, url, pin, err := subscribe.ServeLoopback(a, subscribe.ServerOptions{Logger: quiet, Publish: []*model.Broadcast{b}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url += "?jwt=SECRETTOKEN123"

	r := run(t, t.TempDir(), url, "--tls-fingerprint", pin, "--list")
	if r.code != 0 || r.stdout != "room/alice\nroom/bob\n" {
		t.Errorf("--list: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = run(t, t.TempDir(), url, "--tls-fingerprint", pin, "--list", "-b", "room/bob")
	if r.code != 0 || !strings.Contains(r.stdout, "opus  audio  opus") {
		t.Errorf("--list -b: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = run(t, t.TempDir(), url, "--tls-fingerprint", pin, "--duration", "1s")
	if r.code != 2 || !strings.Contains(r.stderr, "pick one with -b") || strings.Contains(r.stderr, "SECRETTOKEN123") {
		t.Errorf("no -b: exit %d, stderr %q", r.code, r.stderr)
	}
	dir := t.TempDir()
	r = run(t, dir, url, "--tls-fingerprint", pin, "-b", "room/alice", "--duration", "1s", "-o", "alice.flv")
	if r.code != 0 {
		t.Fatalf("-b: exit %d, stderr %q", r.code, r.stderr)
	}
	p := probe(t, filepath.Join(dir, "alice.flv"))
	// Joining a live broadcast, video starts at its latest keyframe (up to
	// 1 s back) and the audio, whose groups are one frame each, is fetched
	// back to that keyframe: it starts within one frame (21 ms) before the
	// video and fills the whole second. When a new GOP begins between the
	// two subscriptions, video starts after audio, and the 1 s of media
	// hold that much less video.
	if d := p.streamStart(t, "h264") - p.streamStart(t, "aac"); d < -time.Millisecond || d > 25*time.Millisecond {
		t.Errorf("aac starts %v before h264, want within one audio frame", d)
	}
	expectFrames(t, p, "aac", 1)
	expectFrames(t, p, "h264", 1-(p.streamStart(t, "h264")-p.startTime(t)).Seconds())
	if st := p.startTime(t); st > 100*time.Millisecond {
		t.Errorf("the recording starts at %v, want 0", st)
	}
	// --keep-timestamps: the file keeps the broadcast's clock. Once that
	// is past 1.5 s, a recording joins at the keyframe at 1 s or later.
	time.Sleep(time.Until(began.Add(1500 * time.Millisecond)))
	r = run(t, dir, url, "--tls-fingerprint", pin, "-b", "room/alice", "--duration", "1s", "--keep-timestamps", "-o", "keep.mkv")
	if r.code != 0 {
		t.Fatalf("--keep-timestamps: exit %d, stderr %q", r.code, r.stderr)
	}
	p = probe(t, filepath.Join(dir, "keep.mkv"))
	expectFrames(t, p, "h264", 1)
	if st := p.startTime(t); st < 900*time.Millisecond {
		t.Errorf("with --keep-timestamps the recording starts at %v, want the broadcast's time (1s or later)", st)
	}
	decode(t, filepath.Join(dir, "keep.mkv"))
	r = run(t, dir, url, "--tls-insecure", "--list")
	if r.code != 0 || r.stdout != "room/alice\nroom/bob\n" {
		t.Errorf("--tls-insecure --list: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = run(t, dir, url, "--tls-fingerprint", strings.Repeat("00", 32), "--list")
	if r.code != 1 || !strings.Contains(r.stderr, "--tls-fingerprint") {
		t.Errorf("wrong pin: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestListSaysTheNegotiatedVersion: --list against a publisher that speaks
// only moq-lite-04 lists its broadcast on stdout and names the version on
// stderr, with the line saying what that version cannot carry under -v.
func TestListSaysTheNegotiatedVersion(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := model.NewBroadcast("room/old")
	go demo.Publish(ctx, a, demo.Options{Realtime: true})
	srv, url, pin, err := subscribe.ServeLoopback(a, subscribe.ServerOptions{Logger: slog.New(slog.DiscardHandler), Versions: []string{"moq-lite-04"}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	r := run(t, t.TempDir(), url, "--tls-fingerprint", pin, "--list", "-v")
	if r.code != 0 || r.stdout != "room/old\n" || !strings.Contains(r.stderr, "protocol moq-lite-04") || !strings.Contains(r.stderr, "no FETCH") {
		t.Errorf("--list: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
