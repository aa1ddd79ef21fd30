package binary

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
)

// videoSpan returns the video packets of a file: their count, the first
// pts and the span from the first to the end of the last (one frame of
// 30 fps after its pts), in presentation order.
func videoSpan(t *testing.T, path string) (n int, first, span time.Duration, firstKey bool) {
	t.Helper()
	p := mediatest.Probe(t, path)
	lo, hi := time.Duration(1<<62), time.Duration(-1<<62)
	for _, s := range p.Streams {
		if s.CodecType != "video" {
			continue
		}
		pk := p.PacketsOf(s.Index)
		n = len(pk)
		for i, x := range pk {
			v, err := strconv.ParseFloat(x.PTSTime, 64)
			if err != nil {
				t.Fatalf("%s: pts_time %q", path, x.PTSTime)
			}
			d := time.Duration(v * float64(time.Second))
			lo, hi = min(lo, d), max(hi, d)
			if i == 0 {
				firstKey = x.Flags != "" && x.Flags[0] == 'K'
			}
		}
	}
	return n, lo, hi - lo + frame30, firstKey
}

const frame30 = time.Second / 30

// TestSegmentsAreEqualOnCumulativeTargets: 2 s segments over 12 s of the
// demo (a keyframe every second, whose timestamps land a microsecond
// short of whole seconds) are six files of 2 s each within one frame,
// each starting with a keyframe at 2k s of the recording, in every
// container.
func TestSegmentsAreEqualOnCumulativeTargets(t *testing.T) {
	cmdtest.NeedTools(t, "ffprobe")
	t.Parallel()
	for _, ext := range []string{"ts", "mkv", "mp4", "flv"} {
		t.Run(ext, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			r := cmdtest.Run(t, dir, "--demo-fast", "-o", "seg/{n}."+ext, "--segment", "2s", "--duration", "12s")
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			files, _ := filepath.Glob(filepath.Join(dir, "seg", "*"))
			if len(files) != 6 {
				t.Fatalf("%s: files %v, want 6", ext, files)
			}
			before := 0 // video frames in the files before: where this one starts
			for i := range 6 {
				path := filepath.Join(dir, "seg", fmt.Sprintf("%d.%s", i, ext))
				n, _, span, key := videoSpan(t, path)
				if span < 2*time.Second-frame30 || span > 2*time.Second+frame30 || n < 59 || n > 61 || !key {
					t.Errorf("%s: %d video frames over %v (first a keyframe: %v), want 2s within one frame", path, n, span, key)
				}
				if before < 60*i-1 || before > 60*i+1 {
					t.Errorf("%s starts after %d video frames of the recording, want %d (%v)", path, before, 60*i, time.Duration(i)*2*time.Second)
				}
				before += n
			}
		})
	}
}

// TestTheLastFramesOfARunMakeNoFile: 2 s segments of a 5 s run are 2, 2
// and 1 s (one GOP), never a file of a frame at the end; and the MKV of
// each has a Duration.
func TestTheLastFramesOfARunMakeNoFile(t *testing.T) {
	cmdtest.NeedTools(t, "ffprobe")
	t.Parallel()
	for _, ext := range []string{"mp4", "mkv"} {
		t.Run(ext, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			r := cmdtest.Run(t, dir, "--demo-fast", "-o", "seg/{n}."+ext, "--segment", "2s", "--duration", "5s")
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			files, _ := filepath.Glob(filepath.Join(dir, "seg", "*"))
			if len(files) != 3 {
				t.Fatalf("%s: files %v, want 3", ext, files)
			}
			for i, want := range []time.Duration{2 * time.Second, 2 * time.Second, time.Second} {
				path := filepath.Join(dir, "seg", fmt.Sprintf("%d.%s", i, ext))
				_, _, span, _ := videoSpan(t, path)
				if span < want-frame30 || span > want+frame30 {
					t.Errorf("%s: %v of video, want %v", path, span, want)
				}
				if d := cmdtest.Probe(t, path).Duration(t); d < want-frame30 {
					t.Errorf("%s: container duration %v, want about %v", path, d, want)
				}
			}
		})
	}
}
