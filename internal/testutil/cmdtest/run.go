package cmdtest

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/proctest"
)

// Binary is the path of the command Main built for the test binary.
var Binary string

func NeedTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed; the end-to-end checks need it (apt-get install ffmpeg mkvtoolnix)", tool)
		}
	}
}

type Result struct {
	Code           int
	Stdout, Stderr string
	Elapsed        time.Duration
}

// Run runs the binary with args in dir and a timeout.
func Run(t *testing.T, dir string, args ...string) Result {
	t.Helper()
	return RunProgram(t, dir, Binary, args...)
}

// RunProgram runs prog (the binary, or a shell around it) like run.
func RunProgram(t *testing.T, dir, prog string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := proctest.CommandContext(ctx, prog, args...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	r := Result{Stdout: out.String(), Stderr: errOut.String(), Elapsed: time.Since(start)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.Code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("moq-export %v: %v", args, err)
	}
	return r
}

type ProbeStream struct {
	CodecName    string `json:"codec_name"`
	CodecType    string `json:"codec_type"`
	NbReadFrames string `json:"nb_read_frames"`
	StartTime    string `json:"start_time"`
}

type ProbeResult struct {
	Streams []ProbeStream `json:"streams"`
	Format  struct {
		FormatName string `json:"format_name"`
		Duration   string `json:"duration"`
		StartTime  string `json:"start_time"`
	} `json:"format"`
}

// Probe runs ffprobe over path (a file, or "-" with stdin) counting Frames.
func Probe(t *testing.T, path string) ProbeResult {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-count_frames", "-show_entries",
		"stream=codec_name,codec_type,nb_read_frames,start_time:format=format_name,duration,start_time", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	var p ProbeResult
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	return p
}

func (p ProbeResult) Duration(t *testing.T) time.Duration {
	t.Helper()
	return Seconds(t, "duration", p.Format.Duration)
}

func (p ProbeResult) StartTime(t *testing.T) time.Duration {
	t.Helper()
	return Seconds(t, "start time", p.Format.StartTime)
}

// Seconds parses ffprobe's seconds value v of what.
func Seconds(t *testing.T, what, v string) time.Duration {
	t.Helper()
	d, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("ffprobe reports no %s (%q)", what, v)
	}
	return time.Duration(d * float64(time.Second))
}

// StreamStart returns the start time of the stream with that codec.
func (p ProbeResult) StreamStart(t *testing.T, codec string) time.Duration {
	t.Helper()
	for _, s := range p.Streams {
		if s.CodecName == codec {
			return Seconds(t, codec+" start time", s.StartTime)
		}
	}
	t.Fatalf("no %s stream in %+v", codec, p.Streams)
	return 0
}

// Frames returns the frame count of the stream with that codec.
func (p ProbeResult) Frames(t *testing.T, codec string) int {
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

// Decode runs the file through ffmpeg's decoders; ffmpeg must have nothing
// to complain about.
func Decode(t *testing.T, path string) {
	t.Helper()
	cmd := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-i", path, "-f", "null", "-")
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Run(); err != nil || errOut.Len() > 0 {
		t.Errorf("ffmpeg decoding %s: %v\n%s", filepath.Base(path), err, errOut.String())
	}
}

// Frame counts of the demo media (H.264 at 30 fps, AAC and Opus at 48 kHz
// in 1024- and 960-sample Frames) per second, with slack for where the cut
// falls in a B-frame group.
func ExpectFrames(t *testing.T, p ProbeResult, codec string, seconds float64) {
	t.Helper()
	perSecond := map[string]float64{"h264": 30, "vp9": 30, "aac": 48000.0 / 1024, "opus": 50}[codec]
	want := perSecond * seconds
	if got := float64(p.Frames(t, codec)); got < want-3 || got > want+1 {
		t.Errorf("%s: %v frames, want about %.0f for %vs", codec, got, want, seconds)
	}
}

// LastLine returns the last progress line in s (the summary follows it).
func LastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i > 0; i-- {
		if !strings.HasPrefix(lines[i], "moq-export: ") {
			return lines[i]
		}
	}
	return lines[0]
}
