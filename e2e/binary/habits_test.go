package binary

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
	"github.com/moq-export/moq-export/internal/testutil/proctest"
	"golang.org/x/sys/unix"
)

// The habits tests check the command as people script it (issue 15): what
// counts as a terminal, help and version, completion, the overwrite rule
// and tokens kept off the command line.

// openPTY returns a pseudo-terminal: what the test writes to master the
// command reads from slave, and what the command writes to slave the test
// reads from master.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatalf("unlocking the pty: %v", err)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatalf("pty number: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatalf("opening the pty: %v", err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

// readPTY collects what the command writes to the pty.
func readPTY(master *os.File) *cmdtest.StderrLines {
	r := &cmdtest.StderrLines{More: make(chan struct{}, 1)}
	go io.Copy(r, master)
	return r
}

func TestDevNullIsNotATerminal(t *testing.T) {
	t.Parallel()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	cmd := proctest.Command(cmdtest.Binary, "--duration", "1s")
	cmd.Stdout = null
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("moq-export --duration 1s > /dev/null: %v\n%s", err, errOut.String())
	}
}

func TestMediaIsNotWrittenToATerminal(t *testing.T) {
	t.Parallel()
	master, slave := openPTY(t)
	out := readPTY(master)
	cmd := proctest.Command(cmdtest.Binary, "--duration", "1s")
	cmd.Stdout = slave
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(errOut.String(), "refusing to write ts media to a terminal") {
		t.Errorf("stdout a terminal: %v, stderr %q; want exit 2 and a refusal", err, errOut.String())
	}
	if s := out.String(); s != "" {
		t.Errorf("the terminal got %q", s)
	}
}

func TestHelpAndVersionAreCommands(t *testing.T) {
	t.Parallel()
	r := cmdtest.Run(t, t.TempDir(), "help")
	if r.Code != 0 || !strings.Contains(r.Stdout, "--broadcast") || !strings.Contains(r.Stdout, "completion") {
		t.Errorf("help: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	r = cmdtest.Run(t, t.TempDir(), "helpp")
	if r.Code != 2 || !strings.Contains(r.Stderr, "neither a command") {
		t.Errorf("a mistyped command: exit %d, stderr %q", r.Code, r.Stderr)
	}
	r1, r2 := cmdtest.Run(t, t.TempDir(), "version"), cmdtest.Run(t, t.TempDir(), "--version")
	if r1.Code != 0 || !strings.HasPrefix(r1.Stdout, "moq-export ") || r1.Stdout != r2.Stdout {
		t.Errorf("version %q (exit %d), --version %q", r1.Stdout, r1.Code, r2.Stdout)
	}
}

// buildWith builds the command with extra go build flags.
func buildWith(t *testing.T, flags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "moq-export")
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", bin, cmdtest.CommandPkg)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", flags, err, out)
	}
	return bin
}

func TestVersionNamesTheCommitFromLdflags(t *testing.T) {
	t.Parallel()
	const pkg = "github.com/moq-export/moq-export/internal/cli"
	bin := buildWith(t, "-ldflags", "-X "+pkg+".Version=v9.8.7 -X "+pkg+".Commit=0123456789abcdef0123")
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), "moq-export v9.8.7 (commit 0123456789ab)\n"; got != want {
		t.Errorf("version %q, want %q", got, want)
	}
}

// TestVersionNamesTheCommitOfAClone: built in a git clone, the version
// names the commit from the build info without any -ldflags.
func TestVersionNamesTheCommitOfAClone(t *testing.T) {
	t.Parallel()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skip("not built in a git clone")
	}
	if st, err := os.Stat(filepath.Join(strings.TrimSpace(string(top)), ".git")); err != nil || !st.IsDir() {
		t.Skip("a git worktree: the go command stamps VCS information only in a clone with a .git directory")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "moq-export")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, cmdtest.CommandPkg).CombinedOutput(); err != nil {
		if bytes.Contains(out, []byte("error obtaining VCS status")) {
			t.Skipf("git cannot be asked here: %s", out)
		}
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "commit " + string(head[:12]); !strings.Contains(string(out), want) {
		t.Errorf("version %q does not name %s", out, want)
	}
}

