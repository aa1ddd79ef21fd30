package binary

import (
	"bytes"
	"context"
	be "encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
	"github.com/moq-export/moq-export/internal/testutil/proctest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
)

// The end-to-end tests build the binary once (cmdtest.Main) and run it
// against the built-in demo, checking what it writes with ffmpeg, ffprobe
// and mkvinfo.

func TestMain(m *testing.M) { os.Exit(cmdtest.Main(m)) }

func TestRecordsTheDemoToAFileInEachFormatForTheDuration(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
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
			r := cmdtest.Run(t, dir, append([]string{"-o", tc.file, "--duration", "2s"}, tc.extra...)...)
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			if !strings.Contains(r.Stderr, "built-in demo") {
				t.Errorf("stderr does not say the demo is recorded: %q", r.Stderr)
			}
			path := filepath.Join(dir, tc.file)
			p := cmdtest.Probe(t, path)
			if p.Format.FormatName != tc.format {
				t.Errorf("format %q, want %q", p.Format.FormatName, tc.format)
			}
			if len(p.Streams) != len(tc.codecs) {
				t.Errorf("streams %+v, want %v", p.Streams, tc.codecs)
			}
			for _, c := range tc.codecs {
				cmdtest.ExpectFrames(t, p, c, 2)
			}
			if d := p.Duration(t); d < 1900*time.Millisecond || d > 2100*time.Millisecond {
				t.Errorf("duration %v, want 2s", d)
			}
			cmdtest.Decode(t, path)
		})
	}
}

// TestVideoAndAudioPickRenditions: by default every rendition the
// container carries is recorded (one of each kind in FLV); --video and
// --audio narrow that, "none" drops a kind, and an unknown name is a usage
// error that lists the renditions there are.
func TestVideoAndAudioPickRenditions(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
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
			r := cmdtest.Run(t, dir, append([]string{"--demo-codecs", "h264,vp9,aac,opus", "--duration", "1s"}, tc.args...)...)
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			path := filepath.Join(dir, tc.args[1])
			p := cmdtest.Probe(t, path)
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
			cmdtest.Decode(t, path)
		})
	}
	t.Run("unknown rendition", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		r := cmdtest.Run(t, dir, "--demo-codecs", "h264,aac", "--video", "hd", "-o", "x.mkv")
		if r.Code != 2 || !strings.Contains(r.Stderr, `no video rendition "hd" (it has h264)`) || !strings.Contains(r.Stderr, "--list") {
			t.Errorf("exit %d, stderr %q; want 2 and the renditions there are", r.Code, r.Stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "x.mkv")); err == nil {
			t.Error("x.mkv was created for a recording that never started")
		}
	})
}

