package flv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	moqexport "github.com/moq-export/moq-export"
	"github.com/moq-export/moq-export/mux"
)

// newFFmpegEnv names the directory holding a newer ffmpeg/ffprobe pair,
// as printed by scripts/ffmpeg-testing.sh.
const newFFmpegEnv = "MOQ_EXPORT_FFMPEG_NEW"

// newFFmpegDefault is where scripts/ffmpeg-testing.sh puts the wrappers by
// default.
const newFFmpegDefault = "/var/cache/moq-export-ffmpeg/bin"

type tools struct{ ffmpeg, ffprobe string }

// systemFFmpeg returns the system ffmpeg/ffprobe or skips the test.
func systemFFmpeg(t testing.TB) tools {
	t.Helper()
	ff, err1 := exec.LookPath("ffmpeg")
	fp, err2 := exec.LookPath("ffprobe")
	if err1 != nil || err2 != nil {
		t.Skip("ffmpeg/ffprobe not on PATH; install ffmpeg (CI does) to run the decode checks")
	}
	return tools{ff, fp}
}

// newFFmpeg returns an ffmpeg that reads Enhanced FLV (made by
// scripts/ffmpeg-testing.sh) or skips the test.
func newFFmpeg(t testing.TB) tools {
	t.Helper()
	dir := os.Getenv(newFFmpegEnv)
	if dir == "" {
		dir = newFFmpegDefault
	}
	tl := tools{filepath.Join(dir, "ffmpeg"), filepath.Join(dir, "ffprobe")}
	for _, p := range []string{tl.ffmpeg, tl.ffprobe} {
		if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
			t.Skipf("no ffmpeg that reads Enhanced FLV at %s: run scripts/ffmpeg-testing.sh and set %s to the directory it prints (Debian 12's ffmpeg 5.1 cannot read hvc1/av01/vp09/Opus FLV)", dir, newFFmpegEnv)
		}
	}
	return tl
}

// decodeClean runs `ffmpeg -v error -i path -f null -` and fails on any
// error output.
func (tl tools) decodeClean(t *testing.T, path string) {
	t.Helper()
	cmd := exec.Command(tl.ffmpeg, "-nostdin", "-v", "error", "-i", path, "-f", "null", "-")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ffmpeg decode of %s: %v\n%s", filepath.Base(path), err, stderr.String())
	}
	if s := strings.TrimSpace(stderr.String()); s != "" {
		t.Fatalf("ffmpeg decode of %s reported errors:\n%s", filepath.Base(path), s)
	}
}

// probeStream is what ffprobe says about one stream.
type probeStream struct {
	codec    string
	frames   int     // decoded frames (-count_frames)
	channels int     // audio
	width    int     // video
	pts, dts []int64 // packet times in ms, file order
}

// probe returns the streams of path keyed by "video"/"audio".
func (tl tools) probe(t *testing.T, path string) map[string]*probeStream {
	t.Helper()
	out := map[string]*probeStream{}
	run := func(args ...string) string {
		cmd := exec.Command(tl.ffprobe, append([]string{"-v", "error"}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("ffprobe %v: %v\n%s", args, err, stderr.String())
		}
		return string(b)
	}
	for _, line := range strings.Split(strings.TrimSpace(run("-count_frames",
		"-show_entries", "stream=codec_type,codec_name,nb_read_frames,channels,width", "-of", "csv=p=0:nk=0", path)), "\n") {
		kv := map[string]string{}
		for _, f := range strings.Split(line, ",") {
			k, v, _ := strings.Cut(f, "=")
			kv[k] = v
		}
		s := &probeStream{codec: kv["codec_name"]}
		s.frames, _ = strconv.Atoi(kv["nb_read_frames"])
		s.channels, _ = strconv.Atoi(kv["channels"])
		s.width, _ = strconv.Atoi(kv["width"])
		out[kv["codec_type"]] = s
	}
	for _, line := range strings.Split(strings.TrimSpace(run("-show_entries", "packet=codec_type,pts,dts",
		"-of", "csv=p=0:nk=1", path)), "\n") {
		f := strings.Split(line, ",")
		if len(f) < 3 {
			continue
		}
		s := out[f[0]]
		if s == nil {
			t.Fatalf("ffprobe: packet of unknown stream type %q", f[0])
		}
		pts, err1 := strconv.ParseInt(f[1], 10, 64)
		dts, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("ffprobe: bad packet line %q", line)
		}
		s.pts = append(s.pts, pts)
		s.dts = append(s.dts, dts)
	}
	return out
}

