package mediatest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// NewFFmpegEnv names the environment variable that holds the directory of
// the newer ffmpeg/ffprobe pair, as printed by scripts/ffmpeg-testing.sh.
const NewFFmpegEnv = "MOQ_EXPORT_FFMPEG_NEW"

// NewFFmpegDefault is where scripts/ffmpeg-testing.sh puts that pair when
// NewFFmpegEnv is not set.
const NewFFmpegDefault = "/var/cache/moq-export-ffmpeg/bin"

// Tools names an ffmpeg and the ffprobe that goes with it: a name looked up
// on PATH or a path.
type Tools struct {
	FFmpeg, FFprobe string
}

// system is the ffmpeg and ffprobe on PATH.
var system = Tools{FFmpeg: "ffmpeg", FFprobe: "ffprobe"}

// RequireTools skips the test when one of the named tools is not
// installed. CI installs them all, so the skip is never the normal path.
func RequireTools(t testing.TB, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			t.Skipf("%s not installed: this test checks the output with it (scripts/install-test-deps.sh installs ffmpeg and mkvtoolnix, as CI does)", name)
		}
	}
}

// SystemFFmpeg returns the ffmpeg and ffprobe on PATH (Debian 12's 5.1 on
// this project's machines), or skips the test when they are missing.
func SystemFFmpeg(t testing.TB) Tools {
	t.Helper()
	RequireTools(t, system.FFmpeg, system.FFprobe)
	return system
}

// NewFFmpeg returns the newer ffmpeg and ffprobe that scripts/ffmpeg-testing.sh
// unpacks from Debian testing (from NewFFmpegEnv, else NewFFmpegDefault), or
// skips the test when they are missing. Debian 12's ffmpeg 5.1 cannot read
// Enhanced FLV (hvc1, av01, vp09, Opus); this one can.
func NewFFmpeg(t testing.TB) Tools {
	t.Helper()
	dir := os.Getenv(NewFFmpegEnv)
	if dir == "" {
		dir = NewFFmpegDefault
	}
	tl := Tools{FFmpeg: filepath.Join(dir, "ffmpeg"), FFprobe: filepath.Join(dir, "ffprobe")}
	for _, p := range []string{tl.FFmpeg, tl.FFprobe} {
		if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
			t.Skipf("no newer ffmpeg at %s: run scripts/ffmpeg-testing.sh and set %s to the directory it prints (Debian 12's ffmpeg 5.1 cannot read hvc1/av01/vp09/Opus FLV)", dir, NewFFmpegEnv)
		}
	}
	return tl
}

// Run runs name with args and returns what it printed, failing t when it
// does not exit 0.
func Run(t testing.TB, name string, args ...string) (stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, e.String())
	}
	return o.String(), e.String()
}

// DecodeClean decodes every stream of path with the ffmpeg on PATH and
// fails t on any message; extra goes before -i (for example "-ss", "2").
// It skips the test when ffmpeg is missing.
func DecodeClean(t testing.TB, path string, extra ...string) {
	t.Helper()
	RequireTools(t, system.FFmpeg)
	system.DecodeClean(t, path, extra...)
}

// DecodeClean runs `ffmpeg -v error [extra] -i path -map 0 -c:s copy -f
// null -` with tl's ffmpeg and fails t when it exits non-zero or prints
// anything. Subtitle streams are read, not decoded (the null output has no
// subtitle encoder); Cues checks them.
func (tl Tools) DecodeClean(t testing.TB, path string, extra ...string) {
	t.Helper()
	args := append([]string{"-nostdin", "-v", "error"}, extra...)
	args = append(args, "-i", path, "-map", "0", "-c:s", "copy", "-f", "null", "-")
	if _, stderr := Run(t, tl.FFmpeg, args...); stderr != "" {
		t.Fatalf("ffmpeg decode of %s reported errors:\n%s", filepath.Base(path), stderr)
	}
}

// DecodeAtFileTimes decodes path with the ffmpeg on PATH keeping each
// frame at the file's own millisecond time (`-enc_time_base:v 1/1000
// -fps_mode passthrough`) and returns what ffmpeg printed and how it
// exited; the caller says which messages it accepts. At the nominal frame
// rate, ffmpeg's null output rounds frame times onto 1/rate ticks, and two
// frames of a timeline that jumped by a time that is not a whole number
// of frames (a restart, an outage), or of a publisher whose clock jitters,
// can land on one tick: "non monotonically increasing dts to muxer" for a
// file whose own times are in order. At the file's times, two frames less
// than a millisecond apart, or a time that goes back, still fail. An
// MPEG-TS file (.ts) is read with -copyts: ffmpeg "corrects" the times of
// a TS input at a jump (its demuxer is flagged AVFMT_TS_DISCONT) stream by
// stream, and then complains about times that were in order (interop's
// restart tests met it with holes of 10.9-17.7 s, and build the same
// command themselves).
func DecodeAtFileTimes(path string) (messages string, err error) {
	args := []string{"-nostdin", "-v", "error"}
	if strings.EqualFold(filepath.Ext(path), ".ts") {
		args = append(args, "-copyts")
	}
	args = append(args, "-i", path, "-enc_time_base:v", "1/1000", "-fps_mode", "passthrough", "-f", "null", "-")
	out, err := exec.Command(system.FFmpeg, args...).CombinedOutput()
	return string(out), err
}

// Stream is what ffprobe says about one stream.
type Stream struct {
	Index     int    `json:"index"`
	CodecName string `json:"codec_name"`
	CodecType string `json:"codec_type"` // "video", "audio", "subtitle"
	ID        string `json:"id"`         // container ID, e.g. an MPEG-TS PID "0x100"
	Width     int    `json:"width"`
	Height    int    `json:"height"`
	Channels  int    `json:"channels"`
	// NbReadFrames is the number of decoded frames, with -count_frames.
	NbReadFrames string `json:"nb_read_frames"`
	// Tags are the stream's tags ("language", "title", ...).
	Tags map[string]string `json:"tags"`
}

