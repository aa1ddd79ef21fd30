package cmaftest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Form is how ffmpeg fragments the file.
type Form string

// The two forms of the issue: a fragment per frame, as the reference
// project's demos publish (`just pub bbb`), and one GOP per fragment.
const (
	EveryFrame Form = "cmaf+separate_moof+delay_moov+skip_trailer+frag_every_frame"
	PerGOP     Form = "cmaf+separate_moof+delay_moov+skip_trailer+frag_keyframe"
)

// Codec is one test encoding: ffmpeg arguments for a short clip.
type Codec struct {
	Name  string
	Video bool
	Args  []string
}

// Codecs are the encodings the CMAF tests cover: H.264 with B-frames,
// H.265, AV1, VP9, AAC and Opus, each from ffmpeg's test sources.
var Codecs = []Codec{
	{"h264", true, []string{"-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-c:v", "libx264", "-bf", "2", "-g", "30", "-pix_fmt", "yuv420p"}},
	{"h265", true, []string{"-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-c:v", "libx265", "-x265-params", "log-level=error:bframes=2:keyint=25", "-pix_fmt", "yuv420p", "-tag:v", "hvc1"}},
	{"av1", true, []string{"-f", "lavfi", "-i", "testsrc2=size=192x108:rate=24", "-c:v", "libaom-av1", "-cpu-used", "8", "-g", "24", "-pix_fmt", "yuv420p"}},
	{"vp9", true, []string{"-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-g", "30", "-pix_fmt", "yuv420p"}},
	{"aac", false, []string{"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-c:a", "aac", "-ac", "2"}},
	{"opus", false, []string{"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-c:a", "libopus", "-ac", "2"}},
}

// CodecByName returns the encoding named name.
func CodecByName(t testing.TB, name string) Codec {
	t.Helper()
	for _, c := range Codecs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no test codec %q", name)
	return Codec{}
}

// Encode makes seconds of c in dir and returns the path of a plain (not
// fragmented) MP4: the source every recording is compared with.
func Encode(t testing.TB, dir string, c Codec, seconds string) string {
	t.Helper()
	out := filepath.Join(dir, c.Name+".mp4")
	args := append([]string{"-nostdin", "-v", "error", "-y"}, c.Args...)
	args = append(args, "-t", seconds, out)
	run(t, "ffmpeg", args...)
	return out
}

// Fragmented remuxes src (one track) into a fragmented MP4 of form and
// returns it split.
func Fragmented(t testing.TB, src string, form Form) *File {
	t.Helper()
	out := strings.TrimSuffix(src, ".mp4") + "-" + FormName(form) + ".mp4"
	run(t, "ffmpeg", "-nostdin", "-v", "error", "-y", "-i", src, "-c", "copy", "-movflags", string(form), "-f", "mp4", out)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Split(b)
	if err != nil {
		t.Fatalf("split %s: %v", out, err)
	}
	return f
}

// FormName is a short name of f for file and test names.
func FormName(f Form) string {
	if f == EveryFrame {
		return "every"
	}
	return "gop"
}

// RequireFFmpeg skips the test without ffmpeg and ffprobe (CI has them).
func RequireFFmpeg(t testing.TB) {
	t.Helper()
	for _, n := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(n); err != nil {
			t.Skipf("%s not installed (scripts/install-test-deps.sh installs it, as CI does)", n)
		}
	}
}

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, e.String())
	}
	return o.String()
}

// Packet is one packet as ffprobe reports it, times in microseconds
// (rounded down from the stream's time base).
type Packet struct {
	PTS, DTS int64
	Key      bool
	Size     int
}

// Packets returns the packets of stream index of path in file order, via
// `ffprobe -show_packets`.
func Packets(t testing.TB, ffprobe, path string, index int) []Packet {
	t.Helper()
	out := run(t, ffprobe, "-v", "error", "-select_streams", strconv.Itoa(index), "-show_entries", "stream=time_base:packet=pts,dts,flags,size", "-of", "json", path)
	var r struct {
		Streams []struct {
			TimeBase string `json:"time_base"`
		} `json:"streams"`
		Packets []struct {
			PTS   *int64 `json:"pts"`
			DTS   *int64 `json:"dts"`
			Flags string `json:"flags"`
			Size  string `json:"size"`
		} `json:"packets"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Streams) == 0 {
		t.Fatalf("ffprobe %s: %v\n%s", path, err, out)
	}
	var num, den int64
	if _, err := fmt.Sscanf(r.Streams[0].TimeBase, "%d/%d", &num, &den); err != nil || den == 0 {
		t.Fatalf("time base %q", r.Streams[0].TimeBase)
	}
	us := func(v *int64) int64 {
		if v == nil {
			return math.MinInt64
		}
		x := *v * num * 1_000_000
		q := x / den
		if x%den != 0 && x < 0 {
			q--
		}
		return q
	}
	ps := make([]Packet, 0, len(r.Packets))
	for _, p := range r.Packets {
		size, _ := strconv.Atoi(p.Size)
		ps = append(ps, Packet{PTS: us(p.PTS), DTS: us(p.DTS), Key: strings.Contains(p.Flags, "K"), Size: size})
	}
	return ps
}