// formatDuration returns ffprobe's format duration in seconds.
func (tl tools) formatDuration(t *testing.T, path string) float64 {
	t.Helper()
	b, err := exec.Command(tl.ffprobe, "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path).Output()
	if err != nil {
		t.Fatalf("ffprobe duration: %v", err)
	}
	d, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil {
		t.Fatalf("ffprobe duration %q: %v", b, err)
	}
	return d
}

// loadSample loads an embedded sample; "h264-annexb" and "h265-annexb"
// are the samples in the browser's form: Annex B with in-band parameter
// sets and no description.
func loadSample(name string) *moqexport.Sample {
	if base, ok := strings.CutSuffix(name, "-annexb"); ok {
		return moqexport.MustLoadSample(base).MustAnnexB()
	}
	return moqexport.MustLoadSample(name)
}

// trackOf turns a sample into a track with the given id.
func trackOf(id int, s *moqexport.Sample) mux.Track {
	kind := mux.Video
	if s.Kind == "audio" {
		kind = mux.Audio
	}
	return mux.Track{
		ID: id, Name: s.Name, Kind: kind, Codec: s.Codec, Description: s.Description,
		Width: s.Width, Height: s.Height, Framerate: s.Framerate,
		SampleRate: s.SampleRate, Channels: s.Channels,
	}
}

// interleave merges the samples' frames as the engine delivers them:
// non-decreasing time across tracks, decode order within a track. Track i
// gets ID i+1; offset (µs) is added to every timestamp.
func interleave(offset int64, samples ...*moqexport.Sample) []mux.Frame {
	type cur struct{ i, key int64 }
	pos := make([]int, len(samples))
	runMax := make([]int64, len(samples))
	var out []mux.Frame
	for {
		best, bestKey := -1, int64(0)
		for i, s := range samples {
			if pos[i] >= len(s.Frames) {
				continue
			}
			key := max(runMax[i], s.Frames[pos[i]].Timestamp)
			if best < 0 || key < bestKey {
				best, bestKey = i, key
			}
		}
		if best < 0 {
			return out
		}
		f := samples[best].Frames[pos[best]]
		runMax[best] = bestKey
		pos[best]++
		out = append(out, mux.Frame{TrackID: best + 1, Timestamp: f.Timestamp + offset, Keyframe: f.Keyframe, Payload: f.Payload})
	}
}

// writeFile muxes frames of tracks into dir/name with opts.
func writeFile(t *testing.T, name string, opts Options, tracks []mux.Track, frames []mux.Frame) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := NewWriter(f, opts)
	for _, tr := range tracks {
		if err := w.AddTrack(tr); err != nil {
			t.Fatalf("AddTrack(%s): %v", tr.Codec, err)
		}
	}
	for _, fr := range frames {
		if err := w.WriteFrame(fr); err != nil {
			t.Fatalf("WriteFrame: %v", err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return path
}

// checkTimestamps compares ffprobe's packet times with the input frames of
// one track: same count, presentation times equal up to a constant shift
// (the rebase) within 1 ms of rounding, and decode times increasing.
func checkTimestamps(t *testing.T, kind string, got *probeStream, in []mux.Frame) {
	t.Helper()
	if len(got.pts) != len(in) {
		t.Fatalf("%s: %d packets in the file, %d frames written", kind, len(got.pts), len(in))
	}
	shift := got.pts[0] - in[0].Timestamp/1000
	for i, f := range in {
		want := f.Timestamp/1000 + shift
		if d := got.pts[i] - want; d < -1 || d > 1 {
			t.Fatalf("%s packet %d: pts %d ms, want %d (input %d µs)", kind, i, got.pts[i], want, f.Timestamp)
		}
		if i > 0 && got.dts[i] < got.dts[i-1] {
			t.Fatalf("%s packet %d: dts %d after %d goes back", kind, i, got.dts[i], got.dts[i-1])
		}
		if got.dts[i] > got.pts[i] {
			t.Fatalf("%s packet %d: dts %d after pts %d", kind, i, got.dts[i], got.pts[i])
		}
	}
}

// framesOf returns the frames of track id.
func framesOf(frames []mux.Frame, id int) []mux.Frame {
	var out []mux.Frame
	for _, f := range frames {
		if f.TrackID == id {
			out = append(out, f)
		}
	}
	return out
}

// flvTag is one tag read back by readFLV.
type flvTag struct {
	typ  byte
	ts   uint32
	body []byte
}

// readFLV parses an FLV file strictly: header, every tag's size and
// PreviousTagSize. It is the tests' independent check of the framing.
func readFLV(b []byte) (flags byte, tags []flvTag, err error) {
	if len(b) < 13 || string(b[:3]) != "FLV" || b[3] != 1 {
		return 0, nil, errors.New("no FLV header")
	}
	flags = b[4]
	if off := binary.BigEndian.Uint32(b[5:9]); off != 9 {
		return 0, nil, fmt.Errorf("data offset %d", off)
	}
	if binary.BigEndian.Uint32(b[9:13]) != 0 {
		return 0, nil, errors.New("PreviousTagSize0 not 0")
	}
	b = b[13:]
	for len(b) > 0 {
		if len(b) < 11 {
			return 0, nil, fmt.Errorf("truncated tag header (%d bytes)", len(b))
		}
		size := int(b[1])<<16 | int(b[2])<<8 | int(b[3])
		ts := uint32(b[7])<<24 | uint32(b[4])<<16 | uint32(b[5])<<8 | uint32(b[6])
		if len(b) < 11+size+4 {
			return 0, nil, fmt.Errorf("truncated tag body")
		}
		if prev := binary.BigEndian.Uint32(b[11+size:]); int(prev) != 11+size {
			return 0, nil, fmt.Errorf("PreviousTagSize %d, tag is %d", prev, 11+size)
		}
		tags = append(tags, flvTag{typ: b[0], ts: ts, body: b[11 : 11+size]})
		b = b[11+size+4:]
	}
	return flags, tags, nil
}

// sortedCopy returns a sorted copy of v.
func sortedCopy(v []int64) []int64 {
	c := append([]int64(nil), v...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	return c
}