// Packet is what ffprobe says about one packet. PTS and DTS are in the
// stream's time base and nil when absent; PTSTime is in seconds.
type Packet struct {
	StreamIndex int    `json:"stream_index"`
	CodecType   string `json:"codec_type"`
	PTS         *int64 `json:"pts"`
	DTS         *int64 `json:"dts"`
	PTSTime     string `json:"pts_time"`
	// DurationTime is the packet's duration in seconds ("" when the
	// container gives none).
	DurationTime string `json:"duration_time"`
	Flags        string `json:"flags"` // "K" for a keyframe
	// DataHash is the hash of the packet's bytes, with -show_data_hash
	// (for example "SHA256:9f86...").
	DataHash string `json:"data_hash"`
}

// Format is what ffprobe says about the container.
type Format struct {
	FormatName string `json:"format_name"`
	Duration   string `json:"duration"` // seconds
}

// Seconds returns the duration in seconds.
func (f Format) Seconds() (float64, error) {
	return strconv.ParseFloat(f.Duration, 64)
}

// ProbeResult is ffprobe's view of a file: its streams, its packets in
// file order and its format.
type ProbeResult struct {
	Streams  []Stream  `json:"streams"`
	Packets  []Packet  `json:"packets"`
	Format   Format    `json:"format"`
	Chapters []Chapter `json:"chapters"` // with the extra -show_chapters
}

// Chapter is one chapter ffprobe -show_chapters lists.
type Chapter struct {
	Start float64           `json:"start_time,string"`
	End   float64           `json:"end_time,string"`
	Tags  map[string]string `json:"tags"`
}

// LargestGap returns, of sorted times ts, the largest distance between
// neighbours and the index of the time after it (0 and 0 when there are
// fewer than two): where a recording's hole is.
func LargestGap(ts []float64) (at int, gap float64) {
	for i := 1; i < len(ts); i++ {
		if d := ts[i] - ts[i-1]; d > gap {
			at, gap = i, d
		}
	}
	return at, gap
}

// CutGap returns, of sorted times ts of a stream cut once (a restart, an
// outage) with frame duration d and Reorder reorder, the gap of the cut
// and the index of the time after it: the largest gap, unless that one
// holds only frames the cut left out (LeftOutByTheCut) before a later
// gap. A cut right after a P-frame leaves its two B-frames out, a hole of
// three frames ending at the cut's last frame, as large as the cut's own
// hole when the stream resumes a few frames on (a publisher restarted on
// a fresh clock): the cut is the later one.
func CutGap(ts []float64, reorder, d float64) (at int, gap float64) {
	at, gap = LargestGap(ts)
	for j := at + 1; j < len(ts); j++ {
		if ts[j]-ts[j-1] > 1.5*d && LeftOutByTheCut(ts, at, j, reorder, d) {
			return j, ts[j] - ts[j-1]
		}
	}
	return at, gap
}

// Reorder returns, of a stream's packet times in file (decode) order, the
// largest distance by which a packet's time lies past that of a later
// packet: with B-frames, a P-frame is stored before the frames shown
// before it. A stream cut in decode order (a lost connection) can
// therefore lack frames up to this far before the last one it holds,
// without any frame being lost but at the cut. 0 without reordering.
func Reorder(ts []float64) float64 {
	var d float64
	if len(ts) == 0 {
		return 0
	}
	low := ts[len(ts)-1] // the lowest time from i on
	for i := len(ts) - 2; i >= 0; i-- {
		d = max(d, ts[i]-low)
		low = min(low, ts[i])
	}
	return d
}

// LeftOutByTheCut reports whether the hole between ts[i-1] and ts[i] (ts
// sorted, d the frame duration) lies before the cut ts[at-1] (the last
// time before the stream's largest gap) and holds only frames that a cut
// in decode order leaves out: each within reorder (Reorder) of the cut,
// give or take half a frame. x264's I P B B cut right after the P leaves
// both B-frames out: a hole of three frame durations ending at the cut.
func LeftOutByTheCut(ts []float64, i, at int, reorder, d float64) bool {
	return i < at && ts[at-1]-(ts[i-1]+d) <= reorder+d/2
}

// PacketsOf returns the packets of the stream with index i, in file order.
func (r ProbeResult) PacketsOf(i int) []Packet {
	var out []Packet
	for _, p := range r.Packets {
		if p.StreamIndex == i {
			out = append(out, p)
		}
	}
	return out
}

// Probe runs the ffprobe on PATH on path; see Tools.Probe. It skips the
// test when ffprobe is missing.
func Probe(t testing.TB, path string, extra ...string) ProbeResult {
	t.Helper()
	RequireTools(t, system.FFprobe)
	return system.Probe(t, path, extra...)
}

// Probe runs `ffprobe -v error -of json -show_streams -show_format
// -show_packets [extra] path` with tl's ffprobe and returns what it says,
// failing t when it exits non-zero or prints an error.
func (tl Tools) Probe(t testing.TB, path string, extra ...string) ProbeResult {
	t.Helper()
	args := append([]string{"-v", "error", "-of", "json", "-show_streams", "-show_format", "-show_packets"}, extra...)
	stdout, stderr := Run(t, tl.FFprobe, append(args, path)...)
	if stderr != "" {
		t.Fatalf("ffprobe on %s reported errors:\n%s", filepath.Base(path), stderr)
	}
	var r ProbeResult
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("ffprobe json: %v\n%s", err, stdout)
	}
	return r
}