func TestCompletionScripts(t *testing.T) {
	t.Parallel()
	for shell, want := range map[string]string{"bash": "__start_moq-export", "zsh": "#compdef moq-export", "fish": "complete -c moq-export"} {
		r := cmdtest.Run(t, t.TempDir(), "completion", shell)
		if r.Code != 0 || !strings.Contains(r.Stdout, want) {
			t.Errorf("completion %s: exit %d, no %q in %.200q; stderr %q", shell, r.Code, want, r.Stdout, r.Stderr)
			continue
		}
		if _, err := exec.LookPath(shell); err == nil {
			check := exec.Command(shell, "-n")
			check.Stdin = strings.NewReader(r.Stdout)
			if out, err := check.CombinedOutput(); err != nil {
				t.Errorf("%s -n on the completion script: %v\n%s", shell, err, out)
			}
		}
	}
	// What the scripts ask the command: flags complete.
	r := cmdtest.Run(t, t.TempDir(), "__complete", "--vid")
	if r.Code != 0 || !strings.Contains(r.Stdout, "--video") {
		t.Errorf("__complete --vid: exit %d, stdout %q", r.Code, r.Stdout)
	}
}

// TestOverwriteRule: a plain -o file that exists is kept unless -y says so;
// -n never overwrites; on a terminal the user is asked.
func TestOverwriteRule(t *testing.T) {
	cmdtest.NeedTools(t, "ffprobe")
	t.Parallel()
	const old = "an earlier recording"
	setup := func(t *testing.T) (dir, path string) {
		dir = t.TempDir()
		path = filepath.Join(dir, "demo.mkv")
		if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir, path
	}
	kept := func(t *testing.T, path string) {
		t.Helper()
		if b, err := os.ReadFile(path); err != nil || string(b) != old {
			t.Errorf("the existing file was changed: %q, %v", b, err)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
	}{{"default", nil}, {"-n", []string{"-n"}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, path := setup(t)
			r := cmdtest.Run(t, dir, append([]string{"--duration", "1s", "-o", "demo.mkv"}, tc.args...)...)
			if r.Code != 1 || !strings.Contains(r.Stderr, "demo.mkv already exists: pass -y to overwrite it") {
				t.Errorf("exit %d, stderr %q; want 1 and a refusal", r.Code, r.Stderr)
			}
			if strings.Contains(r.Stderr, "recording the built-in demo") {
				t.Errorf("the refusal came after connecting: %q", r.Stderr)
			}
			kept(t, path)
		})
	}
	t.Run("-y", func(t *testing.T) {
		t.Parallel()
		dir, path := setup(t)
		r := cmdtest.Run(t, dir, "--duration", "1s", "-o", "demo.mkv", "-y")
		if r.Code != 0 {
			t.Fatalf("exit %d: %s", r.Code, r.Stderr)
		}
		cmdtest.ExpectFrames(t, cmdtest.Probe(t, path), "h264", 1)
	})
	t.Run("-y -n", func(t *testing.T) {
		t.Parallel()
		dir, path := setup(t)
		if r := cmdtest.Run(t, dir, "-o", "demo.mkv", "-y", "-n"); r.Code != 2 {
			t.Errorf("exit %d, want 2: %s", r.Code, r.Stderr)
		}
		kept(t, path)
	})
	for _, answer := range []string{"n", "y"} {
		t.Run("asked on a terminal, answer "+answer, func(t *testing.T) {
			t.Parallel()
			dir, path := setup(t)
			master, slave := openPTY(t)
			term := readPTY(master)
			cmd := proctest.Command(cmdtest.Binary, "--duration", "1s", "-o", "demo.mkv")
			cmd.Dir = dir
			cmd.Stdin, cmd.Stderr = slave, slave
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			term.WaitFor(t, "demo.mkv already exists. Overwrite? [y/N] ")
			if _, err := master.WriteString(answer + "\n"); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			if answer == "n" {
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
					t.Errorf("answer n: %v, want exit 1; terminal %q", err, term.String())
				}
				kept(t, path)
				return
			}
			if err != nil {
				t.Fatalf("answer y: %v; terminal %q", err, term.String())
			}
			cmdtest.ExpectFrames(t, cmdtest.Probe(t, path), "h264", 1)
		})
	}
}

// TestTokensComeFromAFileOrTheEnvironment: --token-file and MOQ_TOKEN put
// the token in the URL dialled (logged redacted with -v), never on stderr.
func TestTokensComeFromAFileOrTheEnvironment(t *testing.T) {
	t.Parallel()
	const token = "FILETOKEN0123456789"
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name string
		args []string
		env  string
	}{
		{"--token-file", []string{"--token-file", file}, ""},
		{"MOQ_TOKEN", nil, "MOQ_TOKEN=" + token},
	} {
		cmd := proctest.CommandContext(ctx, cmdtest.Binary, append([]string{"moql://127.0.0.1:9/room", "-b", "x", "-v"}, tc.args...)...)
		cmd.Env = append(os.Environ(), tc.env)
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		if err := cmd.Run(); err == nil {
			t.Errorf("%s: recording from a closed port succeeded", tc.name)
		}
		s := errOut.String()
		if strings.Contains(s, token) {
			t.Errorf("%s: token on stderr:\n%s", tc.name, s)
		}
		if !strings.Contains(s, "moql://127.0.0.1:9/room?jwt=REDACTED") {
			t.Errorf("%s: the URL dialled has no jwt parameter:\n%s", tc.name, s)
		}
	}
	r := cmdtest.Run(t, dir, "moql://127.0.0.1:9/room?jwt=abcdef", "--token-file", file)
	if r.Code != 2 || !strings.Contains(r.Stderr, "already has a jwt") {
		t.Errorf("URL token and --token-file: exit %d, stderr %q", r.Code, r.Stderr)
	}
	r = cmdtest.Run(t, dir, "moql://127.0.0.1:9/room", "--token-file", filepath.Join(dir, "nosuch"))
	if r.Code != 2 || !strings.Contains(r.Stderr, "--token-file") {
		t.Errorf("missing token file: exit %d, stderr %q", r.Code, r.Stderr)
	}
}

