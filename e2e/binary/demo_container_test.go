package binary

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
)

// samePackets compares two ffprobe packet lists (stream,pts,dts,flags,size
// lines), stream by stream: everything equal, but times may differ by one tick of the
// container's time base. The demo's samples hold microseconds rounded from
// the media's own clock; in CMAF, audio is at its sample rate, which puts
// back the exact sample boundary, a microsecond away.
func samePackets(a, b string) error {
	// Per stream, in file order: how the streams interleave depends on
	// when frames arrived, in the legacy demo too.
	lines := func(s string) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
		slices.SortStableFunc(out, func(x, y string) int {
			sx, _, _ := strings.Cut(x, ",")
			sy, _, _ := strings.Cut(y, ",")
			return strings.Compare(sx, sy)
		})
		return out
	}
	la, lb := lines(a), lines(b)
	if len(la) > 0 && len(lb) > 0 && la[0] != lb[0] {
		// The recorders joined the live demo at different keyframes (a
		// join is at the latest one, and a loaded machine can take more
		// than a GOP to subscribe): not the same window of the media.
		return errOtherWindow
	}
	if len(la) != len(lb) {
		return fmt.Errorf("%d packets, legacy %d", len(la), len(lb))
	}
	for i := range la {
		fa, fb := strings.Split(la[i], ","), strings.Split(lb[i], ",")
		if len(fa) < 5 || len(fb) < 5 || fa[0] != fb[0] || fa[3] != fb[3] || fa[4] != fb[4] {
			return fmt.Errorf("packet %d: %q, legacy %q", i, la[i], lb[i])
		}
		for _, k := range []int{1, 2} {
			x, _ := strconv.ParseInt(fa[k], 10, 64)
			y, _ := strconv.ParseInt(fb[k], 10, 64)
			if x-y > 1 || y-x > 1 {
				return fmt.Errorf("packet %d: %q, legacy %q", i, la[i], lb[i])
			}
		}
	}
	return nil
}

var errOtherWindow = errors.New("recorded from another keyframe")

// head returns the first lines of s.
func head(s string) string {
	lines := strings.SplitN(s, "\n", 12)
	return strings.Join(lines[:min(len(lines), 11)], "\n")
}

// TestDemoInCMAFAndLOCRecordsTheFramesOfTheLegacyDemo: the demo published
// in the cmaf container (as `moq import fmp4` publishes) and in loc records
// into every format with the frames, frame for frame, of the legacy demo
// (ffprobe's packets: pts, dts, flags and size), and ffmpeg decodes each
// file without a message.
func TestDemoInCMAFAndLOCRecordsTheFramesOfTheLegacyDemo(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	for _, ext := range []string{"mkv", "ts", "flv"} {
		t.Run(ext, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			frames := map[string][2]int{}
			packets := map[string]string{}
			stderr := map[string]string{}
			for _, kind := range []string{"legacy", "cmaf", "loc"} {
				file := kind + "." + ext
				// A long --delay: on a loaded machine a frame may come
				// late, and dropping it is the jitter buffer's business,
				// not the container's.
				r := cmdtest.Run(t, dir, "--demo-container", kind, "--duration", "4s", "--delay", "3s", "-o", file)
				if r.Code != 0 {
					t.Fatalf("%s: exit %d: %s", kind, r.Code, r.Stderr)
				}
				stderr[kind] = r.Stderr
				path := filepath.Join(dir, file)
				cmdtest.Decode(t, path)
				p := cmdtest.Probe(t, path)
				frames[kind] = [2]int{p.Frames(t, "h264"), p.Frames(t, "aac")}
				out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "packet=stream_index,pts,dts,size,flags", "-of", "csv=p=0", path).Output()
				if err != nil {
					t.Fatalf("ffprobe %s: %v", file, err)
				}
				packets[kind] = string(out)
			}
			for _, kind := range []string{"cmaf", "loc"} {
				err := samePackets(packets[kind], packets["legacy"])
				if errors.Is(err, errOtherWindow) {
					// Then only the counts can be compared: 4 s of media
					// from either keyframe, give or take the frame at the cut.
					t.Logf("%s: %v than legacy; comparing frame counts only", kind, err)
					for i := range 2 {
						if d := frames[kind][i] - frames["legacy"][i]; d < -1 || d > 1 {
							t.Errorf("%s: h264, aac frames %v, legacy %v", kind, frames[kind], frames["legacy"])
						}
					}
					continue
				}
				if frames[kind] != frames["legacy"] {
					t.Errorf("%s: h264, aac frames %v, legacy %v\n%s: %s\nlegacy: %s", kind, frames[kind], frames["legacy"], kind, stderr[kind], stderr["legacy"])
				}
				if err != nil {
					t.Errorf("%s packets differ from legacy's: %v\n%s\nlegacy:\n%s", kind, err, head(packets[kind]), head(packets["legacy"]))
				}
			}
			cmdtest.ExpectFrames(t, cmdtest.Probe(t, filepath.Join(dir, "cmaf."+ext)), "h264", 4)
		})
	}
}