func TestStdoutPipesIntoFFmpeg(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg")
	for _, format := range []string{"", "mkv", "flv"} {
		t.Run("format="+format, func(t *testing.T) {
			t.Parallel()
			args := []string{"--duration", "2s"}
			if format != "" {
				args = append(args, "-f", format)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			exp := proctest.CommandContext(ctx, cmdtest.Binary, args...)
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
	cmdtest.NeedTools(t, "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	r := cmdtest.Run(t, dir, "--duration", "1s")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	path := filepath.Join(dir, "out")
	if err := os.WriteFile(path, []byte(r.Stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	p := cmdtest.Probe(t, path)
	if p.Format.FormatName != "mpegts" {
		t.Errorf("stdout format %q, want mpegts", p.Format.FormatName)
	}
	cmdtest.ExpectFrames(t, p, "h264", 1)
	cmdtest.ExpectFrames(t, p, "aac", 1)
}

func TestListPrintsTheRenditionsAndExits(t *testing.T) {
	t.Parallel()
	r := cmdtest.Run(t, t.TempDir(), "--list", "--demo-codecs", "h264,vp8,aac,flac")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	want := map[string]string{
		"h264": "video  avc1.64000d  320x180 30fps  flv,mkv,ts,mp4,hls/dash",
		"vp8":  "video  vp8          320x180 30fps  mkv,webm",
		"aac":  "audio  mp4a.40.2    48000Hz 2ch    flv,mkv,ts,mp4,hls/dash",
		"flac": "audio  flac         48000Hz 1ch    mkv,mp4,hls/dash",
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("table:\n%s", r.Stdout)
	}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if w, ok := want[f[0]]; !ok || strings.Join(strings.Fields(w), " ") != strings.Join(f[1:], " ") {
			t.Errorf("row %q, want %q", l, w)
		}
	}
	if r.Elapsed > 5*time.Second {
		t.Errorf("--list took %v", r.Elapsed)
	}
}

func TestSegmentsAreSeparateDecodableFiles(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	r := cmdtest.Run(t, dir, "-o", "rec/{broadcast}-{n}.mkv", "--segment", "1s", "--duration", "3.5s")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "rec", "*"))
	if len(files) < 3 {
		t.Fatalf("files %v, want at least 3 segments", files)
	}
	total := 0
	for i := range files {
		path := filepath.Join(dir, "rec", fmt.Sprintf("demo-%d.mkv", i))
		p := cmdtest.Probe(t, path)
		n := p.Frames(t, "h264")
		total += n
		if d := p.Duration(t); d < 900*time.Millisecond && i < len(files)-1 {
			t.Errorf("%s: duration %v, want at least the 1s segment", filepath.Base(path), d)
		}
		// Every segment starts with a keyframe: ffmpeg decodes it from its
		// first byte without errors.
		cmdtest.Decode(t, path)
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
	r := cmdtest.StartRecorder(t, ctx, dir, "-o", file)
	at := r.WaitMedia(2 * time.Second)
	if at == 0 {
		r.Wait()
		t.Fatalf("no progress past 2 s:\n%s", r.Log.String())
	}
	signalled := time.Now()
	if err := r.Cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(); err != nil {
		t.Fatalf("exit after %v: %v\n%s", sig, err, r.Log.String())
	}
	took := time.Since(signalled)
	if took > 10*time.Second {
		t.Errorf("exit %v after %v", took, sig)
	}
	// The progress line is up to its interval (500 ms) behind the file.
	return filepath.Join(dir, file), at - 100*time.Millisecond, at + took + time.Second
}

func TestInterruptFinalizesTheMKV(t *testing.T) {
	cmdtest.NeedTools(t, "ffprobe", "mkvinfo")
	t.Parallel()
	path, low, high := recordUntilSignal(t, "live.mkv", os.Interrupt)
	p := cmdtest.Probe(t, path)
	if d := p.Duration(t); d < low || d > high {
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
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	path, low, high := recordUntilSignal(t, "live.flv", syscall.SIGTERM)
	meta := flvMetaDuration(t, path)
	if meta < low.Seconds() || meta > high.Seconds() {
		t.Errorf("onMetaData duration %.3fs, want %v-%v: the file was not finalized", meta, low, high)
	}
	p := cmdtest.Probe(t, path)
	if d := p.Duration(t).Seconds(); d < meta-0.1 || d > meta+0.1 {
		t.Errorf("ffprobe duration %.3fs, onMetaData %.3fs", d, meta)
	}
	cmdtest.Decode(t, path)
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
	cmd := proctest.Command(cmdtest.Binary, "--demo-fast", "--demo-loops", "50")
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
	cmd := proctest.Command(cmdtest.Binary)
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
		r := cmdtest.Run(t, t.TempDir(), args...)
		if r.Code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, r.Code, r.Stderr)
		}
		if !strings.HasPrefix(r.Stderr, "moq-export: ") || !strings.Contains(r.Stderr, "--help") {
			t.Errorf("%v: stderr %q", args, r.Stderr)
		}
	}
}

func TestRuntimeErrorsExitWith1(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// WebM cannot carry the default H.264 and AAC demo.
	r := cmdtest.Run(t, dir, "-o", "x.webm")
	if r.Code != 1 || !strings.Contains(r.Stderr, "-f mkv") {
		t.Errorf("exit %d, stderr %q; want 1 and advice", r.Code, r.Stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.webm")); err == nil {
		t.Error("an empty x.webm was left behind")
	}
}

func TestTokensNeverReachStderr(t *testing.T) {
	t.Parallel()
	const token = "SUPERSECRETTOKEN42"
	r := cmdtest.Run(t, t.TempDir(), "moql://127.0.0.1:9/room?jwt="+token, "-b", "x", "-vv", "--duration", "1s")
	if r.Code == 0 {
		t.Errorf("recording from a closed port succeeded")
	}
	if strings.Contains(r.Stderr, token) {
		t.Errorf("token on stderr:\n%s", r.Stderr)
	}
}

func TestProgressGoesToStderrOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := cmdtest.Run(t, dir, "--duration", "1.5s", "--progress", "always", "-o", "p.ts")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	if r.Stdout != "" {
		t.Errorf("stdout %q", r.Stdout)
	}
	last := cmdtest.LastLine(r.Stderr)
	for _, want := range []string{"00:00:01.", "2 tracks", "frames", "kB", "kbit/s", "late 0", "dropped 0", "reconnects 0"} {
		if !strings.Contains(last, want) {
			t.Errorf("progress %q has no %q", last, want)
		}
	}
}

// TestRecordsFromAURL serves two broadcasts on a loopback publisher and
// points the binary at its URL: --list names both, -b records one, and
// without -b the choice is refused with a hint.
func TestRecordsFromAURL(t *testing.T) {
	cmdtest.NeedTools(t, "ffprobe")
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

	r := cmdtest.Run(t, t.TempDir(), url, "--tls-fingerprint", pin, "--list")
	if r.Code != 0 || r.Stdout != "room/alice\nroom/bob\n" {
		t.Errorf("--list: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	r = cmdtest.Run(t, t.TempDir(), url, "--tls-fingerprint", pin, "--list", "-b", "room/bob")
	if r.Code != 0 || !strings.Contains(r.Stdout, "opus  audio  opus") {
		t.Errorf("--list -b: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	r = cmdtest.Run(t, t.TempDir(), url, "--tls-fingerprint", pin, "--duration", "1s")
	if r.Code != 2 || !strings.Contains(r.Stderr, "pick one with -b") || strings.Contains(r.Stderr, "SECRETTOKEN123") {
		t.Errorf("no -b: exit %d, stderr %q", r.Code, r.Stderr)
	}
	dir := t.TempDir()
	r = cmdtest.Run(t, dir, url, "--tls-fingerprint", pin, "-b", "room/alice", "--duration", "1s", "-o", "alice.flv")
	if r.Code != 0 {
		t.Fatalf("-b: exit %d, stderr %q", r.Code, r.Stderr)
	}
	p := cmdtest.Probe(t, filepath.Join(dir, "alice.flv"))
	// Joining a live broadcast, video starts at its latest keyframe (up to
	// 1 s back) and the audio, whose groups are one frame each, is fetched
	// back to that keyframe: it starts within one frame (21 ms) before the
	// video and fills the whole second. When a new GOP begins between the
	// two subscriptions, video starts after audio, and the 1 s of media
	// hold that much less video.
	if d := p.StreamStart(t, "h264") - p.StreamStart(t, "aac"); d < -time.Millisecond || d > 25*time.Millisecond {
		t.Errorf("aac starts %v before h264, want within one audio frame", d)
	}
	cmdtest.ExpectFrames(t, p, "aac", 1)
	cmdtest.ExpectFrames(t, p, "h264", 1-(p.StreamStart(t, "h264")-p.StartTime(t)).Seconds())
	if st := p.StartTime(t); st > 100*time.Millisecond {
		t.Errorf("the recording starts at %v, want 0", st)
	}
	// --keep-timestamps: the file keeps the broadcast's clock. Once that
	// is past 1.5 s, a recording joins at the keyframe at 1 s or later.
	time.Sleep(time.Until(began.Add(1500 * time.Millisecond)))
	r = cmdtest.Run(t, dir, url, "--tls-fingerprint", pin, "-b", "room/alice", "--duration", "1s", "--keep-timestamps", "-o", "keep.mkv")
	if r.Code != 0 {
		t.Fatalf("--keep-timestamps: exit %d, stderr %q", r.Code, r.Stderr)
	}
	p = cmdtest.Probe(t, filepath.Join(dir, "keep.mkv"))
	cmdtest.ExpectFrames(t, p, "h264", 1)
	if st := p.StartTime(t); st < 900*time.Millisecond {
		t.Errorf("with --keep-timestamps the recording starts at %v, want the broadcast's time (1s or later)", st)
	}
	cmdtest.Decode(t, filepath.Join(dir, "keep.mkv"))
	r = cmdtest.Run(t, dir, url, "--tls-insecure", "--list")
	if r.Code != 0 || r.Stdout != "room/alice\nroom/bob\n" {
		t.Errorf("--tls-insecure --list: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	r = cmdtest.Run(t, dir, url, "--tls-fingerprint", strings.Repeat("00", 32), "--list")
	if r.Code != 1 || !strings.Contains(r.Stderr, "--tls-fingerprint") {
		t.Errorf("wrong pin: exit %d, stderr %q", r.Code, r.Stderr)
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
	r := cmdtest.Run(t, t.TempDir(), url, "--tls-fingerprint", pin, "--list", "-v")
	if r.Code != 0 || r.Stdout != "room/old\n" || !strings.Contains(r.Stderr, "protocol moq-lite-04") || !strings.Contains(r.Stderr, "no FETCH") {
		t.Errorf("--list: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
}