// TestOneLogStyleAtEveryVerbosity: every stderr line is "moq-export: ..."
// at the default verbosity, with -v and -vv (warnings too); with
// --log-format json every line is a JSON record; -q leaves stderr empty
// for a recording that goes well.
func TestOneLogStyleAtEveryVerbosity(t *testing.T) {
	t.Parallel()
	// H.265 in FLV warns (Enhanced FLV).
	base := []string{"--demo-codecs", "h265,aac", "--duration", "1s", "-o", "x.flv", "-y"}
	for _, v := range [][]string{nil, {"-v"}, {"-vv"}} {
		r := cmdtest.Run(t, t.TempDir(), append(base, v...)...)
		if r.Code != 0 {
			t.Fatalf("%v: exit %d: %s", v, r.Code, r.Stderr)
		}
		if !strings.Contains(r.Stderr, "moq-export: warning: writing hvc1") || !strings.Contains(r.Stderr, "ffmpeg >= 7") {
			t.Errorf("%v: no Enhanced FLV warning in %q", v, r.Stderr)
		}
		for _, l := range strings.Split(strings.TrimSpace(r.Stderr), "\n") {
			if !strings.HasPrefix(l, "moq-export: ") || strings.Contains(l, "level=") || strings.Contains(l, "time=") {
				t.Errorf("%v: line %q is not in the command's style", v, l)
			}
		}
	}
	r := cmdtest.Run(t, t.TempDir(), append(base, "-vv", "--log-format", "json")...)
	if r.Code != 0 {
		t.Fatalf("json: exit %d: %s", r.Code, r.Stderr)
	}
	levels := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(r.Stderr), "\n") {
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Msg == "" {
			t.Errorf("json: line %q is no log record: %v", l, err)
		}
		levels[rec.Level] = true
	}
	for _, l := range []string{"DEBUG", "INFO", "WARN"} {
		if !levels[l] {
			t.Errorf("json: no %s record in %s", l, r.Stderr)
		}
	}
	for l := range levels {
		if !slices.Contains([]string{"DEBUG", "INFO", "WARN", "ERROR"}, l) {
			t.Errorf("json: level %q is not one of slog's standard names (DEBUG, INFO, WARN, ERROR)", l)
		}
	}
	if r := cmdtest.Run(t, t.TempDir(), "--duration", "1s", "-o", "x.mkv", "-q"); r.Code != 0 || r.Stderr != "" {
		t.Errorf("-q: exit %d, stderr %q; want 0 and nothing", r.Code, r.Stderr)
	}
}

