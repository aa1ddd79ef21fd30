package mkv

import (
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
)

// streamPTS returns the sorted presentation times (ms) of one stream's
// packets.
func streamPTS(t *testing.T, r mediatest.ProbeResult, index int) []int64 {
	t.Helper()
	var pts []int64
	for _, p := range r.PacketsOf(index) {
		f, err := strconv.ParseFloat(p.PTSTime, 64)
		if err != nil {
			t.Fatalf("packet pts %q: %v", p.PTSTime, err)
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
	out, _ := mediatest.Run(t, "mkvmerge", "-J", path)
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
type input = mediatest.Input

// muxFile writes the inputs to dir/name through a Writer over an *os.File
// (the seekable form) and returns the path.
func muxFile(t *testing.T, name string, opts Options, ins ...input) string {
	t.Helper()
	f, path := mediatest.CreateFile(t, name)
	w := NewWriter(f, opts)
	if !w.Seekable() {
		t.Fatal("a regular file must give the seekable form")
	}
	mediatest.Feed(t, w, ins...)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// expectedPTS returns the sorted millisecond times the writer must produce
// for in (rebased on origin µs, rounded to the nearest ms).
func expectedPTS(in input, origin int64) []int64 {
	var pts []int64
	for _, f := range in.Frames {
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
