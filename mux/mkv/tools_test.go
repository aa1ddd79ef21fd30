package mkv

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
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

// needTools skips the test when the validating tools are missing. CI
// installs them, so this is never the normal path.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed; these tests validate the output with ffmpeg/ffprobe/mkvtoolnix", tool)
		}
	}
}

func run(t *testing.T, name string, args ...string) (stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, e.String())
	}
	return o.String(), e.String()
}

// decodeClean decodes every stream of path with ffmpeg and fails on any
// message on stderr.
func decodeClean(t *testing.T, path string, extra ...string) {
	t.Helper()
	args := append([]string{"-v", "error"}, extra...)
	args = append(args, "-i", path, "-f", "null", "-")
	if _, stderr := run(t, "ffmpeg", args...); stderr != "" {
		t.Errorf("ffmpeg decode of %s reported:\n%s", filepath.Base(path), stderr)
	}
}

type probeStream struct {
	Index     int    `json:"index"`
	CodecName string `json:"codec_name"`
	CodecType string `json:"codec_type"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
	Channels  int    `json:"channels"`
}

type probePacket struct {
	StreamIndex int    `json:"stream_index"`
	PtsTime     string `json:"pts_time"`
	Flags       string `json:"flags"`
}

type probeResult struct {
	Streams []probeStream `json:"streams"`
	Packets []probePacket `json:"packets"`
	Format  struct {
		FormatName string `json:"format_name"`
		Duration   string `json:"duration"`
	} `json:"format"`
}

func probe(t *testing.T, path string, extra ...string) probeResult {
	t.Helper()
	args := append([]string{"-v", "error", "-of", "json", "-show_streams", "-show_format", "-show_packets"}, extra...)
	out, _ := run(t, "ffprobe", append(args, path)...)
	var r probeResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("ffprobe json: %v", err)
	}
	return r
}

// streamPTS returns the sorted presentation times (ms) of one stream's
// packets.
func (r probeResult) streamPTS(t *testing.T, index int) []int64 {
	t.Helper()
	var pts []int64
	for _, p := range r.Packets {
		if p.StreamIndex != index {
			continue
		}
		f, err := strconv.ParseFloat(p.PtsTime, 64)
		if err != nil {
			t.Fatalf("packet pts %q: %v", p.PtsTime, err)
		}
		pts = append(pts, int64(f*1000+0.5))
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i] < pts[j] })
	return pts
}

type mkvmergeInfo struct {
	Container struct {
		Recognized bool `json:"recognized"`
		Supported  bool `json:"supported"`
		Type       string
		Properties struct {
			Duration int64 `json:"duration"`
		} `json:"properties"`
	} `json:"container"`
	Errors   []string `json:"errors"`
	Warnings []string `json:"warnings"`
	Tracks   []struct {
		Codec      string `json:"codec"`
		Type       string `json:"type"`
		Properties struct {
			CodecID string `json:"codec_id"`
		} `json:"properties"`
	} `json:"tracks"`
}

// mkvmergeClean runs mkvmerge -J and fails on errors or warnings.
func mkvmergeClean(t *testing.T, path string) mkvmergeInfo {
	t.Helper()
	out, _ := run(t, "mkvmerge", "-J", path)
	var m mkvmergeInfo
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("mkvmerge json: %v\n%s", err, out)
	}
	if !m.Container.Recognized || !m.Container.Supported {
		t.Errorf("mkvmerge does not recognise %s: %s", filepath.Base(path), out)
	}
	if len(m.Errors) > 0 || len(m.Warnings) > 0 {
		t.Errorf("mkvmerge on %s: errors %q warnings %q", filepath.Base(path), m.Errors, m.Warnings)
	}
	return m
}

// input is one track fed to the writer in a test.
type input struct {
	track  mux.Track
	frames []moqexport.SampleFrame
	dur    int64 // µs, first frame to one frame past the last
}

func sampleInput(t testing.TB, name string, id int) input {
	t.Helper()
	s, err := moqexport.LoadSample(name)
	if err != nil {
		t.Fatal(err)
	}
	kind := mux.Video
	if s.Kind == "audio" {
		kind = mux.Audio
	}
	return input{
		track: mux.Track{ID: id, Name: name, Kind: kind, Codec: s.Codec, Description: s.Description,
			Width: s.Width, Height: s.Height, Framerate: s.Framerate, SampleRate: s.SampleRate, Channels: s.Channels},
		frames: s.Frames,
		dur:    s.Duration(),
	}
}

// interleave merges the inputs as the engine delivers them: decode order
// within a track, the smallest next timestamp first across tracks.
func interleave(ins ...input) []mux.Frame {
	next := make([]int, len(ins))
	var out []mux.Frame
	for {
		best := -1
		for i, in := range ins {
			if next[i] < len(in.frames) && (best < 0 || in.frames[next[i]].Timestamp < ins[best].frames[next[best]].Timestamp) {
				best = i
			}
		}
		if best < 0 {
			return out
		}
		f := ins[best].frames[next[best]]
		next[best]++
		out = append(out, mux.Frame{TrackID: ins[best].track.ID, Timestamp: f.Timestamp, Keyframe: f.Keyframe, Payload: f.Payload})
	}
}

// muxFile writes the inputs to dir/name through a Writer over an *os.File
// (the seekable form) and returns the path.
func muxFile(t *testing.T, name string, opts Options, ins ...input) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := NewWriter(f, opts)
	if !w.Seekable() {
		t.Fatal("a regular file must give the seekable form")
	}
	feed(t, w, ins...)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func feed(t testing.TB, w *Writer, ins ...input) {
	t.Helper()
	for _, in := range ins {
		if err := w.AddTrack(in.track); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range interleave(ins...) {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
}

// expectedPTS returns the sorted millisecond times the writer must produce
// for in (rebased on origin µs, rounded to the nearest ms).
func expectedPTS(in input, origin int64) []int64 {
	var pts []int64
	for _, f := range in.frames {
		pts = append(pts, (f.Timestamp-origin+500)/1000)
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i] < pts[j] })
	return pts
}

// nonSeeker hides every method but Write.
type nonSeeker struct{ w io.Writer }

func (n nonSeeker) Write(p []byte) (int, error) { return n.w.Write(p) }

// seekBuffer is an in-memory io.WriteSeeker.
type seekBuffer struct {
	b   []byte
	off int64
}

func (s *seekBuffer) Write(p []byte) (int, error) {
	if need := int(s.off) + len(p); need > len(s.b) {
		s.b = append(s.b, make([]byte, need-len(s.b))...)
	}
	copy(s.b[s.off:], p)
	s.off += int64(len(p))
	return len(p), nil
}

func (s *seekBuffer) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += s.off
	case io.SeekEnd:
		off += int64(len(s.b))
	}
	if off < 0 {
		return 0, errors.New("negative seek")
	}
	s.off = off
	return off, nil
}

type moqFrame = moqexport.SampleFrame