// TestListShowsEveryDemoCodecAsJSON: --list on the demo lists every test
// codec, in a table with the Enhanced FLV note or as JSON.
func TestListShowsEveryDemoCodecAsJSON(t *testing.T) {
	t.Parallel()
	r := cmdtest.Run(t, t.TempDir(), "--list", "--json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	var rows []struct {
		Name        string   `json:"name"`
		Kind        string   `json:"kind"`
		Formats     []string `json:"formats"`
		EnhancedFLV bool     `json:"enhanced_flv"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rows); err != nil {
		t.Fatalf("--list --json: %v\n%s", err, r.Stdout)
	}
	got := map[string]string{}
	for _, row := range rows {
		got[row.Name] = fmt.Sprintf("%s %v %v", row.Kind, row.Formats, row.EnhancedFLV)
	}
	want := map[string]string{
		"h264": "video [flv mkv ts mp4 hls] false", "h265": "video [flv mkv ts mp4 hls] true", "av1": "video [flv mkv webm mp4 hls] true",
		"vp8": "video [mkv webm] false", "vp9": "video [flv mkv webm mp4 hls] true",
		"aac": "audio [flv mkv ts mp4 hls] false", "mp3": "audio [flv mkv ts mp4] false", "opus": "audio [flv mkv webm ts mp4 hls] true",
		"flac": "audio [mkv mp4 hls] false", "ac3": "audio [mkv ts mp4 hls] false",
		"h264-360p": "video [flv mkv ts mp4 hls] false", "webvtt": "text [mkv webm mp4 hls] false",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("--list --json:\n got %v\nwant %v", got, want)
	}
	r = cmdtest.Run(t, t.TempDir(), "--list")
	if r.Code != 0 || !strings.Contains(r.Stdout, "flv*,mkv,ts") || !strings.Contains(r.Stdout, "flv*: Enhanced FLV") || !strings.Contains(r.Stdout, "ffmpeg >= 7") {
		t.Errorf("--list: exit %d, no Enhanced FLV note in\n%s", r.Code, r.Stdout)
	}
	if n := strings.Count(r.Stdout, "320x180") + strings.Count(r.Stdout, "640x360") + strings.Count(r.Stdout, "48000Hz") + strings.Count(r.Stdout, " text "); n != len(want) {
		t.Errorf("--list shows %d renditions, want %d:\n%s", n, len(want), r.Stdout)
	}
}

// TestSummaryNamesTheFilesWritten: the closing summary lists every segment
// with its frames, on stderr for people, as JSON with --json and in the
// --summary file; its counts are what ffprobe finds.
func TestSummaryNamesTheFilesWritten(t *testing.T) {
	cmdtest.NeedTools(t, "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	before := time.Now().UTC()
	r := cmdtest.Run(t, dir, "-o", "rec/{broadcast}-{n}.mkv", "--segment", "1s", "--duration", "2.5s", "--summary", "sum.json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	var sum struct {
		Start time.Time `json:"start"`
		Files []struct {
			Path   string    `json:"path"`
			Frames int       `json:"frames"`
			Size   int64     `json:"size"`
			Media  float64   `json:"media_seconds"`
			Start  time.Time `json:"start"`
		} `json:"files"`
		Frames     int     `json:"frames"`
		Media      float64 `json:"media_seconds"`
		Dropped    *int    `json:"dropped"`
		Reconnects *int    `json:"reconnects"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "sum.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatalf("--summary: %v\n%s", err, b)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "rec", "*.mkv"))
	if len(sum.Files) != len(files) || len(files) < 3 {
		t.Fatalf("summary lists %d files, %d on disk (want 3 or more)", len(sum.Files), len(files))
	}
	// The demo's catalog has no clock: the files start by the wall clock,
	// in order, and the recording with the first.
	if !sum.Start.Equal(sum.Files[0].Start) || sum.Start.Before(before) || sum.Start.After(time.Now()) {
		t.Errorf("summary start %v, first file's %v; want it between %v and now", sum.Start, sum.Files[0].Start, before)
	}
	for i := 1; i < len(sum.Files); i++ {
		if sum.Files[i].Start.Before(sum.Files[i-1].Start) {
			t.Errorf("file %d starts %v, before file %d (%v)", i, sum.Files[i].Start, i-1, sum.Files[i-1].Start)
		}
	}
	total := 0
	for _, f := range sum.Files {
		p := cmdtest.Probe(t, filepath.Join(dir, f.Path))
		n := p.Frames(t, "h264") + p.Frames(t, "aac")
		st, err := os.Stat(filepath.Join(dir, f.Path))
		if err != nil || st.Size() != f.Size {
			t.Errorf("%s: summary size %d, file %v %v", f.Path, f.Size, st, err)
		}
		if n != f.Frames {
			t.Errorf("%s: summary says %d frames, ffprobe reads %d", f.Path, f.Frames, n)
		}
		if !strings.Contains(r.Stderr, "moq-export: wrote "+f.Path+": ") {
			t.Errorf("stderr does not name %s:\n%s", f.Path, r.Stderr)
		}
		total += f.Frames
	}
	if total != sum.Frames || sum.Media < 2.3 || sum.Media > 2.6 || sum.Dropped == nil || sum.Reconnects == nil {
		t.Errorf("summary totals %+v, files hold %d frames", sum, total)
	}
	if !strings.Contains(r.Stderr, fmt.Sprintf("in %d files:", len(files))) {
		t.Errorf("no total on stderr:\n%s", r.Stderr)
	}
	// --json: the same summary as the last line of stderr.
	r = cmdtest.Run(t, dir, "-o", "one.mkv", "--duration", "1s", "--json")
	var one struct {
		Files []struct{ Path string } `json:"files"`
	}
	if err := json.Unmarshal([]byte(cmdtest.LastLine(r.Stderr+"\n")), &one); r.Code != 0 || err != nil || len(one.Files) != 1 || one.Files[0].Path != "one.mkv" {
		t.Errorf("--json: exit %d, %v, summary %+v in\n%s", r.Code, err, one, r.Stderr)
	}
}
